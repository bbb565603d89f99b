"""Selective prediction: the prediction-rejection curve and ratio (PRR) of LM-Polygraph.

A detector is used to *reject* (abstain on) the responses it finds most
likely hallucinated. The rejection curve follows the accuracy of the
responses kept (their share that is not hallucinated) as the rejection rate
grows; PRR compares the area under it with a random and an oracle rejection.
Ties are handled exactly as the expected value over every order of the tied
items, so the result does not depend on the input order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._names import REJECTION_METRICS
from realitycheck.metrics._ranking import check_labels_scores
from realitycheck.metrics._validation import warn_undefined

__all__ = ["REJECTION_METRICS", "RejectionCurve", "prr", "rejection_curve"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RejectionCurve:
    """Accuracy of the kept responses at each rejection rate, for a detector and the two bounds.

    Attributes:
        rate: Rejection rates ``k / n`` for ``k = 0 .. n - 1`` (the share of
            responses rejected, highest scores first).
        accuracy: Share of the kept responses that are not hallucinated
            (expected value over the orders of tied scores).
        oracle: The same when the hallucinated responses are rejected first.
        random: The expected accuracy of a random rejection (constant: the
            share of responses not hallucinated).
    """

    rate: FloatArray
    accuracy: FloatArray
    oracle: FloatArray
    random: FloatArray


def _kept_quality(labels: npt.NDArray[np.bool_], scores: FloatArray) -> FloatArray:
    """``C[m - 1]`` = expected number of correct items among the ``m`` lowest scores, m = 1..n.

    Items with equal scores enter together: within a run of ties the count
    grows linearly, which is its expectation over the orders of the run.
    """
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    ends = np.r_[np.flatnonzero(np.diff(sorted_scores)) + 1, scores.size]
    correct = np.cumsum(~labels[order], dtype=np.float64)[ends - 1]
    m = np.arange(1, scores.size + 1, dtype=np.float64)
    return np.interp(m, np.r_[0.0, ends.astype(np.float64)], np.r_[0.0, correct])


def rejection_curve(y_true: Any, y_score: Any) -> RejectionCurve:
    """Compute the prediction-rejection curve of a detector.

    At rejection rate ``k / n`` the ``k`` responses with the highest scores are
    rejected and the accuracy of the ``n - k`` kept ones is measured.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_score: Scores of shape (n,), higher = more likely hallucinated.

    Returns:
        A :class:`RejectionCurve`; every accuracy lies in [0, 1].

    Raises:
        InvalidInputError: Bad shapes, lengths, labels, or non-finite scores.
    """
    labels, scores, _ = check_labels_scores(y_true, y_score, "rejection_curve")
    n = labels.size
    kept = np.arange(n, 0, -1, dtype=np.float64)
    correct = float((~labels).sum())
    quality = _kept_quality(labels, scores)[::-1]
    oracle = np.minimum(kept, correct)
    return RejectionCurve(
        rate=np.arange(n, dtype=np.float64) / n,
        accuracy=quality / kept,
        oracle=oracle / kept,
        random=np.full(n, correct / n),
    )


def prr(y_true: Any, y_score: Any) -> float:
    """Prediction-rejection ratio as LM-Polygraph defines it (Malinin et al.; Fadeeva et al. 2023).

    The quality of a response is 1 when it is not hallucinated and 0 when it
    is (LM-Polygraph's quality target, min-max normalised, is exactly this
    for 0/1 labels); the detector score is the uncertainty, higher = reject
    first. The prediction-rejection area is the mean, over the rejection
    rates ``k / n`` (``k = 0 .. n - 1``), of the mean quality of the kept
    responses: ``PRA = (1/n) sum_{m=1..n} C_m / m`` with ``C_m`` the quality
    summed over the ``m`` lowest scores (LM-Polygraph's
    ``PredictionRejectionArea``). Then

    ``PRR = (PRA(score) - PRA(random)) / (PRA(oracle) - PRA(random))``

    where the oracle rejects hallucinated responses first and ``PRA(random)``
    is the expected area of a random order, the mean quality (LM-Polygraph
    estimates it from 1,000 shuffles; the expectation is exact here). Ties
    count as the expected value over the orders of the tied responses
    (LM-Polygraph breaks them by ``np.argsort``).

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_score: Scores of shape (n,), higher = more likely hallucinated.

    Returns:
        A value in [-1, 1]: 1 = rejects every hallucinated response first, 0 =
        no better than random, negative = worse. NaN, with an
        :class:`UndefinedMetricWarning`, when ``y_true`` has one class only
        (oracle and random coincide; LM-Polygraph then returns the raw area).

    Raises:
        InvalidInputError: Bad shapes, lengths, labels, or non-finite scores.
    """
    labels, scores, _ = check_labels_scores(y_true, y_score, "prr")
    if labels.all() or not labels.any():
        warn_undefined("prr is undefined when y_true has one class only; returning NaN.")
        return float("nan")
    weights = np.ones((1, labels.size), dtype=np.int64)
    return float(weighted_prr(labels, scores, weights)[0])


def _harmonic(n: int) -> tuple[FloatArray, FloatArray]:
    """``H[k] = 1 + 1/2 + ... + 1/k`` and ``G[k] = H[0] + ... + H[k - 1] = k H[k] - k``."""
    k = np.arange(n + 1, dtype=np.float64)
    harmonic = np.r_[0.0, np.cumsum(1.0 / k[1:])]
    return harmonic, k * harmonic - k


@dataclass(frozen=True)
class RejectionOrder:
    """One detector's scores in ascending order, built once for every weighting.

    Attributes:
        order: Item positions by ascending score (stable).
        correct_items: Whether each item of that order is correct (not hallucinated).
        last: Position (in that order) of the last item of each run of tied
            scores; None when no two scores tie.
    """

    order: npt.NDArray[np.intp]
    correct_items: npt.NDArray[np.bool_]
    last: npt.NDArray[np.intp] | None

    @classmethod
    def build(cls, labels: npt.NDArray[np.bool_], scores: FloatArray) -> RejectionOrder:
        """Sort one detector's scores against the labels."""
        order = np.argsort(scores, kind="stable")
        sorted_scores = scores[order]
        starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
        last = None if starts.size == scores.size else np.r_[starts[1:], scores.size] - 1
        return cls(order=order, correct_items=~labels[order], last=last)


def weighted_prr(
    labels: npt.NDArray[np.bool_], scores: FloatArray, weights: npt.NDArray[Any]
) -> FloatArray:
    """PRR for many weightings (e.g. bootstrap resamples) of the same items at once.

    Row ``b`` of ``weights`` gives each item's multiplicity; the result equals
    :func:`prr` on the data set in which item ``i`` appears ``weights[b, i]``
    times. See :func:`weighted_prr_sorted`, which this calls after sorting.

    Returns:
        Shape (B,); NaN where a row has one class only.
    """
    return weighted_prr_sorted(RejectionOrder.build(labels, scores), weights)


def weighted_prr_sorted(index: RejectionOrder, weights: npt.NDArray[Any]) -> FloatArray:
    """PRR for many weightings of the items of ``index`` (sorted once, used for every chunk).

    A correct response at (0-based) position ``k`` of the ascending
    order is kept at rejection sizes ``m = k + 1 .. N``, so it adds
    ``sum_{m > k} 1 / m = H[N] - H[k]`` to ``sum_m C_m / m``; the copies of an
    item at positions ``a .. b - 1`` add ``w H[N] - (G[b] - G[a])`` with
    ``G[k] = k H[k] - k`` (harmonic numbers), and a run of tied scores shares
    its correct weight evenly over its positions. Every resample thus costs a
    running sum of its weights and two look-ups per correct item.

    Returns:
        Shape (B,); NaN where a row has one class only.
    """
    # Half-width integers halve the memory traffic when the totals fit.
    fits = int(weights.sum(axis=1).max()) < np.iinfo(np.int32).max
    dtype: type[np.signedinteger[Any]] = np.int32 if fits else np.int64
    w: npt.NDArray[np.signedinteger[Any]] = np.asarray(weights[:, index.order], dtype=dtype)
    ends: npt.NDArray[np.signedinteger[Any]] = np.cumsum(w, axis=1, dtype=dtype)
    running_q = None
    if index.last is not None:
        running_q = np.cumsum(w * index.correct_items, axis=1, dtype=dtype)
    return prr_from_running_sums(index, w, ends, running_q)


def prr_from_running_sums(
    index: RejectionOrder,
    w: npt.NDArray[Any],
    ends: npt.NDArray[np.signedinteger[Any]],
    running_q: npt.NDArray[np.signedinteger[Any]] | None,
) -> FloatArray:
    """PRR of each row from its weights in ascending score order and their running sums.

    Args:
        index: The detector's :class:`RejectionOrder`.
        w: Shape (B, n): the weights of the items of ``index.order``, in that order.
        ends: Shape (B, n): ``cumsum(w, axis=1)`` (integers).
        running_q: Shape (B, n): ``cumsum(w * index.correct_items, axis=1)``;
            needed only when scores tie (``index.last`` is not None).

    Returns:
        Shape (B,), as :func:`weighted_prr_sorted`.
    """
    correct_items = index.correct_items
    total = ends[:, -1]
    harmonic, partial = _harmonic(int(total.max()))
    if index.last is None:  # no tie: one look-up pair per correct item
        end = ends[:, correct_items]
        kept = w[:, correct_items]
        correct = kept.sum(axis=1, dtype=np.int64)
        inner = (partial[end] - partial[end - kept]).sum(axis=1)
    else:
        # Running sums read at the last item of each run of ties give the runs' totals.
        assert running_q is not None
        last = index.last
        end = ends[:, last]
        group_w = np.diff(end, axis=1, prepend=0)
        group_q = np.diff(running_q[:, last], axis=1, prepend=0)
        share = np.divide(group_q, group_w, out=np.zeros(group_q.shape), where=group_w > 0)
        correct = group_q.sum(axis=1, dtype=np.int64)
        inner = (share * (partial[end] - partial[end - group_w])).sum(axis=1)
    area = correct * harmonic[total] - inner
    oracle = correct + correct * (harmonic[total] - harmonic[correct])
    random = correct.astype(np.float64)
    out = np.full(total.shape, np.nan)
    defined = (correct > 0) & (correct < total)
    np.divide(area - random, oracle - random, out=out, where=defined)
    return out
