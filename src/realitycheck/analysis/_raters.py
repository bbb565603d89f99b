"""Agreement between raters: majority vote, Dawid–Skene, Cohen's and Fleiss' kappa, Krippendorff.

A *rating matrix* has one row per item and one column per rater (an annotator
or an automatic labeler); each cell is 1.0 (hallucinated), 0.0 (faithful) or
NaN (the rater gave no verdict on that item). Statistics that come from a
maintained package (Dawid–Skene from crowd-kit, Fleiss' kappa from
statsmodels, Krippendorff's alpha from ``krippendorff``) import it inside the
function and raise :class:`~realitycheck.errors.MissingDependencyError` when it
is absent.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from realitycheck import metrics as M
from realitycheck.analysis._optional import require_module

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


@dataclass(frozen=True)
class DawidSkeneFit:
    """A fitted two-class Dawid–Skene model.

    Attributes:
        posterior: P(hallucinated | votes) per item; NaN for an item without votes.
        labels: 1.0 where the posterior is above 0.5, 0.0 below, NaN at 0.5 or without votes.
        sensitivity: Per rater, P(rater says hallucinated | hallucinated) (NaN if unseen).
        specificity: Per rater, P(rater says faithful | faithful) (NaN if unseen).
        prior: Estimated share of hallucinated items.
    """

    posterior: np.ndarray
    labels: np.ndarray
    sensitivity: np.ndarray
    specificity: np.ndarray
    prior: float

    def predict(self, matrix: np.ndarray) -> np.ndarray:
        """Return P(hallucinated | votes) for the items of ``matrix`` under this fit.

        ``matrix`` has the fitted raters as columns, in the same order; its items
        need not be those fitted on (the fit on one split labels another). A
        rater the fit never saw (NaN reliabilities) counts as uninformative; an
        item without votes gets NaN.
        """
        matrix = np.asarray(matrix, dtype=float)
        return _posterior(matrix, self.prior, self.sensitivity, self.specificity)


def dawid_skene(matrix: np.ndarray, *, n_iter: int = 100, tol: float = 1e-5) -> DawidSkeneFit:
    """Fit Dawid–Skene (1979) by EM with crowd-kit's ``DawidSkene`` (majority-vote start).

    Each rater has a 2 x 2 confusion matrix; the EM alternates item posteriors
    and confusion matrices until the evidence lower bound improves by less than
    ``tol``. With one class observed only, the posterior is that class and the
    reliabilities are NaN.

    Raises:
        MissingDependencyError: crowd-kit is not installed.
    """
    matrix = np.asarray(matrix, dtype=float)
    n_items, n_raters = matrix.shape
    item, rater = np.nonzero(~np.isnan(matrix))
    posterior = np.full(n_items, np.nan)
    nan_raters = np.full(n_raters, np.nan)
    if item.size == 0:
        return DawidSkeneFit(posterior, posterior.copy(), nan_raters, nan_raters.copy(), np.nan)
    values = matrix[item, rater].astype(int)
    if np.unique(values).size == 1:
        posterior[np.unique(item)] = float(values[0])
        return DawidSkeneFit(
            posterior, posterior.copy(), nan_raters, nan_raters.copy(), float(values[0])
        )
    import pandas as pd

    aggregation = require_module(
        "crowdkit.aggregation", "crowd-kit", "Dawid-Skene aggregation of annotators"
    )
    data = pd.DataFrame({"task": item, "worker": rater, "label": values})
    with warnings.catch_warnings():
        # crowd-kit 1.4 still passes pandas keywords that pandas 3 deprecates.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        model = aggregation.DawidSkene(n_iter=n_iter, tol=tol).fit(data)
    errors = cast(pd.DataFrame, model.errors_)  # index (worker, observed label), columns true label
    sensitivity, specificity = nan_raters.copy(), nan_raters.copy()
    for r in np.unique(rater):
        sensitivity[r] = _confusion(errors, int(r), said=1, truth=1)
        specificity[r] = _confusion(errors, int(r), said=0, truth=0)
    prior = float(cast(pd.Series, model.priors_)[1])
    posterior = _posterior(matrix, prior, sensitivity, specificity)
    labels = np.where(posterior > 0.5, 1.0, np.where(posterior < 0.5, 0.0, np.nan))
    return DawidSkeneFit(posterior, labels, sensitivity, specificity, prior)


def _confusion(errors: pd.DataFrame, rater: int, *, said: int, truth: int) -> float:
    """P(rater says ``said`` | true class ``truth``); a verdict never used has no row."""
    column = errors[truth]
    if (rater, said) in errors.index:
        return float(column.loc[(rater, said)])
    return 1.0 - float(column.loc[(rater, 1 - said)])


def _posterior(
    matrix: np.ndarray, prior: float, sensitivity: np.ndarray, specificity: np.ndarray
) -> np.ndarray:
    """One E-step: P(hallucinated | an item's votes) under the fitted model (Bayes' rule).

    crowd-kit returns the posteriors of its last E-step and the confusion
    matrices of the M-step after it; recomputing the posteriors here makes the
    returned parameters and posteriors consistent with each other.
    """

    # Probabilities of exactly 0 or 1 would give log(0); 1e-12 changes no decision.
    def log(p: np.ndarray | float) -> np.ndarray:
        return np.log(np.clip(p, 1e-12, 1 - 1e-12))

    said1 = (matrix == 1).astype(float)
    said0 = (matrix == 0).astype(float)
    sens, spec = np.nan_to_num(sensitivity, nan=0.5), np.nan_to_num(specificity, nan=0.5)
    log1 = log(prior) + said1 @ log(sens) + said0 @ log(1 - sens)
    log0 = log(1 - prior) + said0 @ log(spec) + said1 @ log(1 - spec)
    posterior = 1.0 / (1.0 + np.exp(log0 - log1))
    return np.where((said1 + said0).sum(axis=1) > 0, posterior, np.nan)


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
