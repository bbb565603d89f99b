"""Render the report blocks as GitHub-flavoured Markdown, figures as PNG files beside it.

Text from the run is data, never markup. Every ASCII punctuation character a
Markdown renderer could act on is backslash-escaped (``[x](javascript:...)``
shows as those characters, not as a link; ``<b>`` and ``&lt;`` show as typed,
so no HTML entity is written), the ``://`` and ``www.`` of bare addresses are
broken so no renderer turns them into links, control characters are shown as
``[U+XXXX]``, and newlines inside a cell become spaces. The only links are the
ones the report makes itself (figures, CSV files, its own sections, whose
targets are written as ``<a id="...">`` before their headings).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote

from realitycheck.report._document import (
    Block,
    Bullets,
    Figure,
    Heading,
    Inline,
    Link,
    Paragraph,
    Table,
)
from realitycheck.report._html import anchor_of

__all__ = ["escape_md", "render_markdown"]

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#!|~$&^])")
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*):(?=//)|\b(www)\.")


def escape_md(text: str) -> str:
    """Return ``text`` on one line, inert inside a Markdown paragraph or table cell."""
    one_line = " ".join(_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", str(text)).split())
    escaped = _SPECIAL.sub(r"\\\1", one_line)
    escaped = _SCHEME.sub(lambda m: f"{m.group(1)}\\:" if m.group(1) else "www\\.", escaped)
    if re.match(r"[-+](\s|$)", escaped) or re.fullmatch(r"[-=]+", escaped):
        escaped = "\\" + escaped  # a list item ("- x"), or a rule or underline ("---")
    return re.sub(r"^(\d+)([.)])(?=\s|$)", r"\1\\\2", escaped)  # a numbered item ("1. x")


def _target(href: str) -> str:
    return quote(href, safe="/#._-=~")


def _inline(value: Inline) -> str:
    if isinstance(value, str):
        return escape_md(value)
    if isinstance(value, Link):
        return f"[{escape_md(value.text)}]({_target(value.href)})"
    parts = []
    for v in value:  # the spaces between the pieces of a run are kept
        text = _inline(v)
        if isinstance(v, str) and text:
            text = (" " if v[:1].isspace() else "") + text + (" " if v[-1:].isspace() else "")
        parts.append(text)
    return "".join(parts)


def _table(t: Table) -> list[str]:
    align = t.alignment()
    lines = []
    if t.caption:
        lines += [f"*{escape_md(t.caption)}*", ""]
    lines.append("| " + " | ".join(escape_md(c) or " " for c in t.columns) + " |")
    lines.append("|" + "|".join("---:" if a == "r" else "---" for a in align) + "|")
    for row in t.rows:
        lines.append("| " + " | ".join(_inline(c) for c in row) + " |")
    foot = [escape_md(f) for f in t.footnotes]
    if t.csv:
        foot.append(f"CSV: [{escape_md(t.csv)}]({_target(t.csv)})")
    if foot:
        lines.append("")
        lines += [f"{f}  " for f in foot]
    return lines + [""]


def render_markdown(blocks: Sequence[Block], figure_dir: str) -> str:
    """Return the Markdown document; figures are linked as ``figure_dir/<stem>.png``.

    Folds (:class:`Fold`) are an HTML matter: their content is written as is.
    """
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            if b.anchor:  # a target of the report's own links (made of [a-z0-9-] only)
                lines += [f'<a id="{anchor_of(b.anchor, set())}"></a>', ""]
            lines += ["#" * min(max(b.level, 1), 6) + " " + escape_md(b.text), ""]
        elif isinstance(b, Paragraph):
            lines += [_inline(b.text), ""]
        elif isinstance(b, Bullets):
            lines += [f"- {_inline(i)}" for i in b.items] + [""]
        elif isinstance(b, Table):
            lines += _table(b)
        elif isinstance(b, Figure):
            path = _target(f"{figure_dir}/{b.stem}.png")
            lines += [f"![{escape_md(b.caption)}]({path})", "", f"*{escape_md(b.caption)}*", ""]
    return "\n".join(lines).rstrip() + "\n"
