"""Metric tables' shared pieces: rows keyed by (slice, detector, labeler, metric), footnotes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import pandas as pd

from realitycheck.report._document import Table, fmt_ci, is_missing

__all__ = ["Footnotes", "Index", "MetricRow", "cell", "index_rows"]


class MetricRow(NamedTuple):
    """One row of a metric table, without its key."""

    value: float
    ci_low: float
    ci_high: float
    n: int
    n_positive: int
    n_excluded: int
    threshold: float
    note: str


Index = dict[tuple[str, str, str, str], MetricRow]


def index_rows(df: pd.DataFrame) -> Index:
    """Key the rows of a metric table by (slice, detector, labeler, metric)."""
    names = ("slice", "detector", "labeler", "metric", *MetricRow._fields)
    columns: list[list[Any]] = [df[c].tolist() for c in names]
    out: Index = {}
    for sl, det, lab, metric, v, lo, hi, n, pos, excl, t, note in zip(*columns, strict=True):
        text = "" if is_missing(note) else str(note)
        out[(sl, det, lab, metric)] = MetricRow(v, lo, hi, n, pos, excl, t, text)
    return out


def cell(index: Index, key: tuple[str, str, str, str]) -> str:
    """Return ``value [low, high]`` of a row, or an empty cell when there is none."""
    row = index.get(key)
    return "" if row is None else fmt_ci(row.value, row.ci_low, row.ci_high)


class Footnotes:
    """Number distinct notes and hand out ``[k]`` markers for table cells."""

    def __init__(self) -> None:
        self.notes: dict[str, int] = {}

    def mark(self, note: str) -> str:
        """Return the marker of ``note`` (numbered on first use), or ``""`` for no note."""
        if not note:
            return ""
        k = self.notes.setdefault(note, len(self.notes) + 1)
        return f"[{k}]"

    def table(
        self, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]], align: str, caption: str
    ) -> Table:
        """Return a table whose last column holds the markers, dropped when there is none."""
        if not self.notes:
            columns, align = columns[:-1], align[:-1]
            rows = [r[:-1] for r in rows]
        footnotes = tuple(f"[{k}] {note}" for note, k in self.notes.items())
        return Table(
            columns=columns,
            rows=tuple(rows),
            align=align,
            caption=caption,
            footnotes=footnotes,
            csv="metrics.csv",
        )
