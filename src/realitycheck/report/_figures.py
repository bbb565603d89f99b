"""ROC and precision-recall figures, one pair per dataset, drawn with matplotlib's Agg canvas.

Curves are computed from the stored scores and reference labels (not from the
metrics table), on the items where both exist. A figure draws no more lines
than a reader can follow (:func:`pick`): the :data:`SHOWN` detectors with the
highest AUROC, each in its own colour-blind safe colour, and the best
response-length baseline in black dash-dot (other length variants are not
drawn); the caption lists every detector
left out with its value. The same detectors keep the same colours in the
rejection and reliability figures (:mod:`._calibration`), which use this
module's layout (:func:`curve_axes`, :func:`finish`): a fixed width that fits
the report's column, the legend beneath the axes, the height measured from
it, every name cut in the middle to the room it has (:func:`plots.fit`), so
no text runs into another or out of the figure. PNGs are drawn at twice the
layout's resolution.

Figures are built with the object-oriented API, so the caller's pyplot state
and backend are untouched, and drawn by :func:`realitycheck.studies.plots.png_bytes`:
names (untrusted) are drawn as written, maths parsing off, control and bidi
characters shown as ``[U+XXXX]``. A detector scored on a proxy model's
reading of the answers is named ``key (proxy: MODEL)`` in the legend
(:func:`figure_name`: the model's last path segment; the caption names the
whole model).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck import metrics as M
from realitycheck.report._baseline import is_baseline
from realitycheck.report._data import (
    DatasetScores,
    ReportData,
    dataset_scores,
    proxy_model,
    shown_key,
)
from realitycheck.report._document import Figure
from realitycheck.studies import plots

__all__ = [
    "PANEL_NAME",
    "SHOWN",
    "Curve",
    "CurveFigure",
    "curve_axes",
    "curves",
    "figure_name",
    "finish",
    "left_out",
    "legend_labels",
    "not_drawn",
    "pick",
    "render_pr",
    "render_roc",
    "slug",
    "styles",
]

SHOWN = 5
"""Detectors drawn in a curve figure besides the best length baseline: the best by AUROC."""
TITLE_SIZE, LABEL_SIZE, TICK_SIZE, LEGEND_SIZE = 10.5, 9.5, 9.0, 9.0
"""Font sizes in points: 12.5 to 14.5 CSS px at the figure's own size."""
_WIDTH = 4.8
_LEFT, _RIGHT, _EDGE = 0.7, 0.25, 0.1
_TOP, _AXES, _BELOW, _NOTE = 0.62, 3.1, 0.6, 0.25
"""Inches: above the axes (two title lines), the axes, under them (ticks, x label), a note."""
_FIGURE_NAME = 40
"""Characters of a proxied detector's name in a legend."""
PANEL_NAME = 30
"""Characters of a proxied detector's name over a reliability panel (two lines of 1.65 in)."""


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


def pick(
    detectors: Sequence[str], aurocs: Sequence[float], limit: int = SHOWN
) -> tuple[list[int], list[int]]:
    """Which detectors a figure draws, and which it leaves out, as positions in ``detectors``.

    Drawn: the ``limit`` with the highest AUROC (ties: the first given) that are
    not response-length baselines, and the baseline (any ``length[...]``
    variant) with the highest AUROC. Left out: the others, the other length
    variants among them. Both lists run from the highest AUROC down (NaN last).
    """

    def rank(i: int) -> tuple[bool, float, int]:
        missing = math.isnan(aurocs[i])
        return missing, 0.0 if missing else -aurocs[i], i

    ranked = sorted(range(len(detectors)), key=rank)
    chosen = [i for i in ranked if not is_baseline(detectors[i])][:limit]
    chosen += [i for i in ranked if is_baseline(detectors[i])][:1]
    return [i for i in ranked if i in chosen], [i for i in ranked if i not in chosen]


def styles(detectors: Sequence[str]) -> list[dict[str, Any]]:
    """Line styles for the detectors :func:`pick` drew, in its order.

    The first length baseline is black dash-dot; the others take
    :data:`plots.PALETTE`'s colours in turn, solid.
    """
    base = next((i for i, d in enumerate(detectors) if is_baseline(d)), None)
    out, colours = [], iter(plots.PALETTE * (1 + len(detectors) // len(plots.PALETTE)))
    for i in range(len(detectors)):
        if i == base:
            out.append({"color": plots.BASELINE_COLOUR, "linestyle": "-.", "linewidth": 1.6})
        else:
            out.append({"color": next(colours), "linestyle": "-", "linewidth": 1.6})
    return out


def legend_labels(
    names: Sequence[str], detectors: Sequence[str], values: Sequence[float]
) -> list[str]:
    """Legend labels ``name (value)``, and ``name (value, baseline)`` for :func:`styles`' baseline.

    Each name is cut in the middle to the room the legend has beneath the axes.
    """
    base = next((i for i, d in enumerate(detectors) if is_baseline(d)), None)
    suffixes = [
        f" ({v:.3f}, baseline)" if i == base else f" ({v:.3f})" for i, v in enumerate(values)
    ]
    room = (_WIDTH - 2 * _EDGE) * 72 - 4.6 * LEGEND_SIZE
    rooms = [room - plots.text_width(s, LEGEND_SIZE) for s in suffixes]
    short = [plots.fit(n, r, LEGEND_SIZE) for n, r in zip(names, rooms, strict=True)]
    if len(set(short)) < len({str(n) for n in names}):  # cut alike: cut apart, all to one room
        apart = plots.fit_labels(names, min(rooms), LEGEND_SIZE)
        short = [apart[str(n)] for n in names]
    return [n + s for n, s in zip(short, suffixes, strict=True)]


def left_out(names: Sequence[str], values: Sequence[float], metric: str) -> str:
    """The caption's sentence naming the detectors a figure left out, with ``metric``, or ``""``."""
    if not names:
        return ""
    each = "; ".join(f"{name} {value:.3f}" for name, value in zip(names, values, strict=True))
    return f" Not drawn (a lower AUROC), with their {metric}: {each}."


@dataclass(frozen=True)
class CurveFigure:
    """A figure of :func:`curve_axes`: the matplotlib figure, its axes and its title."""

    fig: Any
    ax: Any
    title: Any


def curve_axes(title: Sequence[str], xlabel: str, ylabel: str) -> CurveFigure:
    """A figure :data:`_WIDTH` inches wide with one axes :data:`_AXES` inches tall.

    ``title``: its lines (each cut to the figure's width). The axes' labels are
    cut to the axes' length; the figure's height is set by :func:`finish`.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    height = _AXES
    fig = MplFigure(figsize=(_WIDTH, _TOP + height + _BELOW), dpi=100)
    FigureCanvasAgg(fig)
    side = _WIDTH - _LEFT - _RIGHT
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlabel(plots.fit(xlabel, side * 72, LABEL_SIZE), fontsize=LABEL_SIZE)
    ax.set_ylabel(plots.fit(ylabel, height * 72, LABEL_SIZE), fontsize=LABEL_SIZE)
    ax.tick_params(labelsize=TICK_SIZE)
    ax.grid(True, linewidth=0.4, alpha=0.5)
    room = (_WIDTH - 2 * _EDGE) * 72
    lines = "\n".join(plots.fit(line, room, TITLE_SIZE) for line in title)
    title_text = fig.text(_EDGE / _WIDTH, 1.0, lines, fontsize=TITLE_SIZE, ha="left", va="top")
    return CurveFigure(fig, ax, title_text)


def finish(drawn: CurveFigure, note: str = "") -> bytes:
    """Lay out a :func:`curve_axes` figure (legend and ``note`` beneath the axes); its PNG.

    The legend is measured, not guessed, so the figure is exactly as tall as
    its parts: title, axes, tick labels and x label, legend, note.
    """
    fig, ax, height = drawn.fig, drawn.ax, _AXES
    legend = fig.legend(
        *ax.get_legend_handles_labels(),
        loc="upper left",
        fontsize=LEGEND_SIZE,
        frameon=False,
        borderaxespad=0.0,
        handlelength=2.6,
    )
    legend_h = plots.height_of(fig, legend)
    note_h = _NOTE if note else 0.0
    total = _TOP + height + _BELOW + legend_h + note_h + _EDGE
    fig.set_size_inches(_WIDTH, total)
    side = _WIDTH - _LEFT - _RIGHT
    ax.set_position((_LEFT / _WIDTH, 1 - (_TOP + height) / total, side / _WIDTH, height / total))
    legend.set_bbox_to_anchor((_EDGE / _WIDTH, 1 - (_TOP + height + _BELOW) / total))
    drawn.title.set_position((_EDGE / _WIDTH, 1 - 0.06 / total))
    if note:
        room = (_WIDTH - 2 * _EDGE) * 72
        fig.text(
            _EDGE / _WIDTH,
            (_EDGE + note_h / 2) / total,
            plots.fit(note, room, LEGEND_SIZE),
            fontsize=LEGEND_SIZE,
            color="0.35",
            va="center",
        )
    return plots.png_bytes(fig)


def not_drawn(left: int) -> str:
    """The line under a legend saying how many detectors were left out, or ``""``."""
    return f"Not drawn: {left} with a lower AUROC (see the caption)." if left else ""


def _drawn(curves_: Sequence[Curve]) -> tuple[list[Curve], list[Curve]]:
    drawn, rest = pick([c.detector for c in curves_], [c.auroc for c in curves_])
    return [curves_[i] for i in drawn], [curves_[i] for i in rest]


def _named(c: Curve) -> str:
    return c.detector if c.proxy is None else f"{c.detector} (proxy: {c.proxy})"


def _caption_tail(shown: Sequence[Curve], rest: Sequence[Curve]) -> str:
    """What the figure draws: the best by AUROC, and the baseline in black dash-dot."""
    base = [c.detector for c in shown if is_baseline(c.detector)]
    out = ""
    if rest and len(shown) - len(base) < SHOWN:  # only other length variants are left out
        out = " Drawn: every detector, and the best of the response-length baselines."
    elif rest:
        out = f" Drawn: the {SHOWN} detectors with the highest AUROC"
        out += " besides the response-length baselines, and the best of those." if base else "."
    if base:
        out += f" Black, dash-dot: the response-length baseline ({base[0]})."
    return out


def render_roc(curves_: Sequence[Curve], dataset: str, reference: str) -> Figure:
    """Draw the ROC curves of one dataset (:func:`pick`'s), with the chance diagonal."""
    shown, rest = _drawn(curves_)
    drawn = curve_axes(
        (f"ROC: {dataset}", f"against {reference} labels"),
        "false positive rate",
        "true positive rate",
    )
    ax = drawn.ax
    dets = [c.detector for c in shown]
    names = legend_labels([c.label or c.detector for c in shown], dets, [c.auroc for c in shown])
    for c, name, style in zip(shown, names, styles(dets), strict=True):
        marker = "o" if c.fpr.size <= 3 else None
        ax.plot(c.fpr, c.tpr, label=name, marker=marker, markersize=3, **style)
    ax.plot([0, 1], [0, 1], color="0.55", linewidth=0.9, linestyle="--", label="chance (0.5)")
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    caption = (
        f"ROC curves on {dataset} against {reference} labels; legend: AUROC. "
        "The dashed diagonal is a detector that ranks at random."
        + _caption_tail(shown, rest)
        + left_out([_named(c) for c in rest], [c.auroc for c in rest], "AUROC")
    ) + _proxy_note(shown)
    png = finish(drawn, not_drawn(len(rest)))
    return Figure(stem=f"roc_{slug(dataset)}", png=png, caption=caption)


def render_pr(
    curves_: Sequence[Curve], dataset: str, reference: str, positive_rate: float
) -> Figure:
    """Draw the precision-recall curves of one dataset, with the positive-rate baseline.

    The detectors drawn are those of the ROC figure (:func:`pick`, by AUROC).

    Args:
        curves_: The curves to draw.
        dataset: Dataset name, for the title.
        reference: Reference labeler, for the title.
        positive_rate: Share of hallucinated items among the labelled responses.
    """
    shown, rest = _drawn(curves_)
    drawn = curve_axes(
        (f"Precision-recall: {dataset}", f"against {reference} labels"), "recall", "precision"
    )
    ax = drawn.ax
    dets = [c.detector for c in shown]
    names = legend_labels([c.label or c.detector for c in shown], dets, [c.pr_auc for c in shown])
    for c, name, style in zip(shown, names, styles(dets), strict=True):
        ax.plot(c.recall, c.precision, label=name, drawstyle="steps-post", **style)
    ax.axhline(
        positive_rate,
        color="0.55",
        linewidth=0.9,
        linestyle="--",
        label=f"hallucinated share ({positive_rate:.3f})",
    )
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    caption = (
        f"Precision-recall curves on {dataset} against {reference} labels; legend: PR-AUC. "
        "The dashed line is the share of hallucinated responses among those labelled, "
        "the precision of a random detector."
        + _caption_tail(shown, rest)
        + left_out([_named(c) for c in rest], [c.pr_auc for c in rest], "PR-AUC")
    ) + _proxy_note(shown)
    png = finish(drawn, not_drawn(len(rest)))
    return Figure(stem=f"pr_{slug(dataset)}", png=png, caption=caption)
