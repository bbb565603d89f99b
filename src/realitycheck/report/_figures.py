"""ROC and precision-recall figures, one pair per dataset, drawn with matplotlib's Agg canvas.

Curves are computed from the stored scores and reference labels (not from the
metrics table), on the items where both exist. Figures are built with the
object-oriented API, so the caller's pyplot state and backend are untouched,
and drawn by :func:`realitycheck.plots.png_bytes`: names (untrusted) are drawn
as written, maths parsing off, control and bidi characters shown as
``[U+XXXX]``. A detector scored on a proxy model's reading of the answers is
named ``key (proxy: MODEL)`` in the legend (:func:`figure_name`: the model's
last path segment; the caption names the whole model).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck import metrics as M
from realitycheck import plots
from realitycheck.report._data import (
    DatasetScores,
    ReportData,
    dataset_scores,
    proxy_model,
    shown_key,
)
from realitycheck.report._document import Figure

__all__ = ["PANEL_NAME", "Curve", "curves", "figure_name", "render_pr", "render_roc", "slug"]

_MAX_NAME = 48
_FIGURE_NAME = 40
"""Characters of a proxied detector's name in a legend."""
PANEL_NAME = 30
"""Characters of a proxied detector's name over a reliability panel (1.75 inches wide)."""


@dataclass(frozen=True)
class Curve:
    """The ROC and PR curves of one detector against one reference labeler.

    ``label`` names it in a legend (:func:`figure_name`; empty = ``detector``);
    ``proxy`` is the proxy model whose reading it scored (``None``: none).
    """

    detector: str
    fpr: npt.NDArray[np.float64]
    tpr: npt.NDArray[np.float64]
    precision: npt.NDArray[np.float64]
    recall: npt.NDArray[np.float64]
    auroc: float
    pr_auc: float
    n: int
    n_positive: int
    label: str = ""
    proxy: str | None = None


def figure_name(data: ReportData, key: str, limit: int = _FIGURE_NAME) -> str:
    """The name of detector ``key`` in a figure: ``"perplexity (proxy: MODEL)"`` or ``key``.

    ``MODEL`` is the last segment of the proxy model's path or hub name
    (``/models/Llama-3-8B`` -> ``Llama-3-8B``); the key and the model are cut
    so that the whole name fits :data:`_FIGURE_NAME` characters and the
    ``(proxy: ...)`` mark is never cut off. The tables and captions name the
    whole model. ``limit``: characters of the name (:data:`_FIGURE_NAME`;
    narrower for the calibration figures' small panels).
    """
    model = proxy_model(data, key)
    if model is None:
        return key
    parts = [part for part in re.split(r"[/\\]", model) if part]
    shown = _cut(key, limit // 2)
    room = max(limit - len(shown) - len(" (proxy: )"), 8)
    return f"{shown} (proxy: {_cut(parts[-1] if parts else model, room)})"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slug(text: str) -> str:
    """Return ``text`` reduced to characters safe in a file name."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return out[:80] or "dataset"


def curves(
    data: ReportData,
    dataset: str,
    reference: str,
    order: Sequence[str],
    *,
    scored: DatasetScores | None = None,
) -> tuple[list[Curve], list[str]]:
    """Return the curves of every detector scored on ``dataset``, and notes on any left out.

    Args:
        data: The run.
        dataset: Dataset name.
        reference: Labeler whose verdicts are the ground truth.
        order: Detectors in the order they should be drawn; others follow, sorted.
        scored: :func:`dataset_scores` of these arguments, when the caller has it.
    """
    _, y_all, by_detector = scored or dataset_scores(data, dataset, reference, order)
    out: list[Curve] = []
    notes: list[str] = []
    for det, values in by_detector.items():
        infinite = int(np.count_nonzero(np.isinf(values)))
        shown = shown_key(data, det)
        if infinite:
            notes.append(f"{shown}: {infinite} infinite scores left out of the curves.")
        ok = ~np.isnan(y_all) & np.isfinite(values)
        y, s = y_all[ok].astype(bool), values[ok]
        if y.size == 0 or y.all() or not y.any():
            notes.append(
                f"{shown}: no curve, the items with both a score and a {reference} label "
                f"({y.size}) do not hold both classes."
            )
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", M.UndefinedMetricWarning)
            fpr, tpr, _ = M.roc_curve(y, s)
            precision, recall, _ = M.precision_recall_curve(y, s)
            area_roc, area_pr = M.auroc(y, s), M.pr_auc(y, s)
        out.append(
            Curve(
                detector=det,
                fpr=fpr,
                tpr=tpr,
                precision=precision,
                recall=recall,
                auroc=float(area_roc),
                pr_auc=float(area_pr),
                n=int(y.size),
                n_positive=int(y.sum()),
                label=figure_name(data, det),
                proxy=proxy_model(data, det),
            )
        )
    return out, notes


def _plain(text: str) -> str:
    """A name cut to :data:`_MAX_NAME` characters (drawn as written by :func:`_png`)."""
    return _cut(text, _MAX_NAME)


def _png(fig: Any) -> bytes:
    """The figure as PNG bytes, every text drawn as written (:func:`plots.png_bytes`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    return plots.png_bytes(fig)


def _proxy_note(curves_: Sequence[Curve]) -> str:
    """The caption's sentence on the detectors that scored a proxy model's reading, or ``""``."""
    read = {c.detector: c.proxy for c in curves_ if c.proxy is not None}
    if not read:
        return ""
    each = "; ".join(f"{det} by {model}" for det, model in read.items())
    return (
        " Marked (proxy: ...): scored on a proxy model's reading of answers it did not "
        f"generate, not the generator's own uncertainty ({each})."
    )


def _axes(title: str, xlabel: str, ylabel: str) -> tuple[Any, Any]:
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(4.2, 3.6), dpi=100)
    ax = fig.add_subplot()
    ax.set_title(_plain(title), fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_aspect("equal")
    ax.tick_params(labelsize=7)
    ax.grid(True, linewidth=0.4, alpha=0.5)
    return fig, ax


def _style(i: int, count: int) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if count <= 10 else "tab20"]
    return {
        "color": cmap(i % cmap.N),
        "linestyle": ("-", "--", ":", "-.")[(i // cmap.N) % 4],
        "linewidth": 1.2,
    }


def _finish(fig: Any, ax: Any) -> bytes:
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    return _png(fig)


def render_roc(curves_: Sequence[Curve], dataset: str, reference: str) -> Figure:
    """Draw the ROC curves of one dataset, with the chance diagonal."""
    fig, ax = _axes(f"ROC: {dataset} (vs {reference})", "false positive rate", "true positive rate")
    for i, c in enumerate(curves_):
        marker = "o" if c.fpr.size <= 3 else None
        ax.plot(
            c.fpr,
            c.tpr,
            label=f"{_plain(c.label or c.detector)} ({c.auroc:.3f})",
            marker=marker,
            markersize=3,
            **_style(i, len(curves_)),
        )
    ax.plot([0, 1], [0, 1], color="0.5", linewidth=0.8, linestyle="--", label="chance (0.5)")
    caption = (
        f"ROC curves on {dataset} against {reference} labels; legend: AUROC. "
        "The dashed diagonal is a detector that ranks at random."
    ) + _proxy_note(curves_)
    return Figure(stem=f"roc_{slug(dataset)}", png=_finish(fig, ax), caption=caption)


def render_pr(
    curves_: Sequence[Curve], dataset: str, reference: str, positive_rate: float
) -> Figure:
    """Draw the precision-recall curves of one dataset, with the positive-rate baseline.

    Args:
        curves_: The curves to draw.
        dataset: Dataset name, for the title.
        reference: Reference labeler, for the title.
        positive_rate: Share of hallucinated items among the labelled responses.
    """
    fig, ax = _axes(f"Precision-recall: {dataset} (vs {reference})", "recall", "precision")
    for i, c in enumerate(curves_):
        ax.plot(
            c.recall,
            c.precision,
            label=f"{_plain(c.label or c.detector)} ({c.pr_auc:.3f})",
            drawstyle="steps-post",
            **_style(i, len(curves_)),
        )
    ax.axhline(
        positive_rate,
        color="0.5",
        linewidth=0.8,
        linestyle="--",
        label=f"hallucinated share ({positive_rate:.3f})",
    )
    caption = (
        f"Precision-recall curves on {dataset} against {reference} labels; legend: PR-AUC. "
        "The dashed line is the share of hallucinated responses among those labelled, "
        "the precision of a random detector."
    ) + _proxy_note(curves_)
    return Figure(stem=f"pr_{slug(dataset)}", png=_finish(fig, ax), caption=caption)
