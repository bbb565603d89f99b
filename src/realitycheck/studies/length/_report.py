"""Figures and finding of the length study."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from realitycheck.store import StudyFigure
from realitycheck.studies import base_name, fmt
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    TEXT_SIZE,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
    wrap,
)

__all__ = ["length_finding", "plot_accuracy_by_length", "plot_lengths"]

_SHOWN_QUANTILE = 0.99


def plot_lengths(dataset: str, length: pd.Series, y: pd.Series, unit: str) -> StudyFigure:
    """Histograms (as densities) of the length of hallucinated and correct responses."""
    fig, ax = new_figure(PAGE_WIDTH, 3.2)
    known = length[y.notna()]
    top = float(known.quantile(_SHOWN_QUANTILE)) if len(known) else 1.0
    edges = np.linspace(0.0, max(top, 1.0), 41)
    hidden = int((known > edges[-1]).sum())
    for label, value, color in (("hallucinated", 1.0, "C3"), ("correct", 0.0, "C0")):
        x = length[y == value].to_numpy(dtype=float)
        if x.size:
            ax.hist(
                x,
                bins=edges,
                density=True,
                histtype="step",
                linewidth=1.5,
                color=color,
                label=f"{label} (n = {x.size:,}, median {np.median(x):g})",
            )
    ax.set_xlabel(f"response length ({unit})", fontsize=TEXT_SIZE)
    ax.set_ylabel("density", fontsize=TEXT_SIZE)
    set_title(fig, f"{dataset}: length of hallucinated vs correct responses")
    legend_below(fig, *ax.get_legend_handles_labels())
    return StudyFigure(
        f"lengths-{dataset}",
        png_bytes(fig),
        f"{dataset}: length distribution of hallucinated and correct responses; the x axis stops "
        f"at the {_SHOWN_QUANTILE:.0%} quantile, so {hidden} longer responses are not drawn "
        "(the distribution table has them).",
    )


def plot_accuracy_by_length(table: pd.DataFrame, unit: str, confidence: float) -> StudyFigure:
    """Accuracy of each labeler per length bin, one panel per dataset, one above the other.

    A labeler keeps its colour in every panel and is named once in the legend beneath.
    """
    datasets = sorted(table["dataset"].unique())
    labelers = sorted(table["labeler"].unique())
    colour = {lab: f"C{k % 10}" for k, lab in enumerate(labelers)}
    fig, axes = new_figure(PAGE_WIDTH, 2.6 * len(datasets), rows=len(datasets))
    axes = np.atleast_1d(axes)
    for ax, dataset in zip(axes, datasets, strict=True):
        rows = table[table["dataset"] == dataset]
        for labeler, group in rows.groupby("labeler", sort=True):
            ax.errorbar(
                group["bin"],
                group["accuracy"],
                yerr=[group["accuracy"] - group["ci_low"], group["ci_high"] - group["accuracy"]],
                marker="o",
                capsize=3,
                color=colour[labeler],
                label=labeler,
            )
        first = rows.drop_duplicates("bin").sort_values("bin")
        edges = zip(first["length_low"], first["length_high"], strict=True)
        ticks = [f"{lo:g}-{hi:g}" for lo, hi in edges]
        ax.set_xticks(first["bin"], ticks, rotation=30 if len(ticks) > 5 else 0)
        ax.set_ylim(0, 1)
        ax.set_ylabel("accuracy", fontsize=TEXT_SIZE)
        ax.set_title(wrap(dataset, (PAGE_WIDTH - 0.8) * 72, TEXT_SIZE), fontsize=TEXT_SIZE)
    axes[-1].set_xlabel(f"length bin ({unit})", fontsize=TEXT_SIZE)
    set_title(fig, "Accuracy of each labeler by response length")
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    legend_below(fig, list(handles.values()), list(handles))
    return StudyFigure(
        "accuracy-by-length",
        png_bytes(fig),
        "Accuracy of each automatic labeler against the reference by length bin, with Wilson "
        f"{confidence:.0%} intervals.",
    )


def length_finding(frames: dict[str, pd.DataFrame], reference: str, unit: str) -> str:
    """Two to five sentences stating the largest length effects."""
    sentences = []
    dist, ranking = frames["distribution"], frames["ranking"]
    sizes = dist.groupby("dataset")["n"].sum().sort_values(ascending=False)
    for dataset in sizes.index[:3]:
        rows = dist[dist["dataset"] == dataset].set_index("label")
        hall, right = rows.loc["hallucinated", "median"], rows.loc["correct", "median"]
        if not (np.isfinite(hall) and np.isfinite(right)):
            continue
        way = "longer than" if hall > right else "shorter than" if hall < right else "as long as"
        text = (
            f"On {dataset}, hallucinated responses (by {reference} labels) are {way} correct ones "
            f"(median {hall:g} vs {right:g} {unit})"
        )
        mine = ranking[ranking["dataset"] == dataset]
        length_row = mine[mine["name"] == "Len"]
        if not length_row.empty and np.isfinite(length_row["auroc"].iloc[0]):
            r = length_row.iloc[0]
            text += (
                f"; Len alone reaches AUROC {fmt(r['auroc'])} [{fmt(r['ci_low'])}, "
                f"{fmt(r['ci_high'])}], rank {int(r['rank'])} of {len(mine)}"
            )
        sentences.append(text + ".")
    corr = frames["correlation"]
    corr = corr[(corr["signal"] != "verdict") & corr["name"].map(base_name).ne("length")]
    corr = corr[np.isfinite(corr["spearman_rho"].astype(float))]
    if not corr.empty:
        r = corr.iloc[int(np.argmax(np.abs(corr["spearman_rho"].to_numpy(dtype=float))))]
        sentences.append(
            f"The {r['kind']} most tied to length is {r['name']} on {r['dataset']} "
            f"(Spearman rho {fmt(r['spearman_rho'], 2)}, Pearson r {fmt(r['pearson_r'], 2)}, "
            f"n = {int(r['n']):,})."
        )
    acc = frames["accuracy_by_length"]
    if not acc.empty:
        change = (
            acc.sort_values("bin")
            .groupby(["dataset", "labeler"], as_index=False)
            .agg(first=("accuracy", "first"), last=("accuracy", "last"))
        )
        change = change.dropna()
        if not change.empty:
            row = change.iloc[int(np.argmax(np.abs(change["last"] - change["first"])))]
            dataset, labeler, first, last = row[["dataset", "labeler", "first", "last"]]
            sentences.append(
                f"{labeler}'s accuracy on {dataset} goes from {first:.0%} on the shortest "
                f"responses to {last:.0%} on the longest."
            )
    if not sentences:
        return "No dataset has responses with length and labels to study."
    return " ".join(sentences[:5])
