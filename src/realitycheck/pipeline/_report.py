"""What a stage did, reported back to the caller."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["StageReport"]


@dataclass(kw_only=True)
class StageReport:
    """What a stage did, per component key.

    Attributes:
        computed: Records written now (the retried ones included).
        reused: Records already stored and kept.
        retried: Records written now in place of a stored error.
        skipped: Why some or all responses were left out.
        notes: Plain sentences about anything else it did (a replaced dataset).
    """

    computed: dict[str, int] = field(default_factory=dict)
    reused: dict[str, int] = field(default_factory=dict)
    retried: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
