"""Dot plots of per-generator rates, one marker series per judge.

The figure fits the report's column (:data:`realitycheck.studies.plots.PAGE_WIDTH`
inches): the title wraps onto two lines, generator and judge names are cut in
the middle to the room they have (distinct names staying distinct), the legend
sits beneath the axes and the figure is as tall as its parts, so no text runs
into another or out of the figure however long the names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from realitycheck.studies.plots import PAGE_WIDTH, PALETTE, fit_labels, height_of, png_bytes, wrap

__all__ = ["dot_plot"]

_MARKERS = ("s", "^", "v", "D", "P", "X", "<", ">", "p", "h", "*", "d")
_TITLE_SIZE, _SIZE, _TICK_SIZE = 10.0, 9.0, 8.5
_EDGE, _NAMES, _RIGHT = 0.1, 2.1, 0.25
"""Inches: the margin, the generators' names left of the axes, right of the axes."""
_ROW, _BELOW, _LINE = 0.34, 0.62, 0.19
"""Inches: a row, under the axes (tick labels and a line of x label), a line of text."""


def dot_plot(
    rows: Sequence[str],
    series: Mapping[str, tuple[Any, Any, Any]],
    *,
    xlabel: str,
    title: str,
) -> bytes:
    """Return a PNG: one row per item, one marker series per judge, with CI bars.

    Args:
        rows: Row labels, drawn top to bottom in the given order.
        series: Judge name -> ``(values, ci_low, ci_high)`` aligned with ``rows``;
            the first series is drawn as large black dots (the reference), the
            others with small offsets so that equal values stay visible.
        xlabel: Label of the x axis.
        title: Title of the plot.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n_rows = len(rows)
    width = PAGE_WIDTH
    room = (width - 2 * _EDGE) * 72
    heading = wrap(title, room, _TITLE_SIZE, lines=2)
    top = _EDGE + _LINE * (heading.count("\n") + 1) + 0.15
    axes_h = _ROW * max(n_rows, 2)
    left = _EDGE + _NAMES + 0.1
    fig = Figure(figsize=(width, top + axes_h + _BELOW), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    y = np.arange(n_rows)[::-1].astype(float)
    n_series = len(series)
    step = 0.6 / max(n_series, 1)
    columns = 1 if n_series < 2 else 2
    judge_room = room / columns - 5.0 * _SIZE
    judges = fit_labels(series, judge_room, _SIZE)
    for k, (name, (values, low, high)) in enumerate(series.items()):
        v = np.asarray(values, float)
        err = np.vstack([v - np.asarray(low, float), np.asarray(high, float) - v])
        err = np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)
        offset = 0.3 - k * step if n_series > 1 else 0.0
        if k == 0:
            style: dict[str, Any] = {
                "fmt": "o",
                "color": "black",
                "ms": 7,
                "capsize": 2,
                "zorder": 3,
            }
        else:
            style = {
                "fmt": _MARKERS[(k - 1) % len(_MARKERS)],
                "color": PALETTE[(k - 1) % len(PALETTE)],
                "ms": 5,
                "capsize": 0,
                "elinewidth": 0.8,
                "alpha": 0.9,
            }
        ax.errorbar(v, y + offset, xerr=err, label=judges[str(name)], **style)
    names = fit_labels(rows, _NAMES * 72, _SIZE)
    ax.set_yticks(y)
    ax.set_yticklabels([names[str(r)] for r in rows], fontsize=_SIZE)
    ax.set_ylim(-0.6, n_rows - 0.4)
    ax.tick_params(axis="x", labelsize=_TICK_SIZE)
    label = wrap(xlabel, (width - left - _RIGHT) * 72, _SIZE, lines=2)
    ax.set_xlabel(label, fontsize=_SIZE)
    below = _BELOW + _LINE * label.count("\n")
    ax.grid(axis="x", alpha=0.3)
    legend = fig.legend(
        *ax.get_legend_handles_labels(),
        loc="upper left",
        ncols=columns,
        fontsize=_SIZE,
        frameon=False,
        borderaxespad=0.0,
    )
    legend_h = height_of(fig, legend)
    height = top + axes_h + below + legend_h + _EDGE
    fig.set_size_inches(width, height)
    ax.set_position(
        (
            left / width,
            1 - (top + axes_h) / height,
            (width - left - _RIGHT) / width,
            axes_h / height,
        )
    )
    legend.set_bbox_to_anchor((_EDGE / width, 1 - (top + axes_h + below) / height))
    fig.text(_EDGE / width, 1 - _EDGE / height, heading, fontsize=_TITLE_SIZE, ha="left", va="top")
    return png_bytes(fig)
