"""Render the report blocks as one self-contained HTML file.

No external style sheet, script, font or image: the CSS and a small script
(sorting, filtering, folding; see :mod:`._assets`) are inline and figures are
embedded as base64 PNG, each shown at its layout size (a PNG of
:func:`realitycheck.studies.plots.png_bytes` has twice its pixels) and never wider
than the page, its caption wrapping under it. Every piece of text is escaped
with :func:`html.escape`, so model names, notes and dataset fields show as
text. Its invisible control
characters (bidirectional overrides and isolates, NUL and the other C0/C1
controls but tab and newline) are shown as ``[U+202E]``: a name such as
``abc<U+202E>gnp.exe`` cannot pass for ``abcexe.png``, and no NUL byte reaches
the file. A word holding right-to-left letters is wrapped in ``<bdi>`` and
every table cell is isolated (``unicode-bidi: isolate``), so such a name
cannot reorder the numbers and punctuation around it.

Tables scroll sideways in their frame rather than squeeze a column: a text
cell longer than :data:`LONG_TEXT` characters keeps a readable width (and
breaks a long unbroken name inside it). A :class:`CardTable` (the key
findings') becomes one card per row on a narrow screen, each cell under its
header, so that nothing in it hides off to the side.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from realitycheck.report._assets import CSS, SCRIPT
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
    inline_text,
)
from realitycheck.studies.plots import shown_size

__all__ = [
    "LONG_TEXT",
    "CardTable",
    "anchor_of",
    "escape_html",
    "href",
    "inline_html",
    "page",
    "render_html",
    "table_html",
]

LONG_TEXT = 40
"""Text cells longer than this (characters) keep a readable width: class ``long``."""


@dataclass(frozen=True)
class CardTable(Table):
    """A table that a narrow screen shows as one card per row, each cell under its header.

    For the few short tables a reader must see whole on a phone (the key
    findings); Markdown renders it as any :class:`Table`.
    """


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_RTL_WORD = re.compile(r"\S*[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]\S*")


def escape_html(text: str) -> str:
    """Escape text for HTML; controls shown as ``[U+XXXX]``, right-to-left words isolated."""
    shown = html.escape(_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", str(text)))
    return _RTL_WORD.sub(lambda m: f"<bdi>{m.group()}</bdi>", shown)


_e = escape_html


def href(target: str) -> str:
    """Quote a link target the report built (relative path or ``#anchor``) for an attribute."""
    return html.escape(quote(target, safe="/#._-=~"), quote=True)


def inline_html(value: Inline) -> str:
    """Render text, a link, or a run of both."""
    if isinstance(value, str):
        return _e(value)
    if isinstance(value, Link):
        return f'<a href="{href(value.href)}">{_e(value.text)}</a>'
    return "".join(inline_html(v) for v in value)


def anchor_of(text: str, used: set[str]) -> str:
    """Return a fresh id derived from ``text`` (letters, digits and ``-`` only)."""
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    anchor, k = base, 2
    while anchor in used:
        anchor, k = f"{base}-{k}", k + 1
    used.add(anchor)
    return anchor


def _attribute(text: str) -> str:
    """Plain text for an attribute value: controls shown as ``[U+XXXX]``, quotes escaped."""
    return html.escape(_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", str(text)), quote=True)


def _cell(value: Inline, align: str, label: str) -> str:
    classes = ["r"] if align == "r" else []
    if align != "r" and len(inline_text(value)) > LONG_TEXT:
        classes.append("long")
    attrs = f' class="{" ".join(classes)}"' if classes else ""
    attrs += f' data-label="{label}"' if label else ""
    return f"<td{attrs}>{inline_html(value)}</td>"


def table_html(t: Table) -> str:
    """Render a table: sticky header, sortable by the page script, its CSV linked below."""
    align = t.alignment()
    cards = isinstance(t, CardTable)
    labels = [_attribute(c) if cards else "" for c in t.columns]
    head = "".join(f'<th scope="col">{_e(c)}</th>' for c in t.columns)
    body = "\n".join(
        "<tr>"
        + "".join(_cell(c, a, label) for c, a, label in zip(row, align, labels, strict=False))
        + "</tr>"
        for row in t.rows
    )
    caption = f'<p class="caption">{_e(t.caption)}</p>' if t.caption else ""
    kind = " cards" if cards else ""
    out = (
        f'{caption}<div class="table-wrap{kind}"><table class="data{kind}"><thead><tr>{head}'
        f"</tr></thead><tbody>\n{body}\n</tbody></table></div>"
    )
    foot = [_e(f) for f in t.footnotes]
    if t.csv:
        foot.append(f'CSV: <a href="{href(t.csv)}">{_e(t.csv)}</a>')
    if foot:
        out += '<div class="foot">' + "<br>".join(foot) + "</div>"
    return out


def _figure(f: Figure, figure_dir: str) -> str:
    """A figure at its own size (:func:`shown_size`), no wider than the page, caption included.

    The ``<img>``'s width and height keep its place while it loads and show a
    PNG drawn at twice the resolution at its layout size; the ``<figure>`` is
    at most that wide, so a long caption wraps under the image instead of
    widening it, and two figures that fit sit side by side.
    """
    data = base64.b64encode(f.png).decode("ascii")
    path = f"{figure_dir}/{f.stem}.png"
    try:
        width, height = shown_size(f.png)
    except ValueError:  # not a PNG of png_bytes: shown at the column's width at most
        box, size = "", ""
    else:
        box = f' style="max-width: min({width}px, 100%)"'
        size = f' width="{width}" height="{height}"'
    return (
        f'<figure{box}><a href="{href(path)}"><img alt="{_e(f.caption)}"{size} '
        f'src="data:image/png;base64,{data}"></a>'
        f"<figcaption>{_e(f.caption)}</figcaption></figure>"
    )


def _toc(entries: list[tuple[int, str, str]]) -> str:
    """A nested list of the level-2 and level-3 headings, folded under 'Contents'."""
    out, depth = ["<details open><summary>Contents</summary><ul>"], 2
    for i, (level, anchor, text) in enumerate(entries):
        if level > depth:
            out.append("<ul>")
        elif level < depth:
            out.append("</li></ul></li>")
        elif i:
            out.append("</li>")
        depth = level
        out.append(f'<li><a href="#{anchor}">{_e(text)}</a>')
    out.append("</li>" + ("</ul></li>" if depth == 3 else "") + "</ul></details>")
    return '<nav class="toc" aria-label="Contents">' + "".join(out) + "</nav>"


def page(title: str, body: str, nav: str = "") -> str:
    """Return a whole HTML document: inline style and script, ``nav`` beside ``body``."""
    layout = "layout" if nav else "single"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f'<div class="{layout}">{nav}<main id="top">\n{body}\n</main></div>\n'
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def render_html(blocks: Sequence[Block], title: str, figure_dir: str = "figures") -> str:
    """Return the whole HTML document for ``blocks``.

    Level-2 and level-3 headings make the table of contents; a level-2 heading
    carries a link back to the top; a :class:`Fold` becomes ``<details>``.
    """
    used: set[str] = set()
    parts: list[str] = []
    toc: list[tuple[int, str, str]] = []
    for b in blocks:
        if isinstance(b, Heading):
            level = min(max(b.level, 1), 4)
            anchor = anchor_of(b.anchor or b.text, used)
            top = '<a class="top" href="#top">back to top</a>' if level == 2 else ""
            parts.append(f'<h{level} id="{anchor}">{top}{_e(b.text)}</h{level}>')
            if level in (2, 3):
                toc.append((level, anchor, b.text))
        elif isinstance(b, Paragraph):
            parts.append(f"<p>{inline_html(b.text)}</p>")
        elif isinstance(b, Bullets):
            parts.append("<ul>" + "".join(f"<li>{inline_html(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            parts.append(table_html(b))
        elif isinstance(b, Figure):
            parts.append(_figure(b, figure_dir))
        elif isinstance(b, Fold):
            state = " open" if b.open else ""
            parts.append(f'<details class="fold"{state}><summary>{_e(b.summary)}</summary>')
        elif isinstance(b, FoldEnd):
            parts.append("</details>")
    nav = _toc(toc) if toc else ""
    return page(title, "\n".join(parts), nav)
