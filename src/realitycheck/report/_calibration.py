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
from realitycheck import plots
from realitycheck.analysis import TEST, calibrate, split_of
from realitycheck.report._cells import Footnotes, Index
from realitycheck.report._data import DatasetScores, ReportData, dataset_scores
from realitycheck.report._document import Figure, Table, fmt_ci, fmt_count
from realitycheck.report._figures import slug

__all__ = ["calibration_table", "evaluate_settings", "selective_figures"]

_MAX_NAME = 40
_PANEL = 1.75  # inches per reliability panel
_COLUMNS = 4  # reliability panels per row


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


def _name(text: str) -> str:
    return text if len(text) <= _MAX_NAME else text[: _MAX_NAME - 1] + "…"


def _rejection_figure(found: Sequence[_Scored], dataset: str, reference: str) -> Figure:
    from matplotlib import colormaps

    fig, ax = plots.new_figure(4.2, 3.6)
    cmap = colormaps["tab10" if len(found) <= 10 else "tab20"]
    first: M.RejectionCurve | None = None
    for i, item in enumerate(found):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", M.UndefinedMetricWarning)
            curve = M.rejection_curve(item.y, item.s)
            value = M.prr(item.y, item.s)
        style = ("-", "--", ":", "-.")[(i // cmap.N) % 4]
        label = f"{_name(item.detector)} ({value:.3f})"
        ax.plot(curve.rate, curve.accuracy, color=cmap(i % cmap.N), linestyle=style, label=label)
        first = first or curve
    if first is not None:
        ax.plot(first.rate, first.oracle, color="0.2", linewidth=0.8, label="oracle (1)")
        ax.plot(first.rate, first.random, color="0.5", linestyle="--", label="random (0)")
    ax.set_title(f"Rejection: {dataset} (vs {reference})", fontsize=9)
    ax.set_xlabel("share of responses rejected (highest scores first)", fontsize=8)
    ax.set_ylabel("share of kept responses not hallucinated", fontsize=8)
    ax.set_xlim(0, 1)
    ax.tick_params(labelsize=7)
    ax.grid(True, linewidth=0.4, alpha=0.5)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    caption = (
        f"Rejection curves on {dataset} against {reference} labels, every response with a "
        "label and a score; legend: PRR (prediction-rejection ratio, LM-Polygraph's "
        "definition: the area between the random and the detector's curve over that between "
        "the random and the oracle curve). The oracle and random curves are those of the "
        "first detector's responses."
    )
    return Figure(stem=f"rejection_{slug(dataset)}", png=plots.png_bytes(fig), caption=caption)


def _reliability_figure(
    found: Sequence[tuple[str, M.Reliability, int]], dataset: str, reference: str, method: str
) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    cols = min(_COLUMNS, len(found))
    rows = math.ceil(len(found) / cols)
    fig = MplFigure(figsize=(_PANEL * cols, _PANEL * rows + 0.3), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
    for ax, (det, rel, n) in zip(axes.flat, found, strict=False):
        ax.plot([0, 1], [0, 1], color="0.6", linewidth=0.7, linestyle="--")
        ax.plot(rel.mean_prob, rel.rate, marker="o", markersize=2.5, linewidth=1.0)
        ax.set_title(f"{_name(det)} (n={n})", fontsize=6.5)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.tick_params(labelsize=6)
        ax.grid(True, linewidth=0.3, alpha=0.5)
    for ax in list(axes.flat)[len(found) :]:
        ax.set_visible(False)
    fig.supxlabel("calibrated probability of hallucination (bin mean)", fontsize=7)
    fig.supylabel("observed hallucination rate", fontsize=7)
    # Fixed spacing: a layout pass per figure costs as much as drawing it.
    fig.subplots_adjust(wspace=0.3, hspace=0.45, left=0.12, bottom=0.14 / rows)
    caption = (
        f"Reliability diagrams on {dataset} against {reference} labels, test split: each "
        f"detector's score mapped to a probability by {method} fitted on the calibration split, "
        "10 equal-width bins (empty bins left out); the dashed diagonal is perfect calibration."
    )
    return Figure(stem=f"reliability_{slug(dataset)}", png=plots.png_bytes(fig), caption=caption)


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

    ``scored`` is :func:`dataset_scores` of these arguments, when the caller has it.
    """
    found = _scored(data, dataset, reference, order, scored)
    if not found:
        return []
    out = [_rejection_figure(found, dataset, reference)]
    method, _ = evaluate_settings(data.manifest)
    panels = []
    for item in found:
        fit = ~item.test
        probs, _ = calibrate(item.y[fit].astype(float), item.s[fit], item.s[item.test], method)
        if probs is not None and probs.size:
            panels.append((item.detector, M.reliability(item.y[item.test], probs), probs.size))
    if panels:
        out.append(_reliability_figure(panels, dataset, reference, _METHODS.get(method, method)))
    return out
