"""AUROCs of many detectors on the same items: many at once, DeLong's test, a paired bootstrap.

DeLong, DeLong & Clarke-Pearson (1988) estimate the covariance of correlated
AUROCs from each item's *placement* (the share of the other class it
outranks, ties counting one half); Sun & Xu (2014) read the placements off
three midrankings, so the cost is that of sorting. The paired bootstrap
resamples items once for both detectors (the resamples of
:func:`~realitycheck.metrics.bootstrap_ci`) and reads the interval and a
two-sided p-value off the resampled differences. scipy is imported inside the
functions, so that importing the metrics stays fast.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._bootstrap import bootstrap_distribution
from realitycheck.metrics._ranking import auroc
from realitycheck.metrics._validation import UndefinedMetricWarning, check_scores
from realitycheck.params import Interval, check_arg, param_error

__all__ = ["DeLong", "PairedBootstrap", "auroc_many", "delong", "paired_auroc_bootstrap"]

FloatArray = npt.NDArray[np.float64]


def auroc_many(y_true: Any, y_score: Any) -> FloatArray:
    """AUROC of each score row against each label row, by the rank-sum formula.

    Args:
        y_true: Labels of shape (m, n), 1 = hallucinated, no missing values
            (e.g. m noisy copies of the same labels).
        y_score: Scores of shape (k, n), higher = more likely hallucinated, finite.

    Returns:
        Shape (m, k): the area under the ROC curve in [0, 1] (ties count one
        half, as ``sklearn.metrics.roc_auc_score``); NaN where a label row has
        one class only (or there is no item).

    Raises:
        InvalidInputError: If the labels are not 0/1, a score is not finite, or
            the shapes do not match.
    """
    from scipy.stats import rankdata

    labels, scores = _labels_scores(y_true, y_score, "auroc_many", labels_ndim=2)
    ranks = rankdata(scores, axis=1)
    n_pos = labels.sum(axis=1)
    n_neg = labels.shape[1] - n_pos
    rank_sums = labels @ ranks.T
    denominator = (n_pos * n_neg)[:, None]
    out = np.full(rank_sums.shape, np.nan)
    np.divide(
        rank_sums - (n_pos * (n_pos + 1) / 2)[:, None],
        denominator,
        out=out,
        where=denominator > 0,
    )
    return out


@dataclass(frozen=True)
class DeLong:
    """DeLong's test of correlated AUROCs.

    Attributes:
        auroc: Each detector's AUROC, shape (k,), in [0, 1].
        covariance: Their estimated covariance, shape (k, k).
        z: ``(A1 - A2) / sqrt(var(A1 - A2))`` for the first two detectors.
        p_value: Its two-sided normal p-value, in [0, 1].
        note: Why ``z`` / ``p_value`` are NaN, if they are.
    """

    auroc: FloatArray
    covariance: FloatArray
    z: float
    p_value: float
    note: str = ""


def delong(y_true: Any, y_score: Any) -> DeLong:
    """DeLong's test for the AUROCs of detectors scored on the same items (fast algorithm).

    For ``m`` positives and ``n`` negatives, each positive's placement is the
    share of negatives it outranks, ``(rank among all - rank among positives)
    / n`` with midranks; each negative's is the share of positives that do not
    outrank it. The AUROCs are the positives' mean placements and their
    covariance is ``S10 / m + S01 / n``, the sample covariances (ddof 1) of
    the positives' and negatives' placements across detectors.

    Args:
        y_true: Labels of shape (n,), 1 = hallucinated.
        y_score: Shape (k, n) (or (n,) for one detector); higher = more likely
            hallucinated.

    Returns:
        A :class:`DeLong`: AUROCs in [0, 1] and a p-value in [0, 1].
        Everything is NaN, with a note, when a class has fewer than 2 items;
        ``z`` and ``p_value`` are NaN when there is one detector or the
        difference has zero variance (identical rankings).

    Raises:
        InvalidInputError: If the labels are not 0/1, a score is not finite, or
            the shapes do not match.
    """
    from scipy import stats

    labels, scores = _labels_scores(y_true, np.atleast_2d(y_score), "delong", labels_ndim=1)
    y = labels.astype(bool)
    m, n = int(y.sum()), int((~y).sum())
    k = scores.shape[0]
    if m < 2 or n < 2:
        nan = np.full(k, np.nan)
        return DeLong(nan, np.full((k, k), np.nan), np.nan, np.nan, "fewer than 2 items in a class")
    pos, neg = scores[:, y], scores[:, ~y]
    ranks_all = stats.rankdata(np.hstack([pos, neg]), axis=1)
    pos_place = (ranks_all[:, :m] - stats.rankdata(pos, axis=1)) / n
    neg_place = 1.0 - (ranks_all[:, m:] - stats.rankdata(neg, axis=1)) / m
    areas = pos_place.mean(axis=1)
    cov = np.atleast_2d(np.cov(pos_place)) / m + np.atleast_2d(np.cov(neg_place)) / n
    if k < 2:
        return DeLong(areas, cov, np.nan, np.nan, "one detector: nothing to compare")
    var = cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]
    if not var > 1e-15:
        return DeLong(areas, cov, np.nan, np.nan, "the AUROC difference has zero variance")
    z = float((areas[0] - areas[1]) / np.sqrt(var))
    return DeLong(areas, cov, z, float(2 * stats.norm.sf(abs(z))))


@dataclass(frozen=True)
class PairedBootstrap:
    """Paired-bootstrap summary of ``AUROC(a) - AUROC(b)``.

    Attributes:
        difference: The difference on all items, in [-1, 1].
        ci_low: Lower end of the percentile interval.
        ci_high: Upper end.
        p_value: Two-sided: twice the smaller share of resamples on either side
            of 0, capped at 1.
        n_resamples: Resamples on which both AUROCs were defined.
    """

    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    n_resamples: int


def paired_auroc_bootstrap(
    y_true: Any,
    score_a: Any,
    score_b: Any,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedBootstrap:
    """Paired bootstrap of ``AUROC(a) - AUROC(b)``: both scored on the same resamples.

    A resampled difference of exactly 0 counts on both sides of 0, so the
    p-value of identical detectors is 1; its resolution is ``2 /
    n_resamples`` and 0 means that no resample crossed 0. Resamples with one
    class only are dropped.

    Args:
        y_true: Labels of shape (n,), 1 = hallucinated.
        score_a: Scores of shape (n,) of the first detector.
        score_b: Scores of shape (n,) of the second detector.
        n_resamples: Number of resamples.
        confidence: Coverage of the interval, in (0, 1).
        seed: Seed of the resampling (the resamples of
            :func:`~realitycheck.metrics.resample_indices`).

    Returns:
        A :class:`PairedBootstrap`: the difference and its interval in [-1, 1],
        the p-value in [0, 1] (NaN interval and p-value if no resample had
        both classes).

    Raises:
        InvalidInputError: On a bad option or input.
    """
    check_arg(
        confidence,
        Interval(float, 0, 1, closed="neither"),
        name="confidence",
        owner="paired_auroc_bootstrap",
    )
    y = np.asarray(y_true).astype(bool)
    both = np.vstack([np.asarray(score_a, dtype=float), np.asarray(score_b, dtype=float)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        dist = bootstrap_distribution("auroc", y, both, n_resamples=n_resamples, seed=seed)
        observed = auroc(y, both[0]) - auroc(y, both[1])
    diff = dist[0] - dist[1]
    diff = diff[~np.isnan(diff)]
    if diff.size == 0:
        return PairedBootstrap(observed, np.nan, np.nan, np.nan, 0)
    low, high = np.quantile(diff, ((1 - confidence) / 2, (1 + confidence) / 2))
    side = min(float(np.mean(diff <= 0)), float(np.mean(diff >= 0)))
    return PairedBootstrap(observed, float(low), float(high), min(1.0, 2 * side), int(diff.size))


def _labels_scores(
    y_true: Any, y_score: Any, owner: str, *, labels_ndim: int
) -> tuple[FloatArray, FloatArray]:
    """Labels (0/1 floats) and a 2-D score array, or raise in the one message shape."""
    labels = np.asarray(y_true, dtype=float)
    scores = np.asarray(y_score)
    if (scores.dtype.kind in "iu" or scores.dtype == np.longdouble) and scores.ndim == 2:
        # Order-exact: integers beyond 2**53 become exact ranks rather than tie.
        scores = check_scores(scores, "y_score", owner, ndim=(2,))[0]
    else:
        scores = scores.astype(float)
    if labels.ndim != labels_ndim:
        raise param_error(
            "y_true", owner, f"a {labels_ndim}-D array", got=f"an array of shape {labels.shape}"
        )
    if scores.ndim != 2:
        raise param_error("y_score", owner, "a 2-D array", got=f"an array of shape {scores.shape}")
    if scores.shape[1] != labels.shape[-1]:
        raise param_error(
            "y_score",
            owner,
            f"an array with one value per item of 'y_true' ({labels.shape[-1]})",
            got=str(scores.shape[1]),
        )
    if not np.isin(labels, (0.0, 1.0)).all():
        raise param_error(
            "y_true", owner, "an array of 0/1 or bool labels (1 = hallucinated)", got="other values"
        )
    if not np.isfinite(scores).all():
        raise param_error("y_score", owner, "an array of finite numbers", got="NaN or infinity")
    return labels, scores
