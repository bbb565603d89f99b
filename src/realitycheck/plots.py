"""Render matplotlib figures to PNG bytes without touching pyplot's global state.

Figures carry model, dataset and component names, which are untrusted and not
unique once shortened. :func:`short_labels` shortens a set of names to their
shortest unambiguous suffixes; :func:`png_bytes` draws every text as written
(no maths parsing) with control and bidirectional-override characters shown
as ``[U+202E]``-style marks (:func:`visible`).
"""

from __future__ import annotations

import functools
import io
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["new_figure", "png_bytes", "short_labels", "visible"]

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


def short_labels(names: Iterable[Any]) -> dict[str, str]:
    """Map each name to its shortest suffix of ``/``-separated segments no other name shares.

    ``meta-llama/Llama-3-8B`` alone becomes ``Llama-3-8B``; next to
    ``my-finetune/Llama-3-8B`` both keep their organisation. A name that is a
    whole suffix of another (``Llama-3-8B`` beside ``meta-llama/Llama-3-8B``)
    stays as it is and the longer one keeps enough segments to differ, so
    distinct names always get distinct labels. Names are taken as ``str``.
    """
    distinct = list(dict.fromkeys(str(n) for n in names))
    split = {n: n.split("/") for n in distinct}
    out = {}
    for name in distinct:
        segments = split[name]
        for k in range(1, len(segments) + 1):
            suffix = segments[-k:]
            if not any(split[other][-k:] == suffix for other in distinct if other != name):
                out[name] = "/".join(suffix)
                break
        else:
            out[name] = name
    return out


def new_figure(width: float = 6.0, height: float = 4.0) -> tuple[Any, Any]:
    """Return ``(figure, axes)`` on an Agg canvas (no pyplot, no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    return fig, ax


def png_bytes(fig: Any) -> bytes:
    """Return the figure as PNG bytes, every text drawn as written.

    Labels, titles, legends and tick labels carry model, dataset and component
    names, which are untrusted: matplotlib's maths parsing is turned off for
    every text artist (and for tick labels made while drawing), so ``$x^$`` is
    drawn as those characters instead of crashing the render (or typesetting
    an attacker's formula); control and bidi characters are shown by
    :func:`visible`, tick labels included.
    """
    import matplotlib
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
        text.set_text(visible(text.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            _show_visible(axis)
    buffer = io.BytesIO()
    with matplotlib.rc_context({"text.parse_math": False}):
        fig.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


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
