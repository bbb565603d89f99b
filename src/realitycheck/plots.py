"""Render matplotlib figures to PNG bytes without touching pyplot's global state."""

from __future__ import annotations

import io
from typing import Any

__all__ = ["new_figure", "png_bytes"]


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
    every text artist, so ``$x^$`` is drawn as those characters instead of
    crashing the render (or typesetting an attacker's formula).
    """
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()
