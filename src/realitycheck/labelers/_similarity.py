"""Shared by the labelers that threshold a similarity to a reference or a source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from realitycheck.labelers._base import Labeler
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    import pyarrow as pa

    from realitycheck.backends import CallCache
    from realitycheck.store import ResponseBatch

__all__ = [
    "TextSimilarity",
    "labels_from_similarity",
    "references_of",
    "similarity_table",
    "texts_and_references",
]

_NO_REFERENCE = "the example has no reference answer"


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
            errors.append(_NO_REFERENCE)
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
    raw: Sequence[str] | None = None,
) -> list[Label]:
    """Turn similarities (higher = closer to the truth) into labels.

    ``score`` is ``1 - similarity`` (higher = more likely hallucinated),
    ``hallucinated`` is ``similarity < threshold``, ``raw`` is ``raw[k]``
    (by default ``{name}={similarity:.4f}``) and ``category`` is ``correct``
    or ``incorrect``. A ``None`` similarity gives ``hallucinated=None`` with
    its error, which must then be non-empty.
    """
    labels = []
    for k, (response, similarity) in enumerate(zip(responses, similarities, strict=True)):
        if similarity is None:
            labels.append(owner._label(response, None, error=errors[k] or f"no {name}"))
            continue
        hallucinated = similarity < threshold
        labels.append(
            owner._label(
                response,
                hallucinated,
                score=1.0 - similarity,
                category="incorrect" if hallucinated else "correct",
                raw=f"{name}={similarity:.4f}" if raw is None else raw[k],
            )
        )
    return labels


def texts_and_references(
    batch: ResponseBatch,
) -> tuple[list[str], list[list[str]], list[str]]:
    """Return a batch's texts, each one's references and, where it has none, why.

    The columnar counterpart of :func:`references_of`, with the same errors.
    """
    texts = batch.column("text").to_pylist()
    refs = [r or [] for r in batch.example_values("references")]
    errors = ["" if r else _NO_REFERENCE for r in refs]
    return texts, refs, errors


def similarity_table(
    owner: Labeler,
    batch: ResponseBatch,
    similarity: np.ndarray | Sequence[float | None],
    errors: Sequence[str],
    *,
    threshold: float,
    name: str,
) -> pa.Table:
    """The labels :func:`labels_from_similarity` gives, as one table of the labels schema.

    ``similarity[k]`` (higher = closer to the truth; ``None`` reads as NaN) is
    read only where ``errors[k]`` is empty; elsewhere the label has no verdict
    and that error.
    """
    from realitycheck.store import label_table

    decided = np.array([not e for e in errors], dtype=bool)
    value = np.where(decided, np.asarray(similarity, dtype=np.float64), 0.0)
    hallucinated = value < threshold
    verdict = np.where(hallucinated, "incorrect", "correct")
    raw = [f"{name}={v:.4f}" if d else "" for v, d in zip(value.tolist(), decided, strict=True)]
    return label_table(
        owner.key,
        owner.spec_json,
        batch.column("response_id"),
        hallucinated=hallucinated,
        decided=decided,
        score=1.0 - value,
        category=np.where(decided, verdict, "").tolist(),
        raw=raw,
        error=[e if not d else "" for e, d in zip(errors, decided, strict=True)],
    )


@dataclass(frozen=True, kw_only=True)
class TextSimilarity(Labeler):
    """A labeler that thresholds a similarity of the response's text to its best reference.

    Subclasses declare ``threshold`` (with their own default and range), set
    ``similarity_name`` (written in ``raw``) and implement
    :meth:`text_similarities`, which reads nothing of a response but its
    text. Both paths use it: the record path (:meth:`label`) on the records'
    texts, and the label stage's columnar path (:meth:`label_batch`) on the
    batch's text and references columns, with no record per response. Both
    turn the similarities into the same labels with
    :func:`labels_from_similarity`.
    """

    threshold: float
    needs: ClassVar[frozenset[str]] = frozenset({"references"})
    similarity_name: ClassVar[str] = ""

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order."""
        refs, errors = references_of(responses, examples)
        similarities = self.text_similarities([r.text for r in responses], refs, errors)
        return labels_from_similarity(
            self,
            responses,
            similarities,
            errors,
            threshold=self.threshold,
            name=self.similarity_name,
        )

    def text_similarities(
        self, texts: Sequence[str], refs: Sequence[Sequence[str]], errors: list[str]
    ) -> list[float | None]:
        """Return each text's similarity (higher = closer), ``None`` where it has an error.

        ``errors[k]`` is non-empty where text ``k`` has no reference; the
        method sets it for a text it cannot measure (empty text).
        """
        raise NotImplementedError

    def label_batch(self, batch: ResponseBatch, *, cache: CallCache | None = None) -> pa.Table:
        """Return the labels of :meth:`label`, from the batch's columns (no record per response)."""
        texts, refs, errors = texts_and_references(batch)
        found = self.text_similarities(texts, refs, errors)
        return similarity_table(
            self, batch, found, errors, threshold=self.threshold, name=self.similarity_name
        )
