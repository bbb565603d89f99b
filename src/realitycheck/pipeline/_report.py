"""What a stage did, reported back to the caller."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from realitycheck.records import INVALID

__all__ = ["StageReport", "commonest_error", "outcome_of"]

_NUMBER = re.compile(r"\d+")


def outcome_of(record: object) -> str:
    """Return ``"failed"``, ``"missing"`` or ``"value"`` for a label or score just written.

    ``failed``: no value because a call never succeeded (a backend error,
    retryable or fatal: ``failed`` or ``retryable`` is set). ``missing``: no
    value the component defines for the item (no error, or a permanent one
    such as no reference, or replies that could not be read: category
    ``invalid``). A label that leaves a response out on purpose (a category
    such as ``refuse`` or ``generic`` with ``hallucinated=None``) has a value:
    the decision.
    """
    if getattr(record, "error", "") and (
        getattr(record, "failed", False) or getattr(record, "retryable", False)
    ):
        return "failed"
    if hasattr(record, "hallucinated"):
        category = getattr(record, "category", "")
        empty = record.hallucinated is None and (not category or category == INVALID)
    else:
        empty = getattr(record, "value", None) is None
    return "missing" if empty else "value"


def commonest_error(counts: Mapping[str, int]) -> tuple[str, int] | None:
    """Return the commonest error among ``counts`` (error text: how many), with its count.

    Texts that differ only in their numbers ("request 1 of this call",
    "request 2 of this call") count as one error, shown by the first of them;
    ties go to the error seen first. ``None`` when ``counts`` is empty.
    """
    groups: dict[str, list[Any]] = {}
    for text, n in counts.items():
        group = groups.setdefault(_NUMBER.sub("#", text), [text, 0])
        group[1] += int(n)
    if not groups:
        return None
    text, n = max(groups.values(), key=lambda group: group[1])
    return str(text), int(n)


@dataclass(kw_only=True)
class StageReport:
    """What a stage did, per component key.

    Attributes:
        computed: Records written now (the retried ones included), with or
            without a value.
        missing: Of those, records without a value the component defines (no
            error, or a permanent one: a feature the response lacks, replies
            that could not be read), so a component whose every value is
            missing reads "0 computed, N missing".
        failed: Of those, records without a value because a call never
            succeeded (a backend error, retryable or fatal).
        unreadable: Of those, records with at least one reply that could not
            be read (whether or not the record got a value).
        missing_why: The first error among the missing records, per component.
        failed_before: Of the reused records, those whose call failed on an
            earlier run and were not retried (a fatal error, which only
            ``retry_errors`` recomputes).
        failures: How many failed records (``failed`` and ``failed_before``)
            had each error text, per component.
        reused: Records already stored and kept.
        retried: Records written now in place of a stored error.
        skipped: Why some or all responses were left out.
        notes: Plain sentences about anything else it did (a replaced dataset).
    """

    computed: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, int] = field(default_factory=dict)
    missing_why: dict[str, str] = field(default_factory=dict)
    failed_before: dict[str, int] = field(default_factory=dict)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    reused: dict[str, int] = field(default_factory=dict)
    retried: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def count_failures(self, key: str, texts: Mapping[str, int]) -> None:
        """Add ``texts`` (error text: how many failed records had it) to ``key``'s failures."""
        counts = self.failures.setdefault(key, {})
        for text, n in texts.items():
            counts[text] = counts.get(text, 0) + int(n)

    def commonest_failure(self, key: str) -> tuple[str, int] | None:
        """Return the commonest error among ``key``'s failed records, with its count.

        See :func:`commonest_error`; ``None`` when nothing failed.
        """
        return commonest_error(self.failures.get(key, {}))

    def n_failed(self, key: str) -> int:
        """Records of ``key`` without a value because a call failed, now or on an earlier run."""
        return self.failed.get(key, 0) + self.failed_before.get(key, 0)
