"""Render matplotlib figures to PNG bytes without touching pyplot's global state.

Figures carry model, dataset and component names, which are untrusted, of any
length, and not unique once shortened. Model names are shortened by
:func:`realitycheck.text.short_names` (the one rule of tables, findings and
figures); :func:`fit` and :func:`fit_labels` cut names in the middle to a
width in points (measured with the font the figure draws with), distinct
names staying distinct (:func:`fit_names` and :func:`fit_pairs` for a list of
row names); :func:`wrap` breaks a title into lines of a width.
:func:`png_bytes` draws every text as written (no maths parsing) with control
and bidirectional-override characters shown as ``[U+202E]``-style marks
(:func:`visible`), at :data:`SCALE` pixels per figure pixel, and
:func:`shown_size` reads back the size a page should show it at.

Figures are laid out at 100 px per inch for a page column of :data:`PAGE_WIDTH`
inches; lines are told apart by :data:`PALETTE` (Okabe and Ito's colour-blind
safe colours), a baseline drawn in :data:`BASELINE_COLOUR`. A study's figure
starts from :func:`new_figure` (constrained layout: no label runs into another
axes or out of the figure), takes a wrapped title (:func:`set_title`) and
puts its legend beneath the axes (:func:`legend_below`), never beside them;
:func:`heatmap` lays out a grid of named rows and columns the same way.
"""

from __future__ import annotations

import functools
import io
import re
import struct
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "BASELINE_COLOUR",
    "ELLIPSIS",
    "NAME_WIDTH",
    "PAGE_WIDTH",
    "PALETTE",
    "SCALE",
    "TEXT_SIZE",
    "TITLE_SIZE",
    "fit",
    "fit_labels",
    "fit_names",
    "fit_pairs",
    "heatmap",
    "height_of",
    "inert",
    "legend_below",
    "new_figure",
    "png_bytes",
    "set_title",
    "shown_size",
    "text_width",
    "visible",
    "wrap",
]

SCALE = 2
"""Pixels of a saved PNG per figure pixel (100 per inch): sharp on high-density screens."""
PAGE_WIDTH = 5.6
"""Inches (at 100 px each) of the widest figure the report's column shows at its own size."""
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
"""Okabe and Ito's colour-blind safe qualitative colours, yellow left out (too pale on white)."""
BASELINE_COLOUR = "#000000"
"""The colour of a baseline drawn among :data:`PALETTE`'s lines."""
ELLIPSIS = "…"
"""Where :func:`fit` cut a name."""
TITLE_SIZE = 10.0
"""Points of a figure's title (:func:`set_title`)."""
TEXT_SIZE = 9.0
"""Points of tick labels and legends: 12.5 CSS px at the figure's own size."""
NAME_WIDTH = 2.4
"""Inches of a name beside an axes (a row's tick label): :func:`fit_names` cuts to it."""
_EDGE = 0.1
"""Inches of margin beside a title or legend."""
_PAD = 4 / 72
"""Inches between the parts of a :func:`new_figure` (its layout's padding)."""
_FAST = {"compress_level": 1}
_HINTING = 1.08

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def visible(text: str) -> str:
    """Return ``text`` with every control or bidi-formatting character shown as ``[U+XXXX]``.

    A right-to-left override (``abc`` U+202E ``gnp.exe``) would otherwise reorder
    what follows it, and a NUL or escape character would draw as nothing or
    as a box. Line breaks and tabs are kept.
    """
    return "".join(
        f"[U+{ord(ch):04X}]"
        if ch in _BIDI or (unicodedata.category(ch) == "Cc" and ch not in "\n\t")
        else ch
        for ch in text
    )


@functools.cache
def _advance(ch: str) -> float:
    """Width of ``ch`` at 1 pt in matplotlib's default font; a glyph the font lacks counts 1 em."""
    from matplotlib.font_manager import FontProperties, findfont, get_font

    font = get_font(findfont(FontProperties()))
    font.set_size(100, 72)
    if font.get_char_index(ord(ch)) == 0:
        return 1.0
    glyph = font.load_char(ord(ch))  # its linear advance is the unhinted one, whatever the flags
    return float(glyph.linearHoriAdvance) / 65536 / 100


def text_width(text: str, size: float) -> float:
    """Width in points of one line of ``text`` at ``size`` points (maths off), rounded up.

    The sum of the glyphs' advances, plus :data:`_HINTING`: drawn at 100 dpi,
    hinted glyphs come out up to 6 % wider than their advances.
    """
    return _HINTING * size * sum(_advance(ch) for ch in text)


def fit(text: Any, points: float, size: float) -> str:
    """Return :func:`visible` ``text`` cut in the middle (``head…tail``) to ``points`` wide.

    The head keeps about three fifths of what fits, the tail the rest, so names
    that differ at their end (``length[unit=chars]``, ``length[unit=tokens]``)
    stay apart. Line breaks become spaces.
    """
    shown = visible(str(text)).replace("\n", " ").replace("\t", " ")
    if text_width(shown, size) <= points:
        return shown

    def cut(k: int) -> str:
        head = (3 * k + 4) // 5
        return shown[:head] + ELLIPSIS + (shown[len(shown) - (k - head) :] if k > head else "")

    low, high = 0, len(shown) - 1  # cut(low) is taken to fit; cut(high + 1) is the whole text
    while low < high:
        mid = (low + high + 1) // 2
        if text_width(cut(mid), size) <= points:
            low = mid
        else:
            high = mid - 1
    return cut(low)


def fit_labels(names: Iterable[Any], points: float, size: float) -> dict[str, str]:
    """Map each distinct name (as ``str``) to :func:`fit` of it, distinct names to distinct labels.

    Names whose cut labels coincide are cut again a little shorter and numbered
    (``…#1``, ``…#2``) in the order given.
    """
    distinct = list(dict.fromkeys(str(n) for n in names))
    out = {name: fit(name, points, size) for name in distinct}
    groups: dict[str, list[str]] = {}
    for name in distinct:
        groups.setdefault(out[name], []).append(name)
    for same in groups.values():
        if len(same) > 1:
            for k, name in enumerate(same, 1):
                mark = f" #{k}"
                out[name] = fit(name, points - text_width(mark, size), size) + mark
    return out


def fit_names(
    labels: Iterable[Any], inches: float = NAME_WIDTH, size: float = TEXT_SIZE
) -> list[str]:
    """``labels`` in order, each cut to ``inches`` wide by :func:`fit_labels` (distinct stay so)."""
    labels = list(labels)
    cut = fit_labels(labels, inches * 72, size)
    return [cut[str(label)] for label in labels]


def fit_pairs(
    pairs: Iterable[tuple[Any, Any]],
    inches: float = NAME_WIDTH,
    size: float = TEXT_SIZE,
    sep: str = " / ",
) -> list[str]:
    """``first / second`` for each pair, the first cut to two fifths of the room, then all fitted.

    A long dataset name in ``dataset / labeler`` leaves the labeler in view.
    """
    pairs = list(pairs)
    firsts = fit_labels([a for a, _ in pairs], 0.4 * inches * 72, size)
    return fit_names([firsts[str(a)] + sep + str(b) for a, b in pairs], inches, size)


def wrap(text: Any, points: float, size: float, lines: int = 2, breaks: str = "") -> str:
    """Break :func:`visible` ``text`` into at most ``lines`` lines of ``points`` wide.

    Lines break at spaces, and after any character of ``breaks`` (``":/[,"``
    lets a component key break at its parts), never inside a ``[U+XXXX]``
    mark. A piece too long for a line, and what would not fit in the last
    line, is cut in the middle by :func:`fit`.
    """
    pieces: list[tuple[str, str]] = []  # (what joins it to the piece before, the piece)
    after = f"(?<=[{re.escape(breaks)}])" if breaks else None
    for word in re.split(r"[ \t\n]+", str(text).strip(" \t\n")):
        parts = [p for p in re.split(after, word) if p] if after else [word]
        pieces += [(" " if k == 0 else "", visible(part)) for k, part in enumerate(parts)]
    out: list[str] = []
    while pieces and len(out) < lines - 1:
        line = pieces.pop(0)[1]
        while pieces and text_width(line + "".join(pieces[0]), size) <= points:
            line += "".join(pieces.pop(0))
        out.append(fit(line, points, size))
    if pieces:
        out.append(
            fit("".join(pieces[0][1:]) + "".join("".join(p) for p in pieces[1:]), points, size)
        )
    return "\n".join(out)


def new_figure(
    width: float = PAGE_WIDTH, height: float = 4.0, *, rows: int = 1, cols: int = 1
) -> tuple[Any, Any]:
    """Return ``(figure, axes)`` on an Agg canvas (no pyplot, no display needed).

    The figure is laid out by matplotlib's constrained layout: tick labels,
    axis labels, titles, colour bars and a :func:`legend_below` get their room,
    none runs into another axes or out of the figure. ``axes`` is one Axes, or
    an array of ``rows`` x ``cols`` (squeezed) when either is above 1. Tick
    labels are :data:`TEXT_SIZE` points.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    layout = ConstrainedLayoutEngine(w_pad=_PAD, h_pad=_PAD)
    fig = Figure(figsize=(width, height), dpi=100, layout=layout)
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=True)
    for ax in fig.axes:
        ax.tick_params(labelsize=TEXT_SIZE)
    return fig, axes


def set_title(fig: Any, text: Any, *, lines: int = 2) -> None:
    """Give ``fig`` the title ``text``, wrapped into ``lines`` lines of the figure's width."""
    room = (fig.get_figwidth() - 2 * _EDGE) * 72
    fig.suptitle(
        wrap(text, room, TITLE_SIZE, lines=lines),
        fontsize=TITLE_SIZE,
        x=_EDGE / fig.get_figwidth(),
        ha="left",
    )


def legend_below(
    fig: Any,
    handles: Sequence[Any],
    labels: Sequence[Any],
    *,
    cols: int = 1,
    heading: str = "",
) -> Any:
    """Put a legend beneath everything else in ``fig``; the figure grows by its height.

    Each label is cut in the middle to the width of its column (distinct
    labels staying distinct, :func:`fit_labels`), so the legend is never wider
    than the figure, and the axes keep their height. Needs a figure of
    :func:`new_figure` (constrained layout). Returns the legend.
    """
    room = (fig.get_figwidth() - 2 * _EDGE) * 72 / cols - 4.6 * TEXT_SIZE
    shown = fit_labels(labels, room, TEXT_SIZE)
    legend = fig.legend(
        handles,
        [shown[str(label)] for label in labels],
        loc="outside lower left",
        ncols=cols,
        fontsize=TEXT_SIZE,
        frameon=False,
        title=fit(heading, room, TEXT_SIZE) if heading else None,
        title_fontsize=TEXT_SIZE,
        alignment="left",
    )
    fig.set_figheight(fig.get_figheight() + height_of(fig, legend) + _PAD)
    return legend


def heatmap(
    values: Any,
    rows: Sequence[Any],
    cols: Sequence[Any],
    *,
    heading: str,
    cells: Any = None,
    colorbar: str = "",
    **imshow: Any,
) -> Any:
    """A :data:`PAGE_WIDTH` figure of ``values`` (``rows`` x ``cols``) with its names cut to fit.

    Row names sit left of the grid, cut in the middle to :data:`NAME_WIDTH`;
    column names sit beneath it, turned upright and cut to four fifths of
    that. With more columns than upright names fit, the columns are numbered
    in the order given, and a key beneath names each number (or, when the
    rows are the columns, the rows carry the numbers). ``cells`` (strings,
    ``rows`` x ``cols``) are written in the cells when the widest fits a cell,
    at :data:`TEXT_SIZE` - 1 points. A ``colorbar`` label adds a colour bar
    beneath. ``imshow`` goes to ``Axes.imshow`` (``cmap``, ``vmin``,
    ``vmax``). Put the longer list on the rows: the figure grows in height,
    not in width. Returns the figure.
    """
    import numpy as np
    from matplotlib.lines import Line2D

    n_rows, n_cols = len(rows), len(cols)
    col_w = min(0.45, (PAGE_WIDTH - NAME_WIDTH - 0.3) / max(n_cols, 1))
    row_h = 0.24
    upright = col_w * 72 >= TEXT_SIZE * 1.5
    same = [str(r) for r in rows] == [str(c) for c in cols]
    below = NAME_WIDTH * 0.8 if upright else 0.25
    bar = 0.55 if colorbar else 0.0
    fig, ax = new_figure(PAGE_WIDTH, 0.6 + n_rows * row_h + below + bar)
    ax.imshow(values, aspect="auto", **imshow)
    numbered = [f"{k + 1} {r}" for k, r in enumerate(rows)] if same and not upright else rows
    ax.set_yticks(range(n_rows), fit_names(numbered))
    if upright:
        ax.set_xticks(range(n_cols), fit_names(cols, NAME_WIDTH * 0.8), rotation=90)
    else:
        step = max(1, int(np.ceil(TEXT_SIZE * 2.2 / (col_w * 72))))
        ax.set_xticks(range(0, n_cols, step), [str(k + 1) for k in range(0, n_cols, step)])
    if cells is not None:
        size = TEXT_SIZE - 1
        texts = [[str(c) for c in row] for row in cells]
        widest = max((text_width(t, size) for row in texts for t in row), default=0.0)
        if widest + 2 <= col_w * 72 and size * 1.3 <= row_h * 72:
            for i, row in enumerate(texts):
                for j, text in enumerate(row):
                    if text:
                        ax.text(j, i, text, ha="center", va="center", fontsize=size)
    if colorbar:
        fig.colorbar(
            ax.images[0], ax=ax, orientation="horizontal", shrink=0.6, aspect=30, pad=0.02
        ).set_label(colorbar, fontsize=TEXT_SIZE)
    set_title(fig, heading)
    if not upright and not same:  # the key to the numbered columns
        blank = [Line2D([], [], linestyle="none") for _ in cols]
        key = [f"{k + 1} {c}" for k, c in enumerate(cols)]
        legend_below(fig, blank, key, cols=2, heading="columns")
    return fig


def png_bytes(fig: Any, *, scale: int = SCALE) -> bytes:
    """Return the figure as PNG bytes at ``scale`` pixels per figure pixel, every text as written.

    Labels, titles, legends and tick labels carry model, dataset and component
    names, which are untrusted: matplotlib's maths parsing is turned off for
    every text artist (and for tick labels made while drawing), so ``$x^$`` is
    drawn as those characters instead of crashing the render (or typesetting
    an attacker's formula); control and bidi characters are shown by
    :func:`visible`, tick labels included. The PNG has 256 colours and records
    its resolution (``scale`` x the figure's dpi), which :func:`shown_size`
    reads back.

    The figure is drawn once and cut to what it draws, with matplotlib's
    margin around it (``savefig.pad_inches``), as ``bbox_inches="tight"``
    would; ``savefig`` with it lays the figure out in a draw of its own, then
    draws it again and writes a PNG that was read back here, 1.4-1.5 times the
    CPU time. A figure that draws outside itself still goes through
    ``savefig``, which widens the picture to hold it.
    """
    import matplotlib
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    inert(fig)
    dpi = fig.dpi * scale
    face = matplotlib.colors.to_rgba(fig.get_facecolor())
    if face[3] < 1:  # a see-through ground: savefig keeps what the cut would paint over
        return _saved_png(fig, dpi)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    shown = fig.dpi
    with matplotlib.rc_context({"text.parse_math": False}):
        fig.dpi = dpi
        try:
            canvas.draw()
            drawn = fig.get_tightbbox(canvas.get_renderer())
            pixels = np.asarray(canvas.buffer_rgba())
        finally:
            fig.dpi = shown
    width, height = fig.get_size_inches()
    slack = 1 / dpi
    if min(drawn.x0, drawn.y0) < -slack or drawn.x1 > width + slack or drawn.y1 > height + slack:
        return _saved_png(fig, dpi)
    box = drawn.padded(matplotlib.rcParams["savefig.pad_inches"])
    rows, cols = pixels.shape[:2]
    left, top = round(box.x0 * dpi), round(rows - box.y1 * dpi)
    out_w, out_h = int(box.width * dpi), int(box.height * dpi)
    image = Image.new("RGB", (out_w, out_h), tuple(round(255 * c) for c in face[:3]))
    inside = pixels[max(top, 0) : min(top + out_h, rows), max(left, 0) : min(left + out_w, cols)]
    picture = Image.fromarray(np.ascontiguousarray(inside[..., :3]))
    image.paste(picture, (max(-left, 0), max(-top, 0)))
    return _few_colours(image, dpi)


def _saved_png(fig: Any, dpi: float) -> bytes:
    """The figure through ``savefig(bbox_inches="tight")``, which holds what draws outside it."""
    import matplotlib
    from PIL import Image

    buffer = io.BytesIO()
    with matplotlib.rc_context({"text.parse_math": False}):
        fig.savefig(buffer, format="png", bbox_inches="tight", dpi=dpi, pil_kwargs=_FAST)
    return _few_colours(Image.open(buffer).convert("RGB"), dpi)


def _few_colours(image: Any, dpi: float) -> bytes:
    """``image`` as a PNG of 256 colours (a third of the bytes) that records ``dpi``."""
    from PIL import Image

    few = image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    out = io.BytesIO()
    few.save(out, format="png", dpi=(dpi, dpi))
    return out.getvalue()


def inert(fig: Any) -> None:
    """Turn maths parsing off for every text of ``fig`` and mark its control characters.

    Characters are marked by :func:`visible`; tick labels made while drawing
    go through it too. Draw the figure with ``text.parse_math`` off (as
    :func:`png_bytes` and :func:`height_of` do).
    """
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
        text.set_text(visible(text.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            _show_visible(axis)


def height_of(fig: Any, artist: Any) -> float:
    """Inches tall ``artist`` (a legend, a text) draws in ``fig``; every text made :func:`inert`.

    Measured without drawing the figure, so a layout can be set from it.
    """
    import matplotlib

    inert(fig)
    with matplotlib.rc_context({"text.parse_math": False}):
        return float(artist.get_window_extent(fig.canvas.get_renderer()).height) / fig.dpi


def shown_size(png: bytes) -> tuple[int, int]:
    """The ``(width, height)`` in CSS px to show a PNG of :func:`png_bytes` at: 100 px per inch.

    Read from the PNG's header and its ``pHYs`` resolution (a PNG without one is
    shown at its own pixel size). Raises ``ValueError`` for bytes that are not
    a PNG.
    """
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError(f"Not a PNG: it starts with {png[:16]!r}.")
    width, height = struct.unpack(">II", png[16:24])
    at = png.find(b"pHYs", 33)
    if at >= 0 and png[at + 12] == 1:  # unit: the metre
        per_metre = struct.unpack(">I", png[at + 4 : at + 8])[0]
        dpi = per_metre * 0.0254
        if dpi > 0:
            return round(width * 100 / dpi), round(height * 100 / dpi)
    return width, height


def _show_visible(axis: Any) -> None:
    """Wrap the axis's tick formatters so that the labels they make go through :func:`visible`."""
    wrapper = _visible_formatter()
    for which in (axis.major, axis.minor):
        if not isinstance(which.formatter, wrapper):
            inner = which.formatter
            which.formatter = wrapper(inner)
            which.formatter.axis = inner.axis


@functools.cache
def _visible_formatter() -> type:
    """The formatter wrapper class (made once, on first use: matplotlib is imported lazily)."""
    from matplotlib.ticker import Formatter

    class Visible(Formatter):
        """Delegates to ``inner`` and passes every label it makes through :func:`visible`."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __call__(self, x: Any, pos: Any = None) -> str:
            return visible(str(self.inner(x, pos)))

        def format_ticks(self, values: Sequence[Any]) -> list[str]:
            return [visible(str(s)) for s in self.inner.format_ticks(values)]

        def get_offset(self) -> str:
            return visible(str(self.inner.get_offset()))

        def set_locs(self, locs: Any) -> None:
            self.inner.set_locs(locs)

        def format_data(self, value: Any) -> str:
            return visible(str(self.inner.format_data(value)))

        def format_data_short(self, value: Any) -> str:
            return visible(str(self.inner.format_data_short(value)))

    return Visible
