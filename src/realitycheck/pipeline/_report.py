"""What a stage did, reported back to the caller."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["StageReport", "outcome_of"]


def outcome_of(record: object) -> str:
    """Return ``"failed"``, ``"missing"`` or ``"value"`` for a label or score just written.

    ``failed``: an error a retry may clear. ``missing``: no value and nothing a
    retry would change (no error, or a permanent one). A label that leaves a
    response out on purpose (a category such as ``refuse`` or ``generic``
    with ``hallucinated=None``) has a value: the decision.
    """
    if getattr(record, "error", "") and getattr(record, "retryable", False):
        return "failed"
    if hasattr(record, "hallucinated"):
        empty = record.hallucinated is None and not getattr(record, "category", "")
    else:
        empty = getattr(record, "value", None) is None
    return "missing" if empty else "value"


@dataclass(kw_only=True)
class StageReport:
    """What a stage did, per component key.

    Attributes:
        computed: Records written now (the retried ones included), with or
            without a value.
        missing: Of those, records without a value that no retry will give one
            (no error, or a permanent one: a feature the response lacks), so a
            component whose every value is missing reads "0 computed, N missing".
        failed: Of those, records with an error that may pass on a retry.
        missing_why: The first error among the missing records, per component.
        reused: Records already stored and kept.
        retried: Records written now in place of a stored error.
        skipped: Why some or all responses were left out.
        notes: Plain sentences about anything else it did (a replaced dataset).
    """

    computed: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    missing_why: dict[str, str] = field(default_factory=dict)
    reused: dict[str, int] = field(default_factory=dict)
    retried: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
