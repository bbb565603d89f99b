"""Category transitions without -> with retrieval, and their flow figure.

A question's answers with and without retrieval are paired by (model,
question, variant): only the variants a question was answered under in both
settings take part, so both categories come from the same prompts (seed
paper 004, section 5.2). Each setting's categories are then those of
:func:`realitycheck.studies.prompt_multiplicity._measures.measure`.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from realitycheck.analysis import CATEGORIES
from realitycheck.store import StudyFigure
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    TEXT_SIZE,
    fit,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
)
from realitycheck.studies.prompt_multiplicity._measures import measure

__all__ = ["COLORS", "TRANSITION_COLUMNS", "flow_figure", "transitions"]

TRANSITION_COLUMNS = ["model", "retriever", "without", "with", "n", "share"]
COLORS = {CATEGORIES[0]: "#4c9a5b", CATEGORIES[1]: "#c8553d", CATEGORIES[2]: "#9aa0a6"}


def _paired_categories(
    plain: pd.DataFrame, rag: pd.DataFrame, default: str, tau: float
) -> pd.DataFrame | None:
    keys = ["example_id", "variant"]
    both = plain[keys].merge(rag[keys], on=keys)
    if both["variant"].nunique() < 2 or default not in set(both["variant"]):
        return None
    sides = []
    for part in (plain, rag):
        kept = part.merge(both, on=keys)
        questions = measure(kept, default, tau)[1]
        sides.append(questions[questions["category"] != ""].set_index("example_id")["category"])
    return pd.concat(sides, axis=1, keys=["without", "with"], join="inner")


def transitions(
    answers: pd.DataFrame, defaults: dict[tuple[str, str], str], tau: float
) -> pd.DataFrame:
    """Count each (without, with) category pair per model and retriever.

    Returns :data:`TRANSITION_COLUMNS`;
    ``share`` is the pair's share of the model's paired questions under that
    retriever. Models with no paired question under two or more variants
    (the default among them) are left out.
    """
    rows = []
    plain_all = answers[answers["retriever"] == ""]
    for (model, retriever), rag in answers[answers["retriever"] != ""].groupby(
        ["model", "retriever"], sort=True
    ):
        default = defaults.get((str(model), ""))
        plain = plain_all[plain_all["model"] == model]
        pairs = None if default is None else _paired_categories(plain, rag, default, tau)
        if pairs is None or pairs.empty:
            continue
        counts = pairs.groupby(["without", "with"]).size().to_dict()
        for a in CATEGORIES:
            for b in CATEGORIES:
                n = int(counts.get((a, b), 0))
                rows.append([model, retriever, a, b, n, n / len(pairs)])
    return pd.DataFrame(rows, columns=TRANSITION_COLUMNS)


def _band(ax, x0: float, x1: float, left: tuple[float, float], right: tuple[float, float], color):
    """A smooth band from the span ``left`` at ``x0`` to the span ``right`` at ``x1``."""
    t = np.linspace(0.0, 1.0, 50)
    ease = 3 * t**2 - 2 * t**3
    low = left[0] + (right[0] - left[0]) * ease
    high = left[1] + (right[1] - left[1]) * ease
    ax.fill_between(x0 + (x1 - x0) * t, low, high, color=color, alpha=0.35, linewidth=0)


def flow_figure(dataset: str, retriever: str, table: pd.DataFrame) -> StudyFigure:
    """Two stacked columns (without, with retrieval) joined by bands, pooled over models.

    ``table`` holds the :func:`transitions` rows of one dataset and retriever.
    """
    counts = table.groupby(["without", "with"])["n"].sum()
    total = max(int(counts.sum()), 1)
    share = {(a, b): counts.get((a, b), 0) / total for a in CATEGORIES for b in CATEGORIES}
    fig, ax = new_figure(PAGE_WIDTH, 3.8)
    width = 0.18
    right_top = np.cumsum([0.0] + [sum(share[a, b] for a in CATEGORIES) for b in CATEGORIES])
    right_next = dict(zip(CATEGORIES, right_top[:-1], strict=True))
    bottom = 0.0
    for a in CATEGORIES:
        for b in CATEGORIES:
            h = share[a, b]
            ax.bar(0, h, width, bottom=bottom, color=COLORS[a])
            r0 = right_next[b]
            _band(ax, width / 2, 1 - width / 2, (bottom, bottom + h), (r0, r0 + h), COLORS[a])
            right_next[b] += h
            bottom += h
    for b, low, high in zip(CATEGORIES, right_top[:-1], right_top[1:], strict=True):
        ax.bar(1, high - low, width, bottom=low, color=COLORS[b], label=b)
    ax.set_xticks([0, 1], ["without retrieval", fit(f"with {retriever}", 2.1 * 72, TEXT_SIZE)])
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylabel(f"Share of question-model pairs (n = {total})", fontsize=TEXT_SIZE)
    ax.set_ylim(0, 1)
    set_title(fig, f"{dataset}: categories without -> with retrieval")
    legend_below(fig, *ax.get_legend_handles_labels())
    caption = (
        f"{dataset}: each question's category (prompt-agnostic factuality, prompt-agnostic "
        f"error, randomness) without and with {retriever}, on the variants answered in both "
        "settings, pooled over models; a band's height is the share moving between the two."
    )
    stem = re.sub(r"[^A-Za-z0-9._=-]+", "_", f"flow_{dataset}_{retriever}")
    return StudyFigure(stem, png_bytes(fig), caption)
