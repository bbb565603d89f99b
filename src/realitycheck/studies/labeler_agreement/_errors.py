"""Why a lexical labeler errs: each error of the labeler-agreement study gets one cause."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from realitycheck.store import RunData, StudyFigure
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    TEXT_SIZE,
    fit_pairs,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
)

__all__ = ["CAUSES", "LEXICAL_LABELERS", "error_causes", "plot_errors", "reference_words"]

LEXICAL_LABELERS: frozenset[str] = frozenset(
    {"rouge_l", "bleu", "token_f1", "exact_match", "knowledge_f1"}
)
"""Labelers that compare words: their errors are broken down by cause."""

CAUSES: tuple[tuple[str, str], ...] = (
    ("false positive", "long but correct"),
    ("false positive", "paraphrase with no overlap"),
    ("false positive", "other false positive"),
    ("false negative", "wrong answer with high overlap"),
    ("false negative", "other false negative"),
)
"""Every (error, cause) pair, in the order the rules are applied."""


def error_causes(
    *,
    words: pd.Series,
    truth: npt.NDArray[np.bool_],
    pred: npt.NDArray[np.bool_],
    similarity: pd.Series,
    reference_words: pd.Series,
    embedding_correct: pd.Series | None,
    long_cut: float,
    long_ratio: float,
    low_overlap: float,
    high_overlap: float,
) -> pd.DataFrame:
    """Give each error of a lexical labeler one cause (rules in ``LabelerAgreement``).

    Args:
        words: Word length of each item's response.
        truth: Reference labels, True = hallucinated.
        pred: The labeler's verdicts, True = hallucinated.
        similarity: The labeler's similarity (higher = closer), NaN if unknown.
        reference_words: Words of the item's longest reference answer, NaN if none.
        embedding_correct: Whether an embedding labeler judged the item correct,
            or None when no embedding labeler ran.
        long_cut: A response with more words than this is long.
        long_ratio: A response with more than this many times its reference's words is long.
        low_overlap: Similarity below which there is no overlap.
        high_overlap: Similarity from which the overlap is high.

    Returns:
        One row per (error, cause): ``error, cause, n, share_of_errors,
        share_of_items, n_errors, n_items``; every cause appears, with n = 0 if
        it never occurs.
    """
    w = words.to_numpy(dtype=float)
    sim = similarity.to_numpy(dtype=float)
    ref = reference_words.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        long = (w > long_cut) | (np.isfinite(ref) & (w > long_ratio * ref))
        low, high = sim < low_overlap, sim >= high_overlap
    semantic = (
        np.ones(w.size, dtype=bool)
        if embedding_correct is None
        else embedding_correct.to_numpy(dtype=bool)
    )
    fp, fn = pred & ~truth, ~pred & truth
    paraphrase = fp & ~long & low & semantic
    masks = [fp & long, paraphrase, fp & ~long & ~paraphrase, fn & high, fn & ~high]
    n_errors = int(fp.sum() + fn.sum())
    rows = []
    for (error, cause), mask in zip(CAUSES, masks, strict=True):
        n = int(mask.sum())
        rows.append(
            {
                "error": error,
                "cause": cause,
                "n": n,
                "share_of_errors": n / n_errors if n_errors else np.nan,
                "share_of_items": n / w.size if w.size else np.nan,
                "n_errors": n_errors,
                "n_items": int(w.size),
            }
        )
    return pd.DataFrame(rows)


def reference_words(data: RunData, frame: pd.DataFrame) -> pd.Series:
    """Words of each response's longest reference answer (NaN without references)."""
    refs = data.examples.set_index("example_id")["references"]
    longest = refs.map(lambda rs: max((len(r.split()) for r in rs), default=np.nan))
    return pd.Series(longest.reindex(frame["example_id"]).to_numpy(dtype=float), index=frame.index)


def plot_errors(errors: pd.DataFrame) -> StudyFigure:
    """Stacked bars: share of items per error cause, per dataset and lexical labeler."""
    table = errors.pivot_table(
        index=["dataset", "labeler"], columns="cause", values="share_of_items", sort=True
    )
    table = table[[c for _, c in CAUSES if c in table.columns]]
    fig, ax = new_figure(PAGE_WIDTH, 0.8 + 0.3 * len(table))
    left = np.zeros(len(table))
    positions = np.arange(len(table))
    for k, cause in enumerate(table.columns):
        width = table[cause].to_numpy(dtype=float)
        ax.barh(positions, width, left=left, color=f"C{k}", label=cause)
        left += width
    ax.set_yticks(positions, fit_pairs(table.index))
    ax.invert_yaxis()
    ax.set_xlabel("share of labelled items", fontsize=TEXT_SIZE)
    set_title(fig, "Errors of lexical labelers by cause")
    legend_below(fig, *ax.get_legend_handles_labels())
    return StudyFigure(
        "errors",
        png_bytes(fig),
        "Each lexical labeler's errors against the reference, by cause, as a share of the "
        "items it labelled (rules in the errors table caption).",
    )
