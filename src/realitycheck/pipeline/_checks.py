"""What the evaluate stage refuses: keys that name nothing, and an empty result.

A misspelt reference (``-r humn``) or threshold key (``--threshold lenght=5``)
used to measure nothing without a word; both are errors with "did you mean"
and the keys the run holds. A run that yields no metric rows says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.keys import LabelKey

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_keys", "explain_empty"]


def _matches(key: str, have: Iterable[str]) -> bool:
    """Whether ``key`` names a stored column, or a family of them (``human``, ``recorded``)."""
    return any(h == key or LabelKey.parse(h).kind == key for h in have)


def _refuse(kind: str, option: str, key: str, have: Sequence[str]) -> InvalidInputError:
    hint = did_you_mean(key, list(have), cutoff=0.6)
    return InvalidInputError(
        f"The run holds no {kind} {key!r}.{hint} Its {kind}s: {', '.join(have) or 'none'}.",
        field=option,
    )


def check_keys(
    *,
    labelers: Sequence[str],
    detectors: Sequence[str],
    references: Sequence[str] | None,
    reference: str | None,
    measured_labelers: Sequence[str] | None,
    measured_detectors: Sequence[str] | None,
    thresholds: Iterable[str],
) -> None:
    """Raise when a reference, labeler, detector or threshold key names nothing in the run.

    Args:
        labelers: Label keys stored in the run.
        detectors: Detector keys stored in the run.
        references: The references asked for (``None``: the default).
        reference: The one reference asked for, if any.
        measured_labelers: The labelers asked for, if any.
        measured_detectors: The detectors asked for, if any.
        thresholds: Detector keys given a fixed threshold.

    Raises:
        InvalidInputError: Naming the option, the key, the closest stored key and all of them.
    """
    labels, scores = sorted(labelers), sorted(detectors)
    checks = [
        ("labeler", "references", references or (), labels),
        ("labeler", "reference", [reference] if reference else [], labels),
        ("labeler", "labelers", measured_labelers or (), labels),
        ("detector", "detectors", measured_detectors or (), scores),
        ("detector", "thresholds", thresholds, scores),
    ]
    for kind, option, keys, have in checks:
        for key in keys:
            if not _matches(key, have):
                raise _refuse(kind, option, key, have)


def explain_empty(
    labels: pd.DataFrame, scores: pd.DataFrame, per_dataset: dict[str, tuple[list[str], list[str]]]
) -> str:
    """Say why no metric row came out: per dataset, the references and detectors with values.

    Args:
        labels: Verdicts, one column per labeler (NaN = none).
        scores: Values, one column per detector (NaN = none).
        per_dataset: ``dataset -> (references with verdicts, detectors with values)``.
    """
    parts = []
    for ds, (refs, dets) in sorted(per_dataset.items()):
        parts.append(
            f"{ds}: references with verdicts: {', '.join(refs) or 'none'}; "
            f"detectors with values: {', '.join(dets) or 'none'}"
        )
    empty_labels = [c for c in labels.columns if labels[c].isna().all()]
    empty_scores = [c for c in scores.columns if scores[c].isna().all()]
    if empty_labels:
        parts.append(f"labelers whose every label is empty (None): {', '.join(empty_labels)}")
    if empty_scores:
        parts.append(f"detectors whose every value failed: {', '.join(empty_scores)}")
    return (
        "The evaluation produced no metric rows. "
        + "; ".join(parts)
        + ". A metric needs a reference with verdicts and a detector with values on the "
        "same responses."
    )
