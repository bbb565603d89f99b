"""Dot plots of per-generator rates, one marker series per judge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from realitycheck.plots import new_figure, png_bytes

__all__ = ["dot_plot"]

_MARKERS = ("s", "^", "v", "D", "P", "X", "<", ">", "p", "h", "*", "d")


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
    n_rows = len(rows)
    fig, ax = new_figure(7.5, 1.2 + 0.42 * max(n_rows, 2))
    y = np.arange(n_rows)[::-1].astype(float)
    n_series = len(series)
    step = 0.6 / max(n_series, 1)
    for k, (name, (values, low, high)) in enumerate(series.items()):
        v = np.asarray(values, float)
        err = np.vstack([v - np.asarray(low, float), np.asarray(high, float) - v])
        err = np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)
        offset = 0.3 - k * step if n_series > 1 else 0.0
        if k == 0:
            ax.errorbar(
                v,
                y + offset,
                xerr=err,
                fmt="o",
                color="black",
                ms=7,
                capsize=2,
                label=name,
                zorder=3,
            )
        else:
            ax.errorbar(
                v,
                y + offset,
                xerr=err,
                fmt=_MARKERS[(k - 1) % len(_MARKERS)],
                ms=5,
                capsize=0,
                elinewidth=0.6,
                alpha=0.85,
                label=name,
            )
    ax.set_yticks(y)
    ax.set_yticklabels(list(rows))
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return png_bytes(fig)
