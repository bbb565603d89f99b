"""Metrics, flags, figure and finding of the repetition study."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from realitycheck.metrics import accuracy, auroc, cohen_kappa, pr_auc
from realitycheck.store import StudyFigure
from realitycheck.studies import fmt, quiet
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    TEXT_SIZE,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
)

__all__ = [
    "COLUMNS",
    "FLAG_COLUMNS",
    "detector_metrics",
    "flag_rows",
    "labeler_metrics",
    "plot_repetition",
    "repetition_finding",
]

FloatArray = npt.NDArray[np.float64]

COLUMNS = ["dataset", "kind", "component", "k", "metric", "value", "delta", "n"]
FLAG_COLUMNS = [
    "dataset",
    "kind",
    "component",
    "metric",
    "value_k0",
    "k_largest",
    "value_at_k",
    "max_abs_delta",
    "tolerance",
    "flagged",
]
_LINESTYLES = ("-", "--", ":", "-.")
_PRIMARY = {"labeler": "share_hallucinated", "detector": "auroc"}


def labeler_metrics(y: FloatArray, verdict: FloatArray) -> pd.DataFrame:
    """Share labelled hallucinated, accuracy and Cohen's kappa against ``y`` (NaN = missing)."""
    labelled = ~np.isnan(verdict)
    both = labelled & ~np.isnan(y)
    truth, pred = y[both] == 1, verdict[both] == 1
    with quiet():
        agree = accuracy(truth, pred) if both.any() else np.nan
        kappa = cohen_kappa(truth, pred) if both.any() else np.nan
    share = float(verdict[labelled].mean()) if labelled.any() else np.nan
    rows = [
        ("share_hallucinated", share, int(labelled.sum())),
        ("accuracy", agree, int(both.sum())),
        ("cohen_kappa", kappa, int(both.sum())),
    ]
    return pd.DataFrame(rows, columns=["metric", "value", "n"]).assign(kind="labeler")


def detector_metrics(y: FloatArray, value: FloatArray) -> pd.DataFrame:
    """AUROC and PR-AUC against ``y`` and the mean value (NaN = missing)."""
    scored = ~np.isnan(value)
    both = scored & ~np.isnan(y)
    truth, score = y[both] == 1, value[both]
    with quiet():
        roc = auroc(truth, score) if both.any() else np.nan
        pr = pr_auc(truth, score) if both.any() else np.nan
    mean = float(value[scored].mean()) if scored.any() else np.nan
    rows = [
        ("auroc", roc, int(both.sum())),
        ("pr_auc", pr, int(both.sum())),
        ("mean_score", mean, int(scored.sum())),
    ]
    return pd.DataFrame(rows, columns=["metric", "value", "n"]).assign(kind="detector")


def flag_rows(long: pd.DataFrame, auroc_tolerance: float, share_tolerance: float) -> pd.DataFrame:
    """One row per component: the largest change of its primary metric from k = 0, flagged."""
    rows = []
    for (dataset, kind, component), group in long.groupby(
        ["dataset", "kind", "component"], sort=True
    ):
        metric = _PRIMARY[str(kind)]
        tolerance = share_tolerance if kind == "labeler" else auroc_tolerance
        series = group[group["metric"] == metric].set_index("k").sort_index()
        deltas = series["delta"].to_numpy(dtype=float)
        at = int(np.nanargmax(np.abs(deltas))) if np.isfinite(deltas).any() else len(deltas) - 1
        biggest = float(np.abs(deltas[at])) if np.isfinite(deltas[at]) else np.nan
        rows.append(
            {
                "dataset": dataset,
                "kind": kind,
                "component": component,
                "metric": metric,
                "value_k0": float(series["value"].iloc[0]),
                "k_largest": int(series.index[at]),
                "value_at_k": float(series["value"].iloc[at]),
                "max_abs_delta": biggest,
                "tolerance": tolerance,
                "flagged": bool(biggest > tolerance),
            }
        )
    return pd.DataFrame(rows, columns=FLAG_COLUMNS)


def plot_repetition(long: pd.DataFrame) -> StudyFigure:
    """Labelers' hallucinated share and detectors' AUROC against k, one line per component.

    Two panels, one above the other; each component and dataset has its own
    colour and line style throughout, named once in the legend beneath.
    """
    fig, axes = new_figure(PAGE_WIDTH, 5.6, rows=2)
    n = 0
    handles, labels = [], []
    for ax, kind in zip(axes, ("labeler", "detector"), strict=True):
        metric = _PRIMARY[kind]
        rows = long[(long["kind"] == kind) & (long["metric"] == metric)]
        datasets = sorted(rows["dataset"].unique())
        for (dataset, component), group in rows.groupby(["dataset", "component"]):
            group = group.sort_values("k")
            style = _LINESTYLES[datasets.index(dataset) % len(_LINESTYLES)]
            (line,) = ax.plot(
                group["k"],
                group["value"],
                marker="o",
                color=f"C{n % 10}",
                linestyle=style,
            )
            handles.append(line)
            labels.append(f"{kind}: {component} / {dataset}")
            n += 1
        ax.set_xticks(sorted(long["k"].unique()))
        ax.set_ylabel("share labelled hallucinated" if kind == "labeler" else "AUROC")
        ax.set_title("labelers" if kind == "labeler" else "detectors", fontsize=TEXT_SIZE)
        ax.set_ylim(0, 1.02)
        if rows.empty:
            ax.text(0.5, 0.5, f"no {kind} recomputed", ha="center", transform=ax.transAxes)
    axes[1].set_xlabel("extra copies of the sentences (k)")
    set_title(fig, "Repetition: each response's sentences repeated k more times")
    if handles:
        legend_below(fig, handles, labels)
    return StudyFigure(
        "repetition",
        png_bytes(fig),
        "Left: share of responses each labeler labels hallucinated; right: each detector's "
        "AUROC against the reference; as each response's sentences are repeated k more times.",
    )


def _names(flags: pd.DataFrame) -> str:
    names = [f"{r.component} ({r.dataset})" for r in flags.itertuples()]
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def repetition_finding(
    long: pd.DataFrame, flags: pd.DataFrame, ks: Sequence[int], max_responses: int
) -> str:
    """Two to five sentences on what moved with repetition."""
    if long.empty:
        return (
            "No labeler or detector could be recomputed on a dataset with reference labels, "
            "so repetition was not tested."
        )
    extra = ", ".join(str(k) for k in ks if k > 0) or "0"
    n_l, n_d = (int((flags["kind"] == kind).sum()) for kind in ("labeler", "detector"))
    f_l, f_d = (int((flags["flagged"] & (flags["kind"] == kind)).sum()) for kind in _PRIMARY)
    sentences = [
        f"Appending k = {extra} extra copies of each response's sentences, facts unchanged "
        f"(up to {max_responses:,} responses per dataset), moves {f_l} of {n_l} labelers and "
        f"{f_d} of {n_d} detectors beyond tolerance."
    ]
    for kind in ("labeler", "detector"):
        mine = flags[(flags["kind"] == kind) & flags["max_abs_delta"].notna()]
        if mine.empty:
            continue
        r = mine.iloc[int(np.argmax(mine["max_abs_delta"].to_numpy(dtype=float)))]
        if kind == "labeler":
            acc = long[
                (long["dataset"] == r["dataset"])
                & (long["component"] == r["component"])
                & (long["metric"] == "accuracy")
            ].set_index("k")["value"]
            sentences.append(
                f"{r['component']} labels {r['value_k0']:.0%} of {r['dataset']}'s responses "
                f"hallucinated at k = 0 and {r['value_at_k']:.0%} at k = {r['k_largest']} "
                f"(accuracy {fmt(acc.get(0, np.nan))} -> {fmt(acc.get(r['k_largest'], np.nan))})."
            )
        elif r["flagged"]:
            sentences.append(
                f"The AUROC of {r['component']} on {r['dataset']} moves from "
                f"{fmt(r['value_k0'])} at k = 0 to {fmt(r['value_at_k'])} at "
                f"k = {r['k_largest']}."
            )
        else:
            sentences.append(
                f"No detector's AUROC moves by more than {r['tolerance']:g} (largest change "
                f"{r['max_abs_delta']:.4f}, {r['component']} on {r['dataset']})."
            )
    stable = flags[~flags["flagged"]]
    if not stable.empty:
        sentences.append(f"Within tolerance: {_names(stable)}.")
    return " ".join(sentences[:5])
