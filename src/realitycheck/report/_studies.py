"""The studies part of the report: one section per study result stored in the run."""

from __future__ import annotations

import numbers
import re
from typing import Any

import pandas as pd

from realitycheck.report._document import (
    Block,
    Bullets,
    Figure,
    Heading,
    Paragraph,
    Table,
    fmt_count,
    is_missing,
)
from realitycheck.store import StudyResult, folder_name
from realitycheck.studies import studies

__all__ = ["MAX_ROWS", "format_cell", "slug", "studies_section"]

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


def _table(frame: pd.DataFrame, caption: str, csv_name: str) -> Table:
    shown = frame.head(MAX_ROWS)
    align = "".join(
        "r"
        if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
        else "l"
        for c in frame.columns
    )
    counts = [_whole(frame[c]) for c in frame.columns]
    footnotes: tuple[str, ...] = ()
    if len(frame) > MAX_ROWS:
        footnotes = (f"First {MAX_ROWS} of {len(frame):,} rows; all of them in {csv_name}.",)
    return Table(
        columns=tuple(str(c) for c in frame.columns),
        rows=tuple(
            tuple(format_cell(v, counts=c) for v, c in zip(row, counts, strict=True))
            for row in shown.itertuples(index=False)
        ),
        align=align,
        caption=caption,
        footnotes=footnotes,
    )


def _title(result: StudyResult) -> str:
    name = str(result.spec.get("name", result.study))
    if name in studies:
        title = studies.get(name).title
        if title:
            return f"{title} ({result.study})"
    return result.study


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
        blocks.append(Heading(_title(result), 3))
        blocks.append(Paragraph(result.finding or "The study stated no finding."))
        if result.skipped:
            blocks.append(Paragraph("Not run on:"))
            blocks.append(Bullets(tuple(result.skipped)))
        for t in result.tables:
            if t.frame.empty:
                blocks.append(Paragraph(f"{t.caption or t.name}: no rows."))
                continue
            blocks.append(_table(t.frame, t.caption, f"studies/{stem}/{t.name}.csv"))
        for f in result.figures:
            blocks.append(Figure(stem=f"study_{stem}_{slug(f.stem)}", png=f.png, caption=f.caption))
    return blocks
