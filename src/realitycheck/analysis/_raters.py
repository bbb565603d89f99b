"""Agreement between raters: majority vote, Dawid–Skene, Cohen's and Fleiss' kappa, Krippendorff.

A *rating matrix* has one row per item and one column per rater (an annotator
or an automatic labeler); each cell is 1.0 (hallucinated), 0.0 (faithful) or
NaN (the rater gave no verdict on that item). Dawid–Skene lives in
:mod:`realitycheck.raters` (below the datasets, whose ``files`` loader
aggregates annotator columns with it) and is re-exported here. Statistics that
come from a maintained package (Fleiss' kappa from statsmodels,
Krippendorff's alpha from ``krippendorff``) import it inside the function and
raise :class:`~realitycheck.errors.MissingDependencyError` when it is absent.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from realitycheck import metrics as M
from realitycheck.analysis._optional import require_module
from realitycheck.raters import DawidSkeneFit, dawid_skene

if TYPE_CHECKING:  # pragma: no cover - pandas is imported where a frame is built
    import pandas as pd

__all__ = [
    "DawidSkeneFit",
    "dawid_skene",
    "fleiss_by_count",
    "krippendorff_alpha",
    "leave_one_out_majority",
    "majority_vote",
    "pairwise_kappa",
]


def _votes(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the number of 1 votes and of 0 votes per item."""
    return (matrix == 1).sum(axis=1), (matrix == 0).sum(axis=1)


def majority_vote(matrix: np.ndarray) -> np.ndarray:
    """Return the majority verdict per item: 1.0 / 0.0, NaN on a tie or with no vote."""
    ones, zeros = _votes(np.asarray(matrix, dtype=float))
    return np.where(ones > zeros, 1.0, np.where(zeros > ones, 0.0, np.nan))


def leave_one_out_majority(matrix: np.ndarray, rater: int) -> np.ndarray:
    """Return the majority verdict of every rater but ``rater`` (NaN on a tie or no vote)."""
    matrix = np.asarray(matrix, dtype=float)
    return majority_vote(np.delete(matrix, rater, axis=1))


def pairwise_kappa(matrix: np.ndarray, names: Sequence[str], *, min_overlap: int) -> pd.DataFrame:
    """Cohen's kappa and raw agreement for every pair of raters on the items both rated.

    Pairs with fewer than ``min_overlap`` shared items are left out; kappa is
    NaN when both raters give one and the same verdict throughout.
    """
    import pandas as pd

    matrix = np.asarray(matrix, dtype=float)
    rows = []
    for a, b in itertools.combinations(range(matrix.shape[1]), 2):
        both = ~np.isnan(matrix[:, a]) & ~np.isnan(matrix[:, b])
        if both.sum() < min_overlap:
            continue
        x, y = matrix[both, a], matrix[both, b]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", M.UndefinedMetricWarning)
            kappa = M.cohen_kappa(x, y)
        rows.append(
            {
                "rater_a": names[a],
                "rater_b": names[b],
                "n_overlap": int(both.sum()),
                "agreement": float((x == y).mean()),
                "cohen_kappa": float(kappa),
            }
        )
    return pd.DataFrame(
        rows, columns=["rater_a", "rater_b", "n_overlap", "agreement", "cohen_kappa"]
    )


def fleiss_by_count(matrix: np.ndarray) -> list[tuple[int, int, float]]:
    """Fleiss' kappa per group of items rated by the same number k >= 2 of raters.

    Fleiss' kappa assumes every item has the same number of ratings, so items
    are grouped by that number. Returns ``(k, n_items, kappa)`` per group; kappa
    is NaN when a group uses one category only.

    Raises:
        MissingDependencyError: statsmodels is not installed.
    """
    inter_rater = require_module("statsmodels.stats.inter_rater", "statsmodels", "Fleiss' kappa")
    ones, zeros = _votes(np.asarray(matrix, dtype=float))
    counts = ones + zeros
    out = []
    for k in sorted(set(counts[counts >= 2].tolist())):
        table = np.column_stack([zeros[counts == k], ones[counts == k]])
        if (table.sum(axis=0) == 0).any():
            kappa = float("nan")
        else:
            kappa = float(inter_rater.fleiss_kappa(table, method="fleiss"))
        out.append((int(k), int(table.shape[0]), kappa))
    return out


def krippendorff_alpha(matrix: np.ndarray) -> float:
    """Krippendorff's alpha (nominal) over every item with at least two ratings.

    Missing ratings are allowed. NaN when fewer than two items have two
    ratings or only one category occurs.

    Raises:
        MissingDependencyError: krippendorff is not installed.
    """
    krippendorff = require_module("krippendorff", "krippendorff", "Krippendorff's alpha")
    matrix = np.asarray(matrix, dtype=float)
    paired = matrix[(~np.isnan(matrix)).sum(axis=1) >= 2]
    observed = paired[~np.isnan(paired)]
    if paired.shape[0] < 2 or np.unique(observed).size < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=paired.T, level_of_measurement="nominal"))
