"""The report as a flat list of blocks, rendered to HTML and Markdown alike.

Every string in a block is plain text taken as is from the run (dataset
fields, model names, notes); the renderers escape it for their format, so no
section builder ever writes markup.
"""

from __future__ import annotations

from dataclasses import dataclass

from realitycheck.report._numbers import fmt_ci, fmt_count, fmt_rate, fmt_value, is_missing

__all__ = [
    "Block",
    "Bullets",
    "Figure",
    "Fold",
    "FoldEnd",
    "Heading",
    "Inline",
    "Link",
    "Paragraph",
    "Table",
    "fmt_ci",
    "fmt_count",
    "fmt_rate",
    "fmt_value",
    "inline_text",
    "is_missing",
]


@dataclass(frozen=True)
class Link:
    """A link inside text, made by the report itself (never taken from the run).

    ``href`` is a path relative to the report (a CSV, a figure) or ``#anchor``.
    """

    text: str
    href: str


Inline = str | Link | tuple[str | Link, ...]
"""Text of a paragraph, list item or table cell: plain text, a link, or a run of both."""


def inline_text(value: Inline) -> str:
    """Return the plain text of an inline value (links reduced to their text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Link):
        return value.text
    return "".join(inline_text(v) for v in value)


@dataclass(frozen=True)
class Heading:
    """A section heading; ``level`` 1 is the title, 2 a section, 3 and 4 below it.

    ``anchor`` fixes the id links point at (``#anchor``); empty = derived from the text.
    """

    text: str
    level: int = 2
    anchor: str = ""


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of text."""

    text: Inline


@dataclass(frozen=True)
class Bullets:
    """A bulleted list."""

    items: tuple[Inline, ...]


@dataclass(frozen=True)
class Table:
    """A table of already formatted cells.

    Attributes:
        columns: Column headers.
        rows: One tuple of cells per row, as long as ``columns``.
        align: One letter per column, ``l`` or ``r`` (numbers are right-aligned).
        caption: A line shown above the table.
        footnotes: Lines shown below the table (``[1] ...`` markers in the cells).
        csv: Path of the CSV holding the whole table, relative to the report (linked).
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Inline, ...], ...]
    align: str = ""
    caption: str = ""
    footnotes: tuple[str, ...] = ()
    csv: str = ""

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


@dataclass(frozen=True)
class Fold:
    """Start of a part the HTML shows folded (``<details>``) until opened; ends at a FoldEnd.

    Markdown shows the part as is.
    """

    summary: str
    open: bool = False


@dataclass(frozen=True)
class FoldEnd:
    """End of the innermost :class:`Fold`."""


Block = Heading | Paragraph | Bullets | Table | Figure | Fold | FoldEnd
