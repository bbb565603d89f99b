"""The table, figure and finding of the train-noise study."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from realitycheck.store import StudyFigure, StudyTable
from realitycheck.studies import fmt
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    TEXT_SIZE,
    fit_names,
    new_figure,
    png_bytes,
    set_title,
)

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


def _short(key: str) -> str:
    """A detector key short enough for a file name: a bare name, else its name and a key hash.

    The figure's file name also carries the study key, and a probe's key can
    be long (its score patterns); the caption names the detector in full.
    """
    if "[" not in key:
        return key
    return f"{key.split('[', 1)[0]}-{hashlib.sha1(key.encode('utf-8')).hexdigest()[:8]}"


def figure(ds: str, detector: str, rows: Sequence[dict[str, Any]]) -> StudyFigure:
    """AUROC with its CI per training-label condition, for one dataset and detector."""
    names = [r["condition"] + (f" ({r['source']})" if r["source"] else "") for r in rows]
    values = np.array([r["auroc"] for r in rows], dtype=float)
    low = np.array([r["auroc_ci_low"] for r in rows], dtype=float)
    high = np.array([r["auroc_ci_high"] for r in rows], dtype=float)
    fig, ax = new_figure(PAGE_WIDTH, 0.8 + 0.3 * len(rows))
    y = np.arange(len(rows))[::-1]
    ax.errorbar(values, y, xerr=[values - low, high - values], fmt="o", color="black", capsize=3)
    ax.axvline(values[0], color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(y, fit_names(names))
    ax.set_xlabel("AUROC on the clean test labels", fontsize=TEXT_SIZE)
    set_title(fig, f"{ds}: {detector}")
    return StudyFigure(
        f"{ds}_{_short(detector)}",
        png_bytes(fig),
        f"{ds}, {detector}: AUROC on the clean test labels after training on each label set "
        "(dotted line: trained on clean labels; bars: bootstrap CI).",
    )


def _change(row: Any) -> str:
    """A noisy row's AUROC change against clean labels with its paired CI."""
    return f"{_gain(row['drop'])} [{_gain(row['drop_ci_high'])}, {_gain(row['drop_ci_low'])}]"


def _condition(row: Any, rate: float) -> str:
    if row["condition"] == "random_flip":
        return f"{rate:.0%} random flips"
    if row["condition"] == "weak_supervision":
        return f"{row['source']} labels"
    return row["condition"].replace("_", " ") + (f" ({row['source']})" if row["source"] else "")


def _lead(frame: pd.DataFrame, clean: str) -> str:
    """The first sentence: the largest human-vs-noisy AUROC drop over every dataset and detector."""
    noisy = frame[(frame["condition"] != "clean") & frame["drop"].notna()]
    if noisy.empty:
        return "No noisy training-label set could be built (see the skipped list)."
    w = noisy.iloc[int(np.argmax(noisy["drop"].to_numpy(dtype=float)))]
    hurt = noisy[noisy["drop_ci_low"].to_numpy(dtype=float) > 0]
    return (
        f"Training on noisy instead of {clean} labels changes the test AUROC by at most "
        f"{_change(w)} ({w['dataset']}, {w['detector']}, {w['condition']}"
        f"{' (' + w['source'] + ')' if w['source'] else ''}); {len(hurt)} of {len(noisy)} "
        f"noisy training sets make a detector significantly worse than {clean} labels "
        "(the drop's CI above 0)."
    )


def finding(rows: Sequence[dict[str, Any]], rate: float, clean: str = "human") -> str:
    """The largest clean-vs-noisy drop, then per (dataset, detector) the clean AUROC and changes.

    ``clean`` names the clean labels in the text: ``"human"`` or the reference
    labeler's key.

    Each change is the noisy model's AUROC minus the clean one's (negative =
    worse), for the random flips, each weak labeler and the dissenting label.
    """
    if not rows:
        return (
            "No dataset had enough labelled calibration responses with the features a "
            "supervised detector needs (see the skipped list)."
        )
    frame = pd.DataFrame(list(rows), columns=COLUMNS)
    sentences = [_lead(frame, clean)]
    shown = ("random_flip", "weak_supervision", "dissenting_label")
    for (ds, det), group in frame.groupby(["dataset", "detector"], sort=False):
        clean_rows = group[group["condition"] == "clean"]
        if clean_rows.empty:
            continue
        c = clean_rows.iloc[0]
        text = (
            f"On {ds}, {det} trained on {clean} labels reaches AUROC {fmt(c['auroc'])} "
            f"[{fmt(c['auroc_ci_low'])}, {fmt(c['auroc_ci_high'])}] on the {clean} test labels"
        )
        noisy = group[group["condition"].isin(shown) & group["drop"].notna()]
        changes = [f"{_condition(r, rate)} {_change(r)}" for _, r in noisy.iterrows()]
        if changes:
            text += "; trained on " + ", ".join(changes)
        sentences.append(text + ".")
    more = len(sentences) - 7
    return " ".join(sentences[:7]) + (f" ({more} more in the table.)" if more > 0 else "")
