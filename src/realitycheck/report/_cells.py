"""Metric tables' shared pieces: rows keyed by (slice, detector, labeler, metric), footnotes.

Two things are said beside a metric wherever a table shows it:

- An AUROC whose whole confidence interval lies below 0.5 is marked
  :data:`WRONG_WAY`: against those labels the score ranks the responses the
  wrong way round (higher = *less* likely hallucinated), which usually means
  its sign is wrong. An AUROC without an interval (too few items) is never
  marked. The rule is :func:`realitycheck.analysis.wrong_way`, which the
  command line warns by too.
- A PR-AUC is followed by its base rate: the share of hallucinated items among
  those it used (``n_positive / n``), which is the PR-AUC of a random score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import pandas as pd

from realitycheck.analysis import wrong_way
from realitycheck.report._document import Table, fmt_ci, fmt_value, is_missing

__all__ = [
    "BASE_RATE",
    "BASE_RATE_NOTE",
    "COUNTS",
    "WRONG_WAY",
    "WRONG_WAY_NOTE",
    "Footnotes",
    "Index",
    "MetricRow",
    "base_rate",
    "cell",
    "has_pr_auc",
    "index_rows",
    "legend",
    "metric_cells",
    "metric_columns",
    "metric_text",
    "with_base_rate",
    "wrong_way",
]

WRONG_WAY = "↓ wrong way"
"""Written after an AUROC whose whole confidence interval lies below 0.5."""
WRONG_WAY_NOTE = (
    f"{WRONG_WAY}: ranked the wrong way round. The whole confidence interval of this AUROC "
    "lies below 0.5: against these labels, a higher score means less likely hallucinated. "
    "Every score here is meant higher = more likely hallucinated; check its sign (a "
    "similarity, a confidence or a faithfulness probability must be negated) before "
    "comparing it with the others."
)
BASE_RATE = "base rate"
"""Header of the column after a PR-AUC."""
BASE_RATE_NOTE = (
    "Base rate: the share of hallucinated items among those the PR-AUC used, the PR-AUC of "
    "a random score."
)


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


def metric_text(metric: str, value: Any, ci_low: Any, ci_high: Any) -> str:
    """Return ``value [low, high]``, followed by :data:`WRONG_WAY` where :func:`wrong_way`."""
    text = fmt_ci(value, ci_low, ci_high)
    return f"{text} {WRONG_WAY}" if wrong_way(metric, value, ci_low, ci_high) else text


def base_rate(n: Any, n_positive: Any) -> float:
    """Return ``n_positive / n``, the PR-AUC of a random score (NaN when ``n`` is 0 or missing)."""
    if is_missing(n) or is_missing(n_positive) or int(n) <= 0:
        return float("nan")
    return float(n_positive) / float(n)


def cell(index: Index, key: tuple[str, str, str, str]) -> str:
    """Return ``value [low, high]`` of a row (see :func:`metric_text`), or ``""`` if none."""
    row = index.get(key)
    return "" if row is None else metric_text(key[3], row.value, row.ci_low, row.ci_high)


def metric_columns(metrics: Sequence[str], names: Sequence[str]) -> tuple[str, ...]:
    """Return the headers of :func:`metric_cells`: ``names``, :data:`BASE_RATE` after PR-AUC."""
    out: list[str] = []
    for metric, name in zip(metrics, names, strict=True):
        out.append(name)
        if metric == "pr_auc":
            out.append(BASE_RATE)
    return tuple(out)


def metric_cells(
    metrics: Sequence[str], rows: Sequence[MetricRow | None], missing: str = ""
) -> tuple[str, ...]:
    """Return one cell per metric (``missing`` where its row is absent), base rate after PR-AUC."""
    out: list[str] = []
    for metric, row in zip(metrics, rows, strict=True):
        if row is None:
            out.append(missing)
        else:
            out.append(metric_text(metric, row.value, row.ci_low, row.ci_high))
        if metric == "pr_auc":
            rate = missing if row is None else fmt_value(base_rate(row.n, row.n_positive))
            out.append(rate)
    return tuple(out)


def legend(index: Index, keys: Sequence[tuple[str, str, str, str]]) -> tuple[str, ...]:
    """Return :data:`WRONG_WAY_NOTE` if a row of ``keys`` is marked wrong way round, else ``()``."""
    for key in keys:
        row = index.get(key)
        if row is not None and wrong_way(key[3], row.value, row.ci_low, row.ci_high):
            return (WRONG_WAY_NOTE,)
    return ()


COUNTS = (("n", "n_positive"), ("n_test", "n_test_positive"))
"""The (items, hallucinated items) column pairs a base rate is read from, in order of preference.

``n_test``/``n_test_positive``: a table measured on the test split (the train-noise study).
"""


def has_pr_auc(frame: pd.DataFrame) -> bool:
    """Whether a table shows a PR-AUC: a ``pr_auc`` column, or a ``metric`` column naming one."""
    if "pr_auc" in frame.columns:
        return True
    return "metric" in frame.columns and bool((frame["metric"] == "pr_auc").any())


def with_base_rate(frame: pd.DataFrame) -> pd.DataFrame:
    """Return a table with a ``base_rate`` column (a new frame; ``frame`` is not changed).

    ``base_rate = n_positive / n`` on every row (NaN where ``n`` is 0 or missing):
    the share of hallucinated items among those the row used, which is a random
    score's PR-AUC. The counts are the first pair of :data:`COUNTS` the table has
    (``n_test_positive / n_test`` in a table measured on the test split). It comes
    after the ``pr_auc`` column and its interval in a wide table (one column per
    metric), else after the positives (the long metric table, a ``metric`` column
    naming each row's metric). A table without such a pair of counts is returned
    as is; an old ``base_rate`` column is replaced.
    """
    pair = next((p for p in COUNTS if set(p) <= set(frame.columns)), None)
    if pair is None:
        return frame
    n = pd.to_numeric(frame[pair[0]], errors="coerce")
    rate = pd.to_numeric(frame[pair[1]], errors="coerce") / n.where(n > 0)
    out = frame.drop(columns="base_rate", errors="ignore")
    columns = list(out.columns)
    after = [
        columns.index(c) for c in ("pr_auc", "pr_auc_ci_low", "pr_auc_ci_high") if c in columns
    ]
    if not after:
        at = columns.index(pair[1])
    elif len(after) == 1 and columns[after[0] + 1 : after[0] + 3] == ["ci_low", "ci_high"]:
        at = after[0] + 2  # pr_auc, ci_low, ci_high: the interval stays beside its value
    else:
        at = max(after)
    out.insert(at + 1, "base_rate", rate.astype(float))
    return out


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
        self,
        columns: tuple[str, ...],
        rows: Sequence[tuple[str, ...]],
        align: str,
        caption: str,
        lines: tuple[str, ...] = (),
    ) -> Table:
        """Return a table whose last column holds the markers, dropped when there is none.

        ``lines`` (a :func:`legend`) come below the table, before the numbered notes.
        """
        if not self.notes:
            columns, align = columns[:-1], align[:-1]
            rows = [r[:-1] for r in rows]
        footnotes = lines + tuple(f"[{k}] {note}" for note, k in self.notes.items())
        return Table(
            columns=columns,
            rows=tuple(rows),
            align=align,
            caption=caption,
            footnotes=footnotes,
            csv="metrics.csv",
        )
