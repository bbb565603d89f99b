"""The report as a flat list of blocks, rendered to HTML and Markdown alike.

Every string in a block is plain text taken as is from the run (dataset
fields, model names, notes); the renderers escape it for their format, so no
section builder ever writes markup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Block",
    "Bullets",
    "Figure",
    "Heading",
    "Paragraph",
    "Table",
    "fmt_ci",
    "fmt_count",
    "fmt_rate",
    "fmt_value",
    "is_missing",
]


@dataclass(frozen=True)
class Heading:
    """A section heading; ``level`` 1 is the title, 2 a section, 3 and 4 below it."""

    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of plain text."""

    text: str


@dataclass(frozen=True)
class Bullets:
    """A bulleted list of plain-text items."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A table of already formatted cells.

    Attributes:
        columns: Column headers.
        rows: One tuple of cells per row, as long as ``columns``.
        align: One letter per column, ``l`` or ``r`` (numbers are right-aligned).
        caption: A line shown above the table.
        footnotes: Lines shown below the table (``[1] ...`` markers in the cells).
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: str = ""
    caption: str = ""
    footnotes: tuple[str, ...] = ()

    def alignment(self) -> str:
        """Return one alignment letter per column (left where not given)."""
        return (self.align + "l" * len(self.columns))[: len(self.columns)]


@dataclass(frozen=True)
class Figure:
    """A PNG figure: embedded in the HTML, written beside the Markdown.

    Attributes:
        stem: File name without extension, already safe for a path.
        png: The image.
        caption: Shown under the figure, and its alt text.
    """

    stem: str
    png: bytes
    caption: str


Block = Heading | Paragraph | Bullets | Table | Figure


def is_missing(value: Any) -> bool:
    """Return whether a cell value is absent (None, NaN, pandas NA)."""
    if value is None:
        return True
    try:
        return bool(math.isnan(value))
    except (TypeError, ValueError):
        return False


def fmt_value(value: Any, digits: int = 3) -> str:
    """Format a metric value (``n/a`` when undefined)."""
    if is_missing(value):
        return "n/a"
    return f"{float(value):.{digits}f}"


def fmt_ci(value: Any, low: Any, high: Any) -> str:
    """Format a value with its confidence interval: ``0.712 [0.68, 0.74]``."""
    if is_missing(value):
        return "n/a"
    if is_missing(low) or is_missing(high):
        return fmt_value(value)
    return f"{float(value):.3f} [{float(low):.2f}, {float(high):.2f}]"


def fmt_count(value: Any) -> str:
    """Format a count with thousands separators."""
    if is_missing(value):
        return "n/a"
    return f"{int(value):,}"


def fmt_rate(value: Any) -> str:
    """Format a proportion as a percentage with one decimal."""
    if is_missing(value):
        return "n/a"
    return f"{100 * float(value):.1f}%"
