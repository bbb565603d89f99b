"""The table, figure and finding of the train-noise study."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from realitycheck.plots import new_figure, png_bytes
from realitycheck.store import StudyFigure, StudyTable
from realitycheck.studies import fmt

__all__ = ["COLUMNS", "figure", "finding", "table"]

COLUMNS = [
    "dataset",
    "detector",
    "condition",
    "source",
    "raters",
    "noise_rate",
    "n_train",
    "n_train_positive",
    "n_test",
    "n_test_positive",
    "auroc",
    "auroc_ci_low",
    "auroc_ci_high",
    "drop",
    "drop_ci_low",
    "drop_ci_high",
    "pr_auc",
    "pr_auc_ci_low",
    "pr_auc_ci_high",
]


def _gain(drop: float) -> str:
    """A drop as the signed change of AUROC (``-0.05`` = five points worse), never ``-0.000``."""
    return fmt(0.0 - float(drop), signed=True)


def table(rows: Sequence[dict[str, Any]]) -> StudyTable:
    """The one table: every (dataset, detector, training-label condition)."""
    frame = pd.DataFrame(list(rows), columns=COLUMNS)
    return StudyTable(
        "train_noise",
        frame,
        "Supervised detectors trained on the calibration split with clean or noisy labels, "
        "all measured on the same clean test labels. drop = clean AUROC - AUROC (positive = "
        "worse than clean); noise_rate = share of the labelled training responses whose label "
        "differs from the clean one; CIs: paired percentile bootstrap over test responses "
        "(the trained models held fixed).",
    )


def figure(ds: str, detector: str, rows: Sequence[dict[str, Any]]) -> StudyFigure:
    """AUROC with its CI per training-label condition, for one dataset and detector."""
    names = [r["condition"] + (f" ({r['source']})" if r["source"] else "") for r in rows]
    values = np.array([r["auroc"] for r in rows], dtype=float)
    low = np.array([r["auroc_ci_low"] for r in rows], dtype=float)
    high = np.array([r["auroc_ci_high"] for r in rows], dtype=float)
    fig, ax = new_figure(6.0, 0.5 + 0.4 * len(rows))
    y = np.arange(len(rows))[::-1]
    ax.errorbar(values, y, xerr=[values - low, high - values], fmt="o", color="black", capsize=3)
    ax.axvline(values[0], color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(y)
    ax.set_yticklabels(names)
    ax.set_xlabel("AUROC on the clean test labels")
    ax.set_title(f"{ds}: {detector}")
    return StudyFigure(
        f"{ds}_{detector}",
        png_bytes(fig),
        f"{ds}, {detector}: AUROC on the clean test labels after training on each label set "
        "(dotted line: trained on clean labels; bars: bootstrap CI).",
    )


def finding(rows: Sequence[dict[str, Any]], rate: float) -> str:
    """A sentence per (dataset, detector): the clean AUROC and the largest drop."""
    if not rows:
        return (
            "No dataset had enough labelled calibration responses with the features a "
            "supervised detector needs (see the skipped list)."
        )
    frame = pd.DataFrame(list(rows), columns=COLUMNS)
    sentences = []
    for (ds, det), group in frame.groupby(["dataset", "detector"], sort=False):
        clean = group[group["condition"] == "clean"]
        noisy = group[(group["condition"] != "clean") & group["drop"].notna()]
        if clean.empty:
            continue
        c = clean.iloc[0]
        text = (
            f"On {ds}, {det} trained on clean labels reaches AUROC {fmt(c['auroc'])} "
            f"[{fmt(c['auroc_ci_low'])}, {fmt(c['auroc_ci_high'])}] on the clean test labels"
        )
        flips = noisy[noisy["condition"] == "random_flip"]
        if len(flips):
            f = flips.iloc[0]
            text += (
                f"; {rate:.0%} random flips in training change it by "
                f"{_gain(f['drop'])} [{_gain(f['drop_ci_high'])}, "
                f"{_gain(f['drop_ci_low'])}]"
            )
        if len(noisy):
            w = noisy.iloc[int(np.argmax(noisy["drop"].to_numpy(dtype=float)))]
            source = f" ({w['source']})" if w["source"] else ""
            text += (
                f"; the worst training labels are {w['condition']}{source}, "
                f"{_gain(w['drop'])} [{_gain(w['drop_ci_high'])}, "
                f"{_gain(w['drop_ci_low'])}]"
            )
        sentences.append(text + ".")
    return " ".join(sentences[:6]) + (
        f" ({len(sentences) - 6} more in the table.)" if len(sentences) > 6 else ""
    )
