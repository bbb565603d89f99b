"""Per-dataset figures: the taxonomy as stacked bars, and accuracy mean ± std across variants."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from realitycheck.analysis import CATEGORIES
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
from realitycheck.studies.prompt_multiplicity._flow import COLORS
from realitycheck.studies.prompt_multiplicity._measures import SHORT
from realitycheck.text import short_names

__all__ = ["accuracy_figure", "setting_labels", "taxonomy_figure"]


def _stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text)


def setting_labels(summary: pd.DataFrame) -> list[str]:
    """Short model names, with ``+ retriever`` for answers with retrieval, cut to fit a row."""
    short = short_names(summary["model"])
    return fit_names(
        short[str(m)] + (f" + {r}" if r else "")
        for m, r in zip(summary["model"], summary["retriever"], strict=True)
    )


def taxonomy_figure(dataset: str, summary: pd.DataFrame) -> StudyFigure:
    """One horizontal bar per model (and retrieval setting), split into the three categories."""
    labels = setting_labels(summary)
    fig, ax = new_figure(PAGE_WIDTH, 0.8 + 0.32 * len(summary))
    y = np.arange(len(summary))
    left = np.zeros(len(summary))
    for category in CATEGORIES:
        share = summary[SHORT[category]].fillna(0.0).to_numpy(dtype=float)
        ax.barh(y, share, left=left, color=COLORS[category], label=category)
        left += share
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("Share of questions", fontsize=TEXT_SIZE)
    set_title(fig, f"{dataset}: prompt-agnostic factuality, errors and randomness")
    legend_below(fig, *ax.get_legend_handles_labels())
    tau = summary["tau"].iloc[0]
    caption = (
        f"{dataset}: each model's questions by category at tau = {tau:g}: prompt-agnostic "
        "(self-consistency >= tau) and right under the default prompt, prompt-agnostic and "
        "wrong, or prompt-sensitive (randomness)."
    )
    return StudyFigure(_stem(f"taxonomy_{dataset}"), png_bytes(fig), caption)


def accuracy_figure(dataset: str, summary: pd.DataFrame) -> StudyFigure:
    """Accuracy mean across variants with a ± one standard deviation bar, and the default's."""
    labels = setting_labels(summary)
    fig, ax = new_figure(PAGE_WIDTH, 0.8 + 0.32 * len(summary))
    y = np.arange(len(summary))
    ax.errorbar(
        summary["accuracy_mean"], y, xerr=summary["accuracy_std"], fmt="o", color="black",
        capsize=4, label="mean ± std across variants",
    )  # fmt: skip
    ax.plot(summary["default_accuracy"], y, "x", color="#c8553d", label="default prompt")
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("Accuracy", fontsize=TEXT_SIZE)
    set_title(fig, f"{dataset}: accuracy across prompt variants")
    legend_below(fig, *ax.get_legend_handles_labels())
    ax.grid(alpha=0.3, axis="x")
    caption = (
        f"{dataset}: each model's accuracy averaged over prompt variants, ± one (population) "
        "standard deviation across variants, and its accuracy under the default prompt (x) "
        "on the questions with a default answer and two or more variants."
    )
    return StudyFigure(_stem(f"accuracy_{dataset}"), png_bytes(fig), caption)
