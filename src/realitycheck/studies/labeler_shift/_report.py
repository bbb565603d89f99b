"""Labeler shift's correlation table, scatter figure and finding."""

from __future__ import annotations

import numpy as np
import pandas as pd

from realitycheck.metrics import correlation_pvalue, pearson
from realitycheck.store import StudyFigure
from realitycheck.studies import fmt, quiet
from realitycheck.studies.labeler_shift._paired import ALL
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    PALETTE,
    TEXT_SIZE,
    fit,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
)

__all__ = ["correlations", "finding", "scatter"]

_MARKERS = "osD^vP*Xph"


def correlations(shift: pd.DataFrame, reference: str) -> pd.DataFrame:
    rows = []
    for (labeler, metric), group in shift.groupby(["labeler", "metric"], sort=True):
        ok = group[np.isfinite(group["value"].astype(float))]
        ok = ok[np.isfinite(ok["reference_value"].astype(float))]
        n = len(ok)
        note = ""
        if n < 3:
            r = float("nan")
            note = f"only {n} (detector, dataset) pairs; 3 are needed"
        else:
            with quiet():
                r = pearson(ok["reference_value"].astype(float), ok["value"].astype(float))
            if not np.isfinite(r):
                note = "undefined: the metric is constant under one of the two labelers"
        rows.append(
            {
                "reference": reference,
                "labeler": labeler,
                "metric": metric,
                "pearson_r": r,
                "p_value": correlation_pvalue(r, n),
                "n": n,
                "datasets": ", ".join(sorted(ok["dataset"].unique())),
                "note": note,
            }
        )
    columns = ["reference", "labeler", "metric", "pearson_r", "p_value", "n", "datasets", "note"]
    return pd.DataFrame(rows, columns=columns)


def scatter(shift: pd.DataFrame, reference: str) -> StudyFigure:
    """One marker per detector and dataset: AUROC under the reference (x) and a labeler (y).

    A labeler is a colour and a dataset a marker; the legend beneath names each once.
    """
    from matplotlib.lines import Line2D

    auroc = shift[shift["metric"] == "auroc"]
    fig, ax = new_figure(PAGE_WIDTH, 4.4)
    labelers = sorted(auroc["labeler"].unique())
    datasets = sorted(auroc["dataset"].unique())
    colors = {lab: PALETTE[k % len(PALETTE)] for k, lab in enumerate(labelers)}
    markers = {ds: _MARKERS[k % len(_MARKERS)] for k, ds in enumerate(datasets)}
    for (labeler, dataset), group in auroc.groupby(["labeler", "dataset"], sort=True):
        ax.scatter(
            group["reference_value"].astype(float),
            group["value"].astype(float),
            color=colors[labeler],
            marker=markers[dataset],
            alpha=0.8,
        )
    values = pd.concat([auroc["reference_value"], auroc["value"]]).astype(float)
    values = values[np.isfinite(values)]
    low = min(0.4, float(values.min())) if len(values) else 0.0
    high = max(1.0, float(values.max())) if len(values) else 1.0
    ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1)
    pad = 0.03 * (high - low)  # keeps the first ticks of x and y apart at the corner
    ax.set_xlim(low - pad, high + pad)
    ax.set_ylim(low - pad, high + pad)
    axis = (PAGE_WIDTH - 0.8) * 72
    ax.set_xlabel(fit(f"AUROC under {reference}", axis, TEXT_SIZE), fontsize=TEXT_SIZE)
    ax.set_ylabel("AUROC under the other labeler", fontsize=TEXT_SIZE)
    set_title(fig, "Detector AUROC: reference labels vs each labeler")
    handles = [Line2D([], [], color=colors[lab], marker="o", ls="none") for lab in labelers]
    handles += [Line2D([], [], color="0.35", marker=markers[ds], ls="none") for ds in datasets]
    labels = [f"labeler: {lab}" for lab in labelers] + [f"dataset: {ds}" for ds in datasets]
    legend_below(fig, handles, labels)
    return StudyFigure(
        "auroc-scatter",
        png_bytes(fig),
        f"One marker per detector and dataset: AUROC under {reference} (x) and under another "
        "labeler (y). Points above the diagonal are overstated by that labeler.",
    )


def finding(
    shift: pd.DataFrame, correlation: pd.DataFrame, paired: pd.DataFrame, reference: str
) -> str:
    """A few sentences: the largest over- and understatement, correlations, and per slice."""
    auroc = shift[(shift["metric"] == "auroc")].copy()
    auroc["delta_pct"] = auroc["delta_pct"].astype(float)
    auroc = auroc[np.isfinite(auroc["delta_pct"])]
    if auroc.empty:
        return (
            f"No dataset has {reference} labels, another labeler and a detector with a defined "
            "AUROC under both, so no shift could be measured."
        )
    sentences = []
    top = auroc.loc[auroc["delta_pct"].idxmax()]
    low = auroc.loc[auroc["delta_pct"].idxmin()]
    if top["delta_pct"] > 0:
        sentences.append(
            f"Under {top['labeler']} the detectors' AUROC is up to {top['delta_pct']:+.1f}% "
            f"higher than under {reference} labels ({top['detector']} on {top['dataset']}: "
            f"{fmt(top['value'])} vs {fmt(top['reference_value'])})."
        )
    else:
        sentences.append(f"No labeler rates any detector higher than {reference} labels do.")
    if low["delta_pct"] < 0:
        sentences.append(
            f"The largest understatement is {low['delta_pct']:+.1f}% ({low['detector']} on "
            f"{low['dataset']} under {low['labeler']}: {fmt(low['value'])} vs "
            f"{fmt(low['reference_value'])})."
        )
    over = auroc.groupby("labeler")["delta_pct"].apply(lambda d: float((d > 0).mean()))
    worst = over.idxmax()
    sentences.append(
        f"{worst} overstates {over[worst]:.0%} of the {int((auroc['labeler'] == worst).sum())} "
        f"detector-dataset pairs it labels."
    )
    corr = correlation[(correlation["metric"] == "auroc")]
    defined = corr[np.isfinite(corr["pearson_r"].astype(float))]
    if not defined.empty:
        parts = [f"{r.labeler} r = {r.pearson_r:.2f} (n = {r.n})" for r in defined.itertuples()]
        sentences.append(
            f"Across detectors and datasets, AUROC under {reference} and under each labeler "
            f"correlate at {'; '.join(parts)}."
        )
    too_few = corr[corr["n"] < 3]
    if not too_few.empty:
        sentences.append(
            "Too few detector-dataset pairs for a correlation under "
            + ", ".join(f"{r.labeler} ({r.n})" for r in too_few.itertuples())
            + "."
        )
    return " ".join(sentences[:5] + _paired_sentences(paired, reference))


def _paired_sentences(paired: pd.DataFrame, reference: str) -> list[str]:
    """Where a dataset has several models or prompt variants: the worst cell, Δ% per prompt."""
    rows = paired[np.isfinite(paired["delta_ref_pct"].astype(float))]
    pooled_model, pooled_prompt = rows["model"] == ALL, rows["prompt_variant"] == ALL
    if rows.empty or not (pooled_model.any() or pooled_prompt.any()):
        return []
    out = []
    cells = rows[~pooled_model & ~pooled_prompt].sort_values("delta_ref_pct", kind="stable")
    low = cells.iloc[0] if len(cells) else None
    if low is not None and low["delta_ref_pct"] < 0:
        out.append(
            f"Paired on the same responses per model and prompt variant (Janiak et al.'s Δ%), "
            f"{low['labeler']} overstates {low['detector']} most for {low['model']} with "
            f"{low['prompt_variant']} prompts on {low['dataset']}: AUROC "
            f"{fmt(low['labeler_auroc'])} vs {fmt(low['reference_auroc'])} under {reference}, "
            f"Δ% = {low['delta_ref_pct']:+.1f}% [{low['delta_ref_pct_ci_low']:+.1f}%, "
            f"{low['delta_ref_pct_ci_high']:+.1f}%]."
        )
    # Per prompt variant: the rows pooled over models where a dataset has several.
    datasets_pooled = set(rows.loc[pooled_model, "dataset"])
    per_prompt = rows[~pooled_prompt & (pooled_model | ~rows["dataset"].isin(datasets_pooled))]
    means = per_prompt.groupby("prompt_variant")["delta_ref_pct"].mean()
    if len(means) > 1:
        parts = [f"{v:+.1f}% with {k} prompts" for k, v in means.items()]
        out.append(f"Averaged over detectors, datasets and labelers, Δ% is {', '.join(parts)}.")
    return out
