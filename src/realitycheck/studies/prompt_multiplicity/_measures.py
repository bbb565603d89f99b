"""Prompt multiplicity of one model's answers: the summary row and the per-question table.

The measures are those of :func:`realitycheck.analysis.multiplicity` (seed
paper 004, Definitions 2-5): accuracy mean and population standard deviation
across variants, ambiguity, per-question self-consistency (two *distinct*
variants drawn uniformly), prompt-agnostic at ``tau`` and the PAF / PAE /
randomness taxonomy under the default prompt. A variant a question lacks is
just missing for that question.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from realitycheck.analysis import CATEGORIES, multiplicity

__all__ = ["QUESTION_COLUMNS", "SUMMARY_COLUMNS", "default_variant", "measure"]

SHORT = {CATEGORIES[0]: "paf", CATEGORIES[1]: "pae", CATEGORIES[2]: "randomness"}
SUMMARY_COLUMNS = [
    "model", "retriever", "default_variant", "variants", "questions", "accuracy_mean",
    "accuracy_std", "default_accuracy", "ambiguity", "mean_self_consistency", "share_agnostic",
    "paf", "pae", "randomness", "randomness_among_default_correct", "tau",
]  # fmt: skip
QUESTION_COLUMNS = [
    "model", "retriever", "example_id", "n_variants", "self_consistency", "agnostic",
    "default_correct", "category",
]  # fmt: skip


def default_variant(variants: set[str], wanted: str) -> str | None:
    """The default prompt's variant: ``wanted``, or under ``auto`` ``default`` then ``zero_shot``.

    ``default`` is the choose stage's base prompt and ``zero_shot`` the
    generate stage's; None when the answers have neither.
    """
    for key in (wanted,) if wanted != "auto" else ("default", "zero_shot"):
        if key in variants:
            return key
    return None


def _codes(wide: pd.DataFrame) -> np.ndarray:
    """Each question's answers as small integers (equal answers, equal codes), -1 where missing."""
    out = np.full(wide.shape, -1, dtype=np.int64)
    for k, row in enumerate(wide.itertuples(index=False)):
        seen: dict[Any, int] = {}
        for i, value in enumerate(row):
            if value is not None and not (isinstance(value, float) and np.isnan(value)):
                out[k, i] = seen.setdefault(value, len(seen))
    return out


def measure(answers: pd.DataFrame, default: str, tau: float) -> tuple[dict[str, Any], pd.DataFrame]:
    """Measure one (model, retriever) group's answers (:func:`answer_table` rows).

    Args:
        answers: The group's rows; at least two variants, ``default`` among them.
        default: The default prompt's variant key.
        tau: The self-consistency threshold of prompt-agnostic questions.

    Returns:
        The summary row (:data:`SUMMARY_COLUMNS`) and one row per question
        answered under two or more variants (:data:`QUESTION_COLUMNS`).
    """
    variants = [default, *sorted(set(answers["variant"]) - {default})]
    wide = answers.pivot(index="example_id", columns="variant", values="answer")
    wide = wide.reindex(columns=variants).astype(object)
    right = answers.pivot(index="example_id", columns="variant", values="correct")
    right = right.reindex(index=wide.index, columns=variants).fillna(False).astype(bool)
    choices = _codes(wide)
    m = multiplicity(choices, right.to_numpy(), default=0, tau=tau)
    model, retriever = answers["model"].iloc[0], answers["retriever"].iloc[0]
    known = ~np.isnan(m.self_consistency)
    agnostic = np.where(known, m.self_consistency, -1.0) >= tau
    summary = {
        "model": model, "retriever": retriever, "default_variant": default,
        "variants": m.variants, "questions": m.questions, "accuracy_mean": m.accuracy_mean,
        "accuracy_std": m.accuracy_std, "default_accuracy": m.default_accuracy,
        "ambiguity": m.ambiguity, "mean_self_consistency": float(np.nanmean(m.self_consistency))
        if m.questions else float("nan"),
        "share_agnostic": float(np.mean(agnostic[known])) if m.questions else float("nan"),
    } | {SHORT[c]: m.shares[c] for c in CATEGORIES} | {
        "randomness_among_default_correct": m.randomness_among_default_correct, "tau": tau,
    }  # fmt: skip
    questions = pd.DataFrame(
        {
            "model": model,
            "retriever": retriever,
            "example_id": wide.index.to_numpy()[known],
            "n_variants": (choices >= 0).sum(axis=1)[known],
            "self_consistency": m.self_consistency[known],
            "agnostic": agnostic[known],
            "default_correct": np.where(choices[:, 0] >= 0, right.to_numpy()[:, 0], np.nan)[known],
            "category": m.category[known],
        },
        columns=QUESTION_COLUMNS,
    )
    return summary, questions
