"""Prompt multiplicity: ambiguity, self-consistency and the PAF / PAE / randomness taxonomy.

Definitions follow the prompt-multiplicity paper (seed paper 004, §3.2–3.3,
after Marx et al. 2020 and Cooper et al. 2024). For one model on one
benchmark, ``choices[k, i]`` is the option chosen for question ``k`` under
prompt structure ``i`` (``-1`` where that variant gave no choice):

- **ambiguity**: the share of questions whose choice differs between at
  least two prompt structures (Definition 2);
- **self-consistency** of question ``k``: the probability that two prompt
  structures drawn at random give the same choice (Definition 3). Here the
  two are *distinct* structures drawn uniformly (``sum_c n_c (n_c - 1) /
  (r (r - 1))``); ``with_replacement=True`` draws them independently
  (``sum_c (n_c / r)^2``), which counts a structure agreeing with itself;
- **prompt-agnostic** when self-consistency is at least ``tau`` (0.8 in the
  paper), **prompt-sensitive** below it (Definitions 4–5);
- the taxonomy: a prompt-agnostic question is *prompt-agnostic factuality*
  (PAF) when the default prompt's choice is correct and a *prompt-agnostic
  error* (PAE) when it is wrong; a prompt-sensitive question is *randomness*,
  whether or not the default prompt happened to be right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.errors import InvalidInputError

__all__ = [
    "CATEGORIES",
    "Multiplicity",
    "consistency_vs_correctness",
    "multiplicity",
    "self_consistency",
]

CATEGORIES = ("prompt-agnostic factuality", "prompt-agnostic error", "randomness")
"""The taxonomy's three categories, in table order."""


def _check_choices(choices: Any) -> npt.NDArray[np.int64]:
    array = np.asarray(choices)
    if array.ndim != 2 or array.shape[1] < 2:
        raise InvalidInputError(
            "The choices must be a questions x variants table with at least two variants. "
            f"Got shape {array.shape} instead."
        )
    if not np.issubdtype(array.dtype, np.integer):
        raise InvalidInputError(f"The choices must be option indices. Got {array.dtype} instead.")
    return array.astype(np.int64)


def self_consistency(choices: Any, *, with_replacement: bool = False) -> npt.NDArray[np.float64]:
    """Return each question's self-consistency over its variants (``-1`` = no choice, left out).

    A question with fewer than two choices has no self-consistency (NaN).
    """
    table = _check_choices(choices)
    out = np.full(table.shape[0], np.nan)
    for k, row in enumerate(table):
        given = row[row >= 0]
        r = given.size
        if r < 2:
            continue
        counts = np.unique(given, return_counts=True)[1].astype(float)
        if with_replacement:
            out[k] = float(np.sum((counts / r) ** 2))
        else:
            out[k] = float(np.sum(counts * (counts - 1)) / (r * (r - 1)))
    return out


@dataclass(frozen=True)
class Multiplicity:
    """One model's prompt multiplicity on one benchmark.

    Attributes:
        questions: Questions with at least two choices.
        variants: Prompt structures (columns of the choices table).
        accuracy_mean: Mean over variants of the share of correct choices.
        accuracy_std: Their standard deviation (population, ``ddof=0``).
        ambiguity: Share of questions whose choice differs between two variants.
        self_consistency: Per question (NaN where fewer than two choices).
        agnostic: Per question, self-consistency at least ``tau``.
        category: Per question, one of :data:`CATEGORIES` (``""`` where unknown).
        shares: Share of the questions in each category.
        default_accuracy: Share correct under the default prompt structure.
        randomness_among_default_correct: Of the questions the default prompt
            gets right, the share that is randomness (the paper's overstated
            "factuality").
        tau: The threshold used.
    """

    questions: int
    variants: int
    accuracy_mean: float
    accuracy_std: float
    ambiguity: float
    self_consistency: npt.NDArray[np.float64]
    agnostic: npt.NDArray[np.bool_]
    category: npt.NDArray[np.str_]
    shares: dict[str, float]
    default_accuracy: float
    randomness_among_default_correct: float
    tau: float


def multiplicity(
    choices: Any,
    correct: Any,
    *,
    default: int = 0,
    tau: float = 0.8,
    with_replacement: bool = False,
) -> Multiplicity:
    """Measure prompt multiplicity from a choices table and its correctness table.

    Args:
        choices: ``questions x variants`` option indices, ``-1`` for no choice.
        correct: Same shape, whether each choice is correct (ignored where ``-1``).
        default: The column of the benchmark's default prompt structure.
        tau: The self-consistency threshold of prompt-agnostic questions.
        with_replacement: See :func:`self_consistency`.

    Raises:
        InvalidInputError: Shapes differ, ``default`` is not a column, or
            ``tau`` is outside [0, 1].
    """
    table = _check_choices(choices)
    right = np.asarray(correct, dtype=bool)
    if right.shape != table.shape:
        raise InvalidInputError(
            f"choices {table.shape} and correct {right.shape} must have the same shape."
        )
    if not 0 <= default < table.shape[1]:
        raise InvalidInputError(f"default must be a column of the {table.shape[1]} variants.")
    if not 0.0 <= tau <= 1.0:
        raise InvalidInputError(f"tau must be in [0, 1]. Got {tau} instead.")
    sc = self_consistency(table, with_replacement=with_replacement)
    known = ~np.isnan(sc) & (table[:, default] >= 0)
    given = table >= 0
    per_variant = [
        float(np.mean(right[given[:, i], i])) for i in range(table.shape[1]) if given[:, i].any()
    ]
    differs = np.array(
        [np.unique(row[row >= 0]).size > 1 for row in table], dtype=bool
    ) & ~np.isnan(sc)
    agnostic = known & (sc >= tau)
    default_right = right[:, default] & known
    category = np.full(table.shape[0], "", dtype=object)
    category[known & agnostic & default_right] = CATEGORIES[0]
    category[known & agnostic & ~default_right] = CATEGORIES[1]
    category[known & ~agnostic] = CATEGORIES[2]
    n = int(known.sum())
    shares = {c: float(np.sum(category == c) / n) if n else float("nan") for c in CATEGORIES}
    right_default = int(default_right.sum())
    return Multiplicity(
        questions=int((~np.isnan(sc)).sum()),
        variants=table.shape[1],
        accuracy_mean=float(np.mean(per_variant)) if per_variant else float("nan"),
        accuracy_std=float(np.std(per_variant)) if per_variant else float("nan"),
        ambiguity=float(differs.sum() / max(int((~np.isnan(sc)).sum()), 1)),
        self_consistency=sc,
        agnostic=agnostic,
        category=category.astype(str),
        shares=shares,
        default_accuracy=right_default / n if n else float("nan"),
        randomness_among_default_correct=(
            float(np.sum(default_right & ~agnostic) / right_default)
            if right_default
            else float("nan")
        ),
        tau=tau,
    )


def consistency_vs_correctness(
    scores: Sequence[Any], correct: Sequence[Any], agnostic: Sequence[Any]
) -> dict[str, dict[str, float]]:
    """Test whether a detector separates correct from wrong, and agnostic from sensitive.

    For each model ``m``, ``scores[m]``, ``correct[m]`` and ``agnostic[m]`` are
    per-answer arrays (the default prompt's answers). The detector's mean
    score is taken over correct and over incorrect answers, and over
    prompt-agnostic and prompt-sensitive ones; the Wilcoxon signed-rank test
    (two-sided, across models) asks whether the paired differences centre on
    zero on each axis (seed paper 004, §5.1, Figure 4). Models lacking one
    side of an axis are left out of that axis.

    Returns:
        ``{"correctness": {...}, "consistency": {...}}``, each with the mean
        difference, the number of models and the p-value (NaN for fewer
        than two models, or all differences zero).
    """
    from scipy.stats import wilcoxon  # here, not at import: scipy.stats is slow to import

    axes: dict[str, list[float]] = {"correctness": [], "consistency": []}
    for score, right, agn in zip(scores, correct, agnostic, strict=True):
        s = np.asarray(score, dtype=float)
        for axis, mask in (
            ("correctness", np.asarray(right, bool)),
            ("consistency", np.asarray(agn, bool)),
        ):
            ok = ~np.isnan(s)
            a, b = s[ok & mask], s[ok & ~mask]
            if a.size and b.size:
                axes[axis].append(float(a.mean() - b.mean()))
    out = {}
    for axis, diffs in axes.items():
        p = float("nan")
        if len(diffs) >= 2 and any(d != 0 for d in diffs):
            p = float(wilcoxon(diffs).pvalue)
        out[axis] = {
            "mean_difference": float(np.mean(diffs)) if diffs else float("nan"),
            "models": float(len(diffs)),
            "p_value": p,
        }
    return out
