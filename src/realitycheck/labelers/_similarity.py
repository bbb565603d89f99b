"""Shared by the labelers that threshold a similarity to a reference or a source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from realitycheck.labelers._base import Labeler
from realitycheck.records import Example, Label, Response

__all__ = ["labels_from_similarity", "references_of"]


def references_of(
    responses: Sequence[Response], examples: Mapping[str, Example]
) -> tuple[list[tuple[str, ...]], list[str]]:
    """Return each response's references and, where it has none, why."""
    refs: list[tuple[str, ...]] = []
    errors: list[str] = []
    for response in responses:
        example = examples.get(response.example_id)
        if example is None:
            refs.append(())
            errors.append(f"example {response.example_id!r} was not given")
        elif not example.references:
            refs.append(())
            errors.append("the example has no reference answer")
        else:
            refs.append(example.references)
            errors.append("")
    return refs, errors


def labels_from_similarity(
    owner: Labeler,
    responses: Sequence[Response],
    similarities: Sequence[float | None],
    errors: Sequence[str],
    *,
    threshold: float,
    name: str,
) -> list[Label]:
    """Turn similarities (higher = closer to the truth) into labels.

    ``score`` is ``1 - similarity`` (higher = more likely hallucinated),
    ``hallucinated`` is ``similarity < threshold``, ``raw`` is
    ``{name}={similarity:.4f}`` and ``category`` is ``correct`` or
    ``incorrect``. A ``None`` similarity gives ``hallucinated=None`` with its
    error, which must then be non-empty.
    """
    labels = []
    for response, similarity, error in zip(responses, similarities, errors, strict=True):
        if similarity is None:
            labels.append(owner._label(response, None, error=error or f"no {name}"))
            continue
        hallucinated = similarity < threshold
        labels.append(
            owner._label(
                response,
                hallucinated,
                score=1.0 - similarity,
                category="incorrect" if hallucinated else "correct",
                raw=f"{name}={similarity:.4f}",
            )
        )
    return labels
