"""Render the report blocks as GitHub-flavoured Markdown, figures as PNG files beside it.

Text is escaped for Markdown tables (``|``) and for renderers that pass raw
HTML through (``<``, ``>``, ``&``), and newlines inside a cell become spaces.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from realitycheck.report._document import Block, Bullets, Figure, Heading, Paragraph, Table

__all__ = ["escape_md", "render_markdown"]

_SPECIAL = re.compile(r"([\\`*|])")


def escape_md(text: str) -> str:
    """Return ``text`` on one line, safe inside a Markdown paragraph or table cell."""
    one_line = " ".join(str(text).split())
    return _SPECIAL.sub(r"\\\1", html.escape(one_line, quote=False))


def _table(t: Table) -> list[str]:
    align = t.alignment()
    lines = []
    if t.caption:
        lines += [f"*{escape_md(t.caption)}*", ""]
    lines.append("| " + " | ".join(escape_md(c) or " " for c in t.columns) + " |")
    lines.append("|" + "|".join("---:" if a == "r" else "---" for a in align) + "|")
    for row in t.rows:
        lines.append("| " + " | ".join(escape_md(c) for c in row) + " |")
    if t.footnotes:
        lines.append("")
        lines += [f"{escape_md(f)}  " for f in t.footnotes]
    return lines + [""]


def render_markdown(blocks: Sequence[Block], figure_dir: str) -> str:
    """Return the Markdown document; figures are linked as ``figure_dir/<stem>.png``."""
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            lines += ["#" * min(max(b.level, 1), 6) + " " + escape_md(b.text), ""]
        elif isinstance(b, Paragraph):
            lines += [escape_md(b.text), ""]
        elif isinstance(b, Bullets):
            lines += [f"- {escape_md(i)}" for i in b.items] + [""]
        elif isinstance(b, Table):
            lines += _table(b)
        elif isinstance(b, Figure):
            alt = escape_md(b.caption).replace("[", "\\[").replace("]", "\\]")
            lines += [f"![{alt}]({figure_dir}/{b.stem}.png)", "", f"*{escape_md(b.caption)}*", ""]
    return "\n".join(lines).rstrip() + "\n"
