"""Selective prediction and calibration in the report: the ECE / Brier table and two figures.

The table reads the metrics table (ECE and Brier score on the test split, each
row's note saying how the score was calibrated and on how many responses).
The figures are drawn from the stored scores and reference labels, like the
ROC curves: a **rejection curve** (accuracy of the kept responses as the
responses a detector finds most suspect are rejected, with the oracle and
random bounds; legend: PRR) on every usable response, and **reliability
diagrams** (one small panel per detector: observed hallucination rate against
the calibrated probability, 10 equal-width bins) on the test split, with the
map refitted on the calibration split exactly as the evaluate stage fitted it
(same split, same method, read from the run's manifest).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck import metrics as M
from realitycheck.analysis import TEST, calibrate, split_of
from realitycheck.report._cells import Footnotes, Index
from realitycheck.report._data import DatasetScores, ReportData, dataset_scores
from realitycheck.report._document import Figure, Table, fmt_ci, fmt_count
from realitycheck.report._figures import (
    LABEL_SIZE,
    TICK_SIZE,
    curve_axes,
    finish,
    left_out,
    legend_labels,
    not_drawn,
    pick,
    slug,
    styles,
)
from realitycheck.studies import plots

__all__ = ["calibration_table", "evaluate_settings", "selective_figures"]

_COLUMNS = 3
"""Reliability panels in a row."""
_PANEL, _GAP, _LEFT, _EDGE = 1.35, 0.3, 0.68, 0.1
_TITLE, _LINE, _TICKS, _XLABEL = 0.19, 0.15, 0.28, 0.25
"""Inches: a panel's side, the room between panels, left of them (y label and ticks), the
margin; above each panel its title's pad and each of its lines, under it (tick labels), the
x label's line. A title may be as wide as a panel and a gap: half a gap more to the right of
the last column."""
_BREAKS = ":/[,=_-"
"""Where a detector's key may break onto a second line over its panel."""


def evaluate_settings(manifest: Mapping[str, Any]) -> tuple[str, float]:
    """The calibration method and calibration fraction evaluate used (its defaults if unset)."""
    config = manifest.get("config") or {}
    evaluate = config.get("evaluate") if isinstance(config, Mapping) else None
    evaluate = evaluate if isinstance(evaluate, Mapping) else {}
    method = evaluate.get("calibration", "platt")
    fraction = evaluate.get("calibration_fraction", 0.5)
    return str(method), float(fraction)


def calibration_table(index: Index, dets: Sequence[str], reference: str) -> Table | None:
    """ECE and Brier score of each detector against ``reference``, test split, all responses."""
    notes = Footnotes()
    rows = []
    for det in dets:
        ece, brier = (index.get(("all", det, reference, m)) for m in M.CALIBRATION_METRICS)
        base = ece or brier
        if base is None:
            continue
        cells = [fmt_ci(r.value, r.ci_low, r.ci_high) if r else "n/a" for r in (ece, brier)]
        rows.append(
            (det, *cells, fmt_count(base.n), fmt_count(base.n_positive), notes.mark(base.note))
        )
    if not rows:
        return None
    return notes.table(
        ("detector", "ECE", "Brier", "n", "hallucinated", "calibration"),
        rows,
        "lrrrrl",
        f"Calibration against {reference} labels, test split, all responses; value [CI], "
        "lower is better. Each score is first mapped to a probability of hallucination by "
        "the method in its note, fitted on the calibration split; ECE uses 10 equal-width bins.",
    )


@dataclass(frozen=True)
class _Scored:
    """One detector's usable responses on a dataset: labels, scores, test-split mask."""

    detector: str
    y: npt.NDArray[np.bool_]
    s: npt.NDArray[np.float64]
    test: npt.NDArray[np.bool_]


def _scored(
    data: ReportData,
    dataset: str,
    reference: str,
    order: Sequence[str],
    scored: DatasetScores | None = None,
) -> list[_Scored]:
    in_ds, y_all, by_detector = scored or dataset_scores(data, dataset, reference, order)
    _, fraction = evaluate_settings(data.manifest)
    example_ids = data.responses["example_id"].astype(str).to_numpy()[in_ds]
    test = split_of(example_ids.tolist(), fraction) == TEST
    out = []
    for det, values in by_detector.items():
        ok = ~np.isnan(y_all) & np.isfinite(values)
        y = y_all[ok].astype(bool)
        if y.size and y.any() and not y.all():
            out.append(_Scored(det, y, values[ok], test[ok]))
    return out


def _prr(item: _Scored) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        return float(M.prr(item.y, item.s))


def _rejection_figure(
    found: Sequence[_Scored], rest: Sequence[_Scored], dataset: str, reference: str
) -> Figure:
    """The rejection curves of ``found`` (:func:`pick`'s), oracle and random; ``rest`` listed."""
    drawn = curve_axes(
        (f"Rejection: {dataset}", f"against {reference} labels"),
        "share of responses rejected (highest scores first)",
        "share of kept responses not hallucinated",
    )
    dets = [item.detector for item in found]
    names = legend_labels(dets, dets, [_prr(item) for item in found])
    first: M.RejectionCurve | None = None
    for item, name, style in zip(found, names, styles(dets), strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", M.UndefinedMetricWarning)
            curve = M.rejection_curve(item.y, item.s)
        drawn.ax.plot(curve.rate, curve.accuracy, label=name, **style)
        first = first or curve
    if first is not None:
        drawn.ax.plot(first.rate, first.oracle, color="0.35", linewidth=1.0, label="oracle (1)")
        drawn.ax.plot(first.rate, first.random, color="0.55", linestyle="--", label="random (0)")
    drawn.ax.set_xlim(0, 1)
    caption = (
        f"Rejection curves on {dataset} against {reference} labels, every response with a "
        "label and a score; legend: PRR (prediction-rejection ratio, LM-Polygraph's "
        "definition: the area between the random and the detector's curve over that between "
        "the random and the oracle curve). The oracle and random curves are those of the "
        "responses of the first detector in the legend. The detectors drawn are those of the ROC "
        "figure." + left_out([i.detector for i in rest], [_prr(i) for i in rest], "PRR")
    )
    png = finish(drawn, not_drawn(len(rest)))
    return Figure(stem=f"rejection_{slug(dataset)}", png=png, caption=caption)


def _reliability_figure(
    found: Sequence[tuple[str, M.Reliability, int]],
    colours: Sequence[str],
    dataset: str,
    reference: str,
) -> Any:
    """Small multiples, :data:`_COLUMNS` a row; each panel titled by its name and n.

    A name takes two lines where one is too short (broken after one of
    :data:`_BREAKS`, cut in the middle if still too long); names that would
    look alike that way take one line, cut apart by :func:`plots.fit_labels`.

    Every length is fixed in inches (:data:`_PANEL` and the margins around it),
    so titles, tick labels and axis labels have their own room and no layout
    pass is needed.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    room = (_PANEL + _GAP) * 72 - 8
    dets = [det for det, _, _ in found]
    names = {det: plots.wrap(det, room, TICK_SIZE, lines=2, breaks=_BREAKS) for det in dets}
    if len(set(names.values())) < len(names):
        names = plots.fit_labels(dets, room, TICK_SIZE)
    title_h = _TITLE + _LINE * (1 + max(name.count("\n") + 1 for name in names.values()))
    cols = min(_COLUMNS, len(found))
    rows = math.ceil(len(found) / cols)
    row_h = title_h + _PANEL + _TICKS
    width = _LEFT + cols * _PANEL + (cols - 1) * _GAP + _GAP / 2 + _EDGE
    height = rows * row_h + _XLABEL + _EDGE
    fig = MplFigure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    for k, ((det, rel, n), colour) in enumerate(zip(found, colours, strict=True)):
        row, col = divmod(k, cols)
        top = height - row * row_h - title_h
        ax = fig.add_axes(
            (
                (_LEFT + col * (_PANEL + _GAP)) / width,
                (top - _PANEL) / height,
                _PANEL / width,
                _PANEL / height,
            )
        )
        ax.plot([0, 1], [0, 1], color="0.6", linewidth=0.8, linestyle="--")
        ax.plot(rel.mean_prob, rel.rate, marker="o", markersize=3, linewidth=1.3, color=colour)
        ax.set_title(f"{names[det]}\nn = {n:,}", fontsize=TICK_SIZE, pad=8)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xticks((0, 0.5, 1), ("0", "0.5", "1"))
        ax.set_yticks((0, 0.5, 1), ("0", "0.5", "1") if col == 0 else ())
        ax.tick_params(labelsize=TICK_SIZE)
        ax.grid(True, linewidth=0.3, alpha=0.5)
    block = rows * row_h
    fig.text(
        (_LEFT + (width - _LEFT - _EDGE) / 2) / width,
        _EDGE / height,
        plots.fit(
            "calibrated probability of hallucination (bin mean)",
            (width - _LEFT - _EDGE) * 72,
            LABEL_SIZE,
        ),
        fontsize=LABEL_SIZE,
        ha="center",
        va="bottom",
    )
    fig.text(
        _EDGE / width,
        (height - block / 2) / height,
        plots.fit("observed hallucination rate", (block - title_h) * 72, LABEL_SIZE),
        fontsize=LABEL_SIZE,
        rotation=90,
        ha="left",
        va="center",
    )
    return fig


_METHODS = {"platt": "Platt scaling", "isotonic": "isotonic regression", "none": "no map"}


def selective_figures(
    data: ReportData,
    dataset: str,
    reference: str,
    order: Sequence[str],
    *,
    scored: DatasetScores | None = None,
) -> list[Figure]:
    """The rejection curve and the reliability diagrams of ``dataset`` (none without detectors).

    Both draw the detectors the ROC figure draws (:func:`pick`: the best by
    AUROC and the length baseline, in the same colours); the captions list
    the others. ``scored`` is :func:`dataset_scores` of these arguments, when
    the caller has it.
    """
    found = _scored(data, dataset, reference, order, scored)
    if not found:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        aurocs = [float(M.auroc(item.y, item.s)) for item in found]
    drawn, left = pick([item.detector for item in found], aurocs)
    shown, rest = [found[i] for i in drawn], [found[i] for i in left]
    out = [_rejection_figure(shown, rest, dataset, reference)]
    method, _ = evaluate_settings(data.manifest)
    colours = [style["color"] for style in styles([item.detector for item in shown])]
    panels, kept = [], []
    for item, colour in zip(shown, colours, strict=True):
        fit = ~item.test
        probs, _ = calibrate(item.y[fit].astype(float), item.s[fit], item.s[item.test], method)
        if probs is not None and probs.size:
            panels.append((item.detector, M.reliability(item.y[item.test], probs), probs.size))
            kept.append(colour)
    if panels:
        fig = _reliability_figure(panels, kept, dataset, reference)
        caption = (
            f"Reliability diagrams on {dataset} against {reference} labels, test split: each "
            f"detector's score mapped to a probability by {_METHODS.get(method, method)} fitted "
            "on the calibration split, 10 equal-width bins (empty bins left out); the dashed "
            "diagonal is perfect calibration. The detectors drawn are those of the ROC figure"
            + (
                f"; not drawn: {'; '.join(i.detector for i in rest)} (their ECE and Brier "
                "score are in the calibration table)."
                if rest
                else "."
            )
        )
        png = plots.png_bytes(fig)
        out.append(Figure(stem=f"reliability_{slug(dataset)}", png=png, caption=caption))
    return out
