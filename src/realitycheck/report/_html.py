"""Render the report blocks as one self-contained HTML file.

No script, no external style sheet, font or image: the CSS is inline and
figures are embedded as base64 PNG. Every piece of text is escaped with
:func:`html.escape`, so model names, notes and dataset fields show as text,
and its invisible control characters (bidirectional overrides and isolates,
NUL and the other C0/C1 controls but tab and newline) are shown as ``[U+202E]``:
a name such as ``abc<U+202E>gnp.exe`` cannot pass for ``abcexe.png``, and no
NUL byte reaches the file.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence

from realitycheck.report._document import Block, Bullets, Figure, Heading, Paragraph, Table

__all__ = ["render_html"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
  max-width: 1200px; margin: 2rem auto; padding: 0 1.5rem; line-height: 1.45; }
h1 { font-size: 1.7rem; margin-bottom: .3rem; }
h2 { font-size: 1.35rem; border-bottom: 2px solid #d0d7de; padding-bottom: .25rem;
  margin-top: 2.5rem; }
h3 { font-size: 1.1rem; margin-top: 1.8rem; }
h4 { font-size: 1rem; }
nav ul { columns: 2; font-size: .9rem; }
.table-wrap { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; font-size: .82rem; }
caption { caption-side: top; text-align: left; color: #57606a; padding: .2rem 0; }
th, td { border: 1px solid #d0d7de; padding: .22rem .5rem; vertical-align: top; }
th { background: #f6f8fa; text-align: left; }
td.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfc; }
.foot { font-size: .78rem; color: #57606a; margin: -.6rem 0 1rem; }
figure { display: inline-block; margin: .5rem 1.5rem .5rem 0; vertical-align: top;
  max-width: 560px; }
figure img { max-width: 100%; height: auto; }
figcaption { font-size: .78rem; color: #57606a; }
"""


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _e(text: str) -> str:
    shown = _CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", str(text))
    return html.escape(shown, quote=True)


def _anchor(text: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    anchor, k = base, 2
    while anchor in used:
        anchor, k = f"{base}-{k}", k + 1
    used.add(anchor)
    return anchor


def _table(t: Table) -> str:
    align = t.alignment()
    head = "".join(f"<th>{_e(c)}</th>" for c in t.columns)
    body = "\n".join(
        "<tr>"
        + "".join(
            f'<td class="r">{_e(c)}</td>' if a == "r" else f"<td>{_e(c)}</td>"
            for c, a in zip(row, align, strict=False)
        )
        + "</tr>"
        for row in t.rows
    )
    caption = f"<caption>{_e(t.caption)}</caption>" if t.caption else ""
    out = (
        f'<div class="table-wrap"><table>{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>\n{body}\n</tbody></table></div>"
    )
    if t.footnotes:
        out += '<div class="foot">' + "<br>".join(_e(f) for f in t.footnotes) + "</div>"
    return out


def _figure(f: Figure) -> str:
    data = base64.b64encode(f.png).decode("ascii")
    return (
        f'<figure><img alt="{_e(f.caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{_e(f.caption)}</figcaption></figure>"
    )


def render_html(blocks: Sequence[Block], title: str) -> str:
    """Return the whole HTML document for ``blocks``."""
    used: set[str] = set()
    parts: list[str] = []
    toc: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            level = min(max(b.level, 1), 4)
            anchor = _anchor(b.text, used)
            parts.append(f'<h{level} id="{anchor}">{_e(b.text)}</h{level}>')
            if level == 2:
                toc.append(f'<li><a href="#{anchor}">{_e(b.text)}</a></li>')
        elif isinstance(b, Paragraph):
            parts.append(f"<p>{_e(b.text)}</p>")
        elif isinstance(b, Bullets):
            parts.append("<ul>" + "".join(f"<li>{_e(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            parts.append(_table(b))
        elif isinstance(b, Figure):
            parts.append(_figure(b))
    nav = f"<nav><ul>{''.join(toc)}</ul></nav>" if toc else ""
    first_h2 = next((i for i, p in enumerate(parts) if p.startswith("<h2")), len(parts))
    body = parts[:first_h2] + [nav] + parts[first_h2:]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
