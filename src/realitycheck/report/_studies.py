"""The studies part of the report: one section per study result stored in the run.

A study table is shown as the metric tables are: a PR-AUC is followed by its
base rate (``n_positive / n``, see :func:`~realitycheck.report.with_base_rate`),
written as a fraction with 3 decimals like the PR-AUC beside it; an AUROC with
an interval wholly below 0.5 (a column ``auroc`` or ``*_auroc``, or the
``value`` of an ``auroc`` row in a long table) is marked ranked the wrong way
round, with the note under the table. A table with a rank range
(``rank_low``, ``rank_high``: the leaderboard's, where overlapping intervals
leave ranks untold) shows the range in place of its strict rank (``1–3``)
and shows no other strict rank (``tied``, the reference's ``<key>_rank``);
the CSV keeps them all.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from realitycheck.analysis import wrong_way
from realitycheck.report._cells import WRONG_WAY_NOTE, has_pr_auc, metric_text, with_base_rate
from realitycheck.report._document import (
    Block,
    Bullets,
    Figure,
    Fold,
    FoldEnd,
    Heading,
    Inline,
    Link,
    Paragraph,
    Table,
)
from realitycheck.report._numbers import (
    fmt_ci,
    fmt_count,
    fmt_p,
    fmt_rank,
    fmt_rank_range,
    fmt_rate,
    fmt_rate_ci,
    fmt_value,
    header,
    is_missing,
)
from realitycheck.store import StudyResult, folder_name
from realitycheck.studies import studies

__all__ = [
    "LONG_CELL",
    "MAX_ROWS",
    "by_rank",
    "display_name",
    "format_cell",
    "has_rows",
    "slug",
    "studies_section",
    "study_frame",
    "study_anchor",
    "title_of",
]

MAX_ROWS = 60
"""Rows of a study table shown in the report; the CSV always holds all of them."""


def format_cell(value: Any, *, counts: bool = False) -> str:
    """Format one table cell: counts with separators, reals with 3 decimals, text as is.

    ``counts`` marks a column whose numbers are all whole (counts stored as
    floats because the column has gaps), shown without decimals.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if is_missing(value):
        return "n/a"
    if isinstance(value, numbers.Integral):
        return fmt_count(value)
    if isinstance(value, numbers.Real):
        x = float(value)
        if counts and x.is_integer():
            return fmt_count(x)
        if abs(x) >= 1000:
            return f"{x:,.1f}"
        return f"{x:.3g}" if abs(x) < 0.001 else f"{x:.3f}"
    return str(value)


def _whole(column: pd.Series) -> bool:
    """Whether a float column holds only whole numbers (and gaps)."""
    if not pd.api.types.is_float_dtype(column):
        return False
    values = column.dropna().to_numpy()
    return bool(values.size) and bool((values == values.round()).all())


def _numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def _is_rank(name: str) -> bool:
    return "rank" in name.split("_")


def _is_p(name: str) -> bool:
    return name in ("p", "p_value") or name.endswith(("_p", "_p_value")) or name.startswith("p_")


def _is_rate(name: str, column: pd.Series) -> bool:
    if not any(w in name for w in ("rate", "share", "fraction", "proportion")):
        return False
    values = column.dropna().to_numpy(dtype=float)
    return bool(values.size) and bool(((values >= 0) & (values <= 1)).all())


def by_rank(frame: pd.DataFrame) -> pd.DataFrame:
    """Sort a table with a ``rank`` column by rank within its groups (first appearance kept).

    The groups are the text columns before ``rank`` other than the ranked names
    (``dataset``, ``slice``, ``judge``…); a table without ``rank`` is returned as is.
    """
    if "rank" not in frame.columns or not _numeric(frame["rank"]) or frame.empty:
        return frame
    before = list(frame.columns[: list(frame.columns).index("rank")])
    groups = [c for c in before if c in _GROUPS]
    order = frame.groupby(groups, sort=False).ngroup() if groups else pd.Series(0, frame.index)
    keyed = frame.assign(_group=order.to_numpy())
    return keyed.sort_values(["_group", "rank"], kind="stable").drop(columns="_group")


_GROUPS = ("dataset", "slice", "judge", "judge_kind", "labeler", "reference", "detector", "metric")


def study_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A study table as the report shows and writes it: sorted :func:`by_rank`, base rate added.

    A table with a PR-AUC (:func:`~realitycheck.report._cells.has_pr_auc`) and its
    counts gets a ``base_rate`` column beside it (:func:`with_base_rate`); any
    other table keeps its columns.
    """
    frame = by_rank(frame)
    return with_base_rate(frame) if has_pr_auc(frame) else frame


LONG_CELL = 100
"""Text cells longer than this fold into a count (lists) or a cut with a link to the CSV."""


def _fold(text: str, csv: str) -> Inline:
    if len(text) <= LONG_CELL:
        return text
    parts = [p for p in text.split("; ") if p]
    label = f"{len(parts):,} items" if len(parts) > 1 else text[: LONG_CELL - 1] + "…"
    return (label, " (", Link("all in the CSV", csv), ")")


def _ci_columns(frame: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Map a value column to its ``(ci_low, ci_high)`` columns.

    Either ``x, ci_low, ci_high`` side by side, or ``x``, ``x_ci_low``, ``x_ci_high``.
    """
    cols = list(frame.columns)
    out: dict[str, tuple[str, str]] = {}
    for i, c in enumerate(cols):
        if not c.endswith("ci_low"):
            continue
        high = c[: -len("low")] + "high"
        prefix = c[: -len("ci_low")].rstrip("_")
        value = prefix if prefix else (cols[i - 1] if i else "")
        if high in cols and value in cols and value not in (c, high) and _numeric(frame[value]):
            out[value] = (c, high)
    return out


def _metric_of(frame: pd.DataFrame, name: str) -> Callable[[pd.Series], str] | None:
    """Return ``row -> metric`` for a column holding a metric that may be judged, else ``None``.

    An ``auroc`` or ``*_auroc`` column holds AUROCs; the ``value`` column of a
    long table holds the metric its ``metric`` column names.
    """
    if name == "auroc" or name.endswith("_auroc"):
        return lambda r: "auroc"
    if name == "value" and "metric" in frame.columns:
        return lambda r: str(r["metric"])
    return None


def _formatter(frame: pd.DataFrame, name: str, ci: tuple[str, str] | None) -> Any:
    """Return ``row -> cell`` for one shown column."""
    column = frame[name]
    tied = "tied" in frame.columns and name == "rank"
    if _numeric(column) and _is_rank(name):
        return lambda r: fmt_rank(r[name], tied=tied and r["tied"] in (True,))
    if _numeric(column) and _is_p(name):
        return lambda r: fmt_p(r[name])
    if name == "base_rate" and _numeric(column):
        return lambda r: fmt_value(r[name])  # a PR-AUC's baseline: a fraction, as the PR-AUC
    if _numeric(column) and _is_rate(name, column):
        if ci:
            return lambda r: fmt_rate_ci(r[name], r[ci[0]], r[ci[1]])
        return lambda r: fmt_rate(r[name])
    metric_of = _metric_of(frame, name)
    if ci and metric_of is not None:
        return lambda r: metric_text(metric_of(r), r[name], r[ci[0]], r[ci[1]])
    if ci:
        return lambda r: fmt_ci(r[name], r[ci[0]], r[ci[1]])
    counts = _whole(column)
    return lambda r: format_cell(r[name], counts=counts)


def _wrong_way_shown(shown: pd.DataFrame, ci: dict[str, tuple[str, str]]) -> bool:
    """Whether a shown row holds an AUROC marked ranked the wrong way round."""
    for name, (low, high) in ci.items():
        metric_of = _metric_of(shown, name)
        if metric_of is None:
            continue
        for _, r in shown.iterrows():
            if wrong_way(metric_of(r), r[name], r[low], r[high]):
                return True
    return False


RANK_RANGE = ("rank_low", "rank_high")
"""The columns of a rank range: shown as one ``rank range`` cell in place of ``rank``."""
RANK_RANGE_NOTE = (
    "Rank range: the ranks a row could take, one ranked above another only where their "
    "intervals do not overlap (1\u20133: not told apart from those ranked 1 to 3). The CSV "
    "holds the strict rank as well."
)


def _ranged(frame: pd.DataFrame) -> bool:
    return "rank" in frame.columns and set(RANK_RANGE) <= set(frame.columns)


def _table(frame: pd.DataFrame, caption: str, csv_name: str) -> Table:
    frame = study_frame(frame)
    shown = frame.head(MAX_ROWS)
    ci = _ci_columns(frame)
    hidden = {c for pair in ci.values() for c in pair}
    ranged = _ranged(frame)
    if ranged:  # no strict rank beside the range: the reference's (``<key>_rank``) neither
        hidden |= {*RANK_RANGE, "tied", *(c for c in frame.columns if str(c).endswith("_rank"))}
    names = [str(c) for c in frame.columns if c not in hidden]
    formatters = [
        (lambda r: fmt_rank_range(r["rank_low"], r["rank_high"]))
        if ranged and c == "rank"
        else _formatter(frame, c, ci.get(c))
        for c in names
    ]
    footnotes: tuple[str, ...] = (WRONG_WAY_NOTE,) if _wrong_way_shown(shown, ci) else ()
    footnotes += (RANK_RANGE_NOTE,) if ranged else ()
    if len(frame) > MAX_ROWS:
        footnotes += (f"First {MAX_ROWS} of {len(frame):,} rows; all of them in {csv_name}.",)
    rows = []
    for _, r in shown.iterrows():
        cells = [f(r) for f in formatters]
        rows.append(tuple(_fold(c, csv_name) if isinstance(c, str) else c for c in cells))
    return Table(
        columns=tuple(
            "rank range" if ranged and c == "rank" else header(c) + (" [CI]" if c in ci else "")
            for c in names
        ),
        rows=tuple(rows),
        align="".join("r" if _numeric(frame[c]) else "l" for c in names),
        caption=caption,
        footnotes=footnotes,
        csv=csv_name,
    )


def study_anchor(study: str) -> str:
    """The id of a study's heading in the report (links from the findings point at it)."""
    return "study-" + folder_name(study)


SHOWN_VALUE = 24
"""Characters of a parameter's value a display name keeps (then ``…``)."""


def _value_text(value: Any) -> str:
    """A parameter's value in a display name: lists joined with ``+``, no quotes, no escapes."""
    if isinstance(value, list | tuple):
        text = "+".join(_value_text(v) for v in value)
    elif isinstance(value, dict):
        text = ",".join(f"{k}={_value_text(v)}" for k, v in sorted(value.items()))
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_VALUE else text[: SHOWN_VALUE - 1] + "\u2026"


def display_name(result: StudyResult, results: Sequence[StudyResult] = ()) -> str:
    """The short name a reader sees for a study: its registered name (``train_noise``).

    The full key (``train_noise[datasets=…,detectors=probe+"probe[…]"]``, with
    escaped quotes where keys nest) is exact but unreadable in a heading. Where
    ``results`` hold several runs of one study, each adds the parameters whose
    values differ between them, each value cut at :data:`SHOWN_VALUE` characters
    (``leaderboard (reference=human)``), or its place among them when no
    parameter tells them apart.
    """
    name = str(result.spec.get("name") or result.study.split("[", 1)[0])
    same = [r for r in results if str(r.spec.get("name") or "") == name]
    if len(same) < 2 or result not in same:
        return name

    def params(r: StudyResult) -> dict[str, Any]:
        found = r.spec.get("params")
        return dict(found) if isinstance(found, dict) else {}

    own = params(result)
    keys = sorted({k for r in same for k in params(r)})
    differ = [k for k in keys if len({repr(params(r).get(k)) for r in same}) > 1]
    shown = [f"{k}={_value_text(own[k])}" for k in differ if k in own]
    if not shown:
        return f"{name} #{same.index(result) + 1}"
    return f"{name} ({', '.join(shown)})"


def title_of(result: StudyResult, results: Sequence[StudyResult] = ()) -> str:
    """A study's heading: its title and :func:`display_name` (``Length bias (length)``)."""
    name = display_name(result, results)
    registered = str(result.spec.get("name", ""))
    if registered in studies:
        title = studies.get(registered).title
        if title:
            return f"{title} ({name})"
    return name


def has_rows(result: StudyResult) -> bool:
    """Whether a study measured anything: a table with a row, or a figure."""
    return bool(result.figures) or any(not t.frame.empty for t in result.tables)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "study"


def studies_section(results: list[StudyResult]) -> list[Block]:
    """Return the blocks of every study: title, finding, skipped parts, tables, figures."""
    blocks: list[Block] = [Heading("Studies", 2)]
    if not results:
        blocks.append(
            Paragraph("No study has been run on this run (realitycheck study NAME --run DIR).")
        )
        return blocks
    for result in results:
        stem = folder_name(result.study)
        blocks.append(Heading(title_of(result, results), 3, anchor=study_anchor(result.study)))
        blocks.append(Paragraph(result.finding or "The study stated no finding."))
        if result.study != display_name(result, results):
            blocks.append(Paragraph(f"Study key (to run it again): {result.study}"))
        if result.skipped:
            blocks.append(Paragraph("Not run on:"))
            blocks.append(Bullets(tuple(result.skipped)))
        shown = [t for t in result.tables if not t.frame.empty]
        what = f"{len(shown)} tables, {len(result.figures)} figures"
        blocks.append(Fold(f"Show the tables and figures ({what})"))
        for t in result.tables:
            if t.frame.empty:
                blocks.append(Paragraph(f"{t.caption or t.name}: no rows."))
                continue
            blocks.append(_table(t.frame, t.caption, f"studies/{stem}/{t.name}.csv"))
        for f in result.figures:
            blocks.append(Figure(stem=f"study_{stem}_{slug(f.stem)}", png=f.png, caption=f.caption))
        blocks.append(FoldEnd())
    return blocks
