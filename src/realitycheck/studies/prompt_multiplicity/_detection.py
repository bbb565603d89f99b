"""Does a detector track correctness or consistency (seed paper 004, section 5.1, Figure 4)?

For each detector, model and retrieval setting, over the default prompt's
answers to the questions answered under two or more variants: the
detector's mean score on correct and on incorrect answers, and on
prompt-agnostic and prompt-sensitive ones. The differences (correct -
incorrect, agnostic - sensitive; detector scores are higher for "more likely
hallucinated", so a detector that tracks correctness has a negative first
difference) are tested across models by the two-sided Wilcoxon signed-rank
test (:func:`realitycheck.analysis.consistency_vs_correctness`).

Models are counted by their name: the retrieval setting is a factor of its
own, not another model. The test runs across the models within each
retrieval setting (the paper's section 5.1 tests the models without
retrieval), so six models answered with and without BM25 make two tests of
six models each, never one of twelve: a model's answers with and without
retrieval are not independent draws.

With ``n`` models the exact two-sided test's smallest p-value is ``2 / 2**n``;
below ``min_models`` no p-value is given and the note says why (the default,
6, is the fewest models for which p can fall below 0.05).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from realitycheck.analysis import consistency_vs_correctness

__all__ = ["MEAN_COLUMNS", "TEST_COLUMNS", "detector_means", "detector_tests"]

MEAN_COLUMNS = [
    "detector", "model", "retriever", "n", "mean_correct", "mean_incorrect", "mean_agnostic",
    "mean_sensitive",
]  # fmt: skip
TEST_COLUMNS = ["detector", "retriever", "axis", "n_models", "mean_difference", "p_value", "note"]
AXES = {"correctness": ("mean_correct", "mean_incorrect"),
        "consistency": ("mean_agnostic", "mean_sensitive")}  # fmt: skip


def _mean(values: np.ndarray, mask: np.ndarray) -> float:
    return float(values[mask].mean()) if mask.any() else float("nan")


def default_answers(
    answers: pd.DataFrame, questions: pd.DataFrame, defaults: dict[tuple[str, str], str]
) -> pd.DataFrame:
    """The default prompt's answers with their question's ``agnostic`` flag.

    Returns:
        ``model, retriever, example_id, response_id, correct, agnostic``.
    """
    keys = ["model", "retriever", "example_id"]
    default = answers["variant"] == [
        defaults.get((m, r)) for m, r in zip(answers["model"], answers["retriever"], strict=True)
    ]
    part = answers.loc[default, [*keys, "response_id", "correct"]]
    return part.merge(questions[[*keys, "agnostic"]], on=keys, how="inner")


def detector_means(rows: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Each detector's mean score per model on each side of both axes (:data:`MEAN_COLUMNS`).

    Args:
        rows: :func:`default_answers`.
        scores: Detector values by response id (one column per detector key).
    """
    out = []
    for detector in scores.columns:
        values = scores[detector].reindex(rows["response_id"]).to_numpy(dtype=float)
        part = rows.assign(_s=values)[~np.isnan(values)]
        for (model, retriever), group in part.groupby(["model", "retriever"], sort=True):
            s = group["_s"].to_numpy()
            right = group["correct"].to_numpy(dtype=bool)
            agn = group["agnostic"].to_numpy(dtype=bool)
            out.append(
                [detector, model, retriever, len(group), _mean(s, right), _mean(s, ~right),
                 _mean(s, agn), _mean(s, ~agn)]
            )  # fmt: skip
    return pd.DataFrame(out, columns=MEAN_COLUMNS)


def detector_tests(rows: pd.DataFrame, scores: pd.DataFrame, min_models: int) -> pd.DataFrame:
    """Per detector and retrieval setting, the Wilcoxon test across models on each axis.

    Each model (by name) is one pair of means within a retrieval setting
    (:data:`TEST_COLUMNS`; ``retriever`` empty: without retrieval).
    """
    out = []
    for detector in scores.columns:
        values = scores[detector].reindex(rows["response_id"]).to_numpy(dtype=float)
        for retriever, setting in rows.assign(_s=values).groupby("retriever", sort=True):
            per_model = [g for _, g in setting.groupby("model", sort=True)]
            tested = consistency_vs_correctness(
                [g["_s"].to_numpy() for g in per_model],
                [g["correct"].to_numpy(dtype=bool) for g in per_model],
                [g["agnostic"].to_numpy(dtype=bool) for g in per_model],
            )
            for axis, result in tested.items():
                n = int(result["models"])
                p, note = result["p_value"], ""
                if n < min_models:
                    p = float("nan")
                    note = (
                        f"no p-value: {n} model(s) with both sides, the test needs at least "
                        f"{min_models} (with n models the smallest two-sided p is 2/2^n)"
                    )
                elif np.isnan(p):
                    note = "no p-value: every model's difference is zero"
                out.append([detector, retriever, axis, n, result["mean_difference"], p, note])
    return pd.DataFrame(out, columns=TEST_COLUMNS)
