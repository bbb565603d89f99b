"""The figure, gain table and finding of the context-length study."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from realitycheck.store import StudyFigure
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    TEXT_SIZE,
    fit_names,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
)

__all__ = ["context_figure", "finding", "gains"]

GAIN_METRICS = ("f1", "auroc")
MIN_N = 30
"""Strata measured on fewer responses than this enter neither the gain nor the figure."""


def gains(metrics: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """Longest minus shortest stratum, per dataset, task, detector / labeler and metric."""
    columns = [
        "dataset", "task", "kind", "name", "metric", "short_stratum", "short_value", "n_short",
        "long_stratum", "long_value", "n_long", "gain",
    ]  # fmt: skip
    if metrics.empty:
        return pd.DataFrame(columns=columns)
    order = {n: i for i, n in enumerate(names)}
    rows = []
    part = metrics[
        metrics["metric"].isin(GAIN_METRICS) & metrics["value"].notna() & (metrics["n"] >= MIN_N)
    ]
    for key, group in part.groupby(["dataset", "task", "kind", "name", "metric"], sort=True):
        group = group.sort_values("stratum", key=lambda s: s.map(order))
        if len(group) < 2:
            continue
        first, last = group.iloc[0], group.iloc[-1]
        rows.append(
            dict(zip(columns[:5], key, strict=True))
            | {
                "short_stratum": first["stratum"],
                "short_value": first["value"],
                "n_short": first["n"],
                "long_stratum": last["stratum"],
                "long_value": last["value"],
                "n_long": last["n"],
                "gain": last["value"] - first["value"],
            }
        )
    return pd.DataFrame(rows, columns=columns)


def context_figure(ds: str, metrics: pd.DataFrame, names: Sequence[str]) -> StudyFigure | None:
    """AUROC and F1 per stratum (task ``all``) with CIs; None with fewer than two strata."""
    if metrics.empty:
        return None
    part = metrics[
        (metrics["task"] == "all") & metrics["metric"].isin(GAIN_METRICS) & (metrics["n"] >= MIN_N)
    ]
    present = [n for n in names if n in set(part.loc[part["value"].notna(), "stratum"])]
    if len(present) < 2:
        return None
    from matplotlib import colormaps

    fig, axes = new_figure(PAGE_WIDTH, 5.4, rows=2)
    palette = colormaps["tab20"]
    x = {n: i for i, n in enumerate(present)}
    series = sorted(part[["kind", "name"]].drop_duplicates().itertuples(index=False))
    handles: dict[str, Any] = {}
    for ax, metric in zip(axes, ("auroc", "f1"), strict=True):
        for i, (kind, name) in enumerate(series):
            sel = part[(part["metric"] == metric) & (part["name"] == name)]
            sel = sel[sel["stratum"].isin(x) & sel["value"].notna()]
            if sel.empty:
                continue
            xs = sel["stratum"].map(x).to_numpy(dtype=float) + (i - len(series) / 2) * 0.02
            err = np.vstack([sel["value"] - sel["ci_low"], sel["ci_high"] - sel["value"]])
            marker = "o" if kind == "detector" else "s"
            drawn = ax.errorbar(
                xs, sel["value"], yerr=np.nan_to_num(err), marker=marker, ms=4, capsize=2,
                color=palette(i % 20),
            )  # fmt: skip
            handles.setdefault(f"{name} ({kind})", drawn)
        ax.set_xticks(range(len(present)), fit_names(present, 0.9), rotation=30 * (len(x) > 6))
        ax.set_ylabel("AUROC" if metric == "auroc" else "F1 (detectors: test split)")
        ax.set_ylim(0, 1)
    axes[1].set_xlabel("context length (characters)", fontsize=TEXT_SIZE)
    set_title(fig, f"{ds}: quality by context length")
    legend_below(fig, list(handles.values()), list(handles))
    return StudyFigure(
        f"context_length_{ds}",
        png_bytes(fig),
        f"{ds}: AUROC (all labelled responses) and F1 (test split) per context-length stratum "
        f"with bootstrap intervals; strata with fewer than {MIN_N} responses left out.",
    )


def finding(counts: pd.DataFrame, gain: pd.DataFrame, names: Sequence[str]) -> str:
    """Two to five sentences: where the responses fall and how quality moves with length.

    Every share and rate is given with its count (``>5K 0% (n = 2; hallucinated
    100% of 2 labelled)``): a rate on a handful of responses reads as one.
    """
    if counts.empty:
        return "No dataset of the run has both a context and reference labels."
    sentences = []
    overall = counts[counts["task"] == "all"]
    for ds, part in list(overall.groupby("dataset", sort=True))[:3]:
        total = float(part["n_responses"].sum())
        shares = ", ".join(
            f"{stratum} {n / total:.0%} (n = {n:,}"
            + (f"; hallucinated {rate:.0%} of {labelled:,} labelled)" if labelled else ")")
            for stratum, n, labelled, rate in zip(
                part["stratum"], part["n_responses"], part["n_labelled"],
                part["hallucination_rate"], strict=True,
            )
            if n
        )  # fmt: skip
        text = f"On {ds}, responses fall by context length as {shares}"
        g = gain[(gain["dataset"] == ds) & (gain["task"] == "all") & (gain["metric"] == "f1")]
        g = g[g["kind"] == "detector"]
        if len(g):
            worst = g.iloc[int(np.nanargmin(g["gain"].to_numpy(dtype=float)))]
            text += (
                f"; from {worst['short_stratum']} to {worst['long_stratum']} detector F1 moves by "
                f"{g['gain'].mean():+.3f} on average (largest drop: {worst['name']} "
                f"{worst['short_value']:.2f} -> {worst['long_value']:.2f})"
            )
        sentences.append(text + ".")
    auroc = gain[(gain["task"] == "all") & (gain["metric"] == "auroc")]
    if len(auroc):
        down = int((auroc["gain"] < 0).sum())
        sentences.append(
            f"AUROC is lower on the longest than on the shortest stratum for {down} of "
            f"{len(auroc)} detector / labeler and dataset pairs."
        )
    return " ".join(sentences)
