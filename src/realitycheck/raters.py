"""Dawid–Skene (1979): binary verdicts of several raters fitted into one per item.

It sits below the datasets, so that a loader can aggregate per-annotator
columns, and below :mod:`realitycheck.analysis`, which re-exports it. A
*rating matrix* has one row per item and one column per rater; each cell is
1.0 (hallucinated), 0.0 (faithful) or NaN (no verdict). The fit uses
crowd-kit, imported inside :func:`dawid_skene`;
:class:`~realitycheck.errors.MissingDependencyError` names it when absent.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from realitycheck.errors import MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover - pandas is imported where a frame is built
    import pandas as pd

__all__ = ["DawidSkeneFit", "dawid_skene"]


def _crowdkit() -> Any:
    try:
        return importlib.import_module("crowdkit.aggregation")
    except ImportError:
        raise MissingDependencyError(
            "crowd-kit", extra="studies", purpose="Dawid-Skene aggregation of annotators"
        ) from None


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

    aggregation = _crowdkit()
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
