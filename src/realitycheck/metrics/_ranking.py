"""Ranking metrics: ROC and precision-recall curves, AUROC and PR-AUC.

The area metrics are computed by one exact kernel that also accepts integer
weights per item (multiplicities), so the bootstrap evaluates every resample
with the same code, for all resamples at once, as a single call does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._validation import (
    check_binary,
    check_same_length,
    check_scores,
    warn_undefined,
)

__all__ = ["auroc", "pr_auc", "precision_recall_curve", "roc_curve"]

FloatArray = npt.NDArray[np.float64]


def check_labels_scores(
    y_true: Any, y_score: Any, func: str
) -> tuple[npt.NDArray[np.bool_], FloatArray, FloatArray | None]:
    """Labels, order-exact scores and the float64 value of each rank (see :func:`check_scores`)."""
    labels = check_binary(y_true, "y_true", func)
    scores, values = check_scores(y_score, "y_score", func)
    check_same_length(labels, "y_true", scores, "y_score", func)
    return labels, scores, values


def in_score_units(thresholds: FloatArray, values: FloatArray | None) -> FloatArray:
    """Thresholds found on exact ranks, back in the scores' units (float64)."""
    if values is None:
        return thresholds
    finite = np.isfinite(thresholds)
    out = thresholds.copy()
    out[finite] = values[thresholds[finite].astype(np.int64)]
    return out


def counts_at_thresholds(
    labels: npt.NDArray[np.bool_], scores: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Return (fps, tps, thresholds) for each distinct score, highest first.

    At threshold ``t`` an item is predicted hallucinated iff its score is ``>= t``.
    """
    order = np.argsort(scores, kind="mergesort")[::-1]
    sorted_scores = scores[order]
    # The last position of each run of equal scores in the descending order.
    ends = np.r_[np.flatnonzero(np.diff(sorted_scores)), sorted_scores.size - 1]
    tps = np.cumsum(labels[order], dtype=np.float64)[ends]
    fps = (ends + 1) - tps
    return fps, tps, sorted_scores[ends]


def roc_curve(y_true: Any, y_score: Any) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Compute the receiver operating characteristic curve.

    The output equals ``sklearn.metrics.roc_curve(y_true, y_score)`` with its
    defaults (collinear intermediate points dropped, a first point at
    threshold ``inf``).

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_score: Scores of shape (n,), higher = more likely hallucinated.

    Returns:
        ``(fpr, tpr, thresholds)``: false and true positive rates in [0, 1], both
        non-decreasing and starting at 0, for the decreasing ``thresholds``
        (predict hallucinated iff ``y_score >= threshold``). With no negative
        (positive) item, ``fpr`` (``tpr``) is all NaN and an
        :class:`UndefinedMetricWarning` is emitted.

    Raises:
        InvalidInputError: Bad shapes, lengths, labels, or non-finite scores.
    """
    labels, scores, values = check_labels_scores(y_true, y_score, "roc_curve")
    fps, tps, thresholds = counts_at_thresholds(labels, scores)
    if fps.size > 2:
        # Keep the end points and every corner; drop points collinear with both
        # neighbours (a zero second difference in both counts).
        corner = np.logical_or(np.diff(fps, 2) != 0, np.diff(tps, 2) != 0)
        keep = np.flatnonzero(np.r_[True, corner, True])
        fps, tps, thresholds = fps[keep], tps[keep], thresholds[keep]
    fps = np.r_[0.0, fps]
    tps = np.r_[0.0, tps]
    thresholds = np.r_[np.inf, thresholds]
    if fps[-1] <= 0:
        warn_undefined("roc_curve: y_true has no negative item; the false positive rate is NaN.")
        fpr = np.full(fps.shape, np.nan)
    else:
        fpr = fps / fps[-1]
    if tps[-1] <= 0:
        warn_undefined("roc_curve: y_true has no positive item; the true positive rate is NaN.")
        tpr = np.full(tps.shape, np.nan)
    else:
        tpr = tps / tps[-1]
    return fpr, tpr, in_score_units(thresholds, values)


def precision_recall_curve(y_true: Any, y_score: Any) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Compute precision-recall pairs for every distinct score threshold.

    The output equals ``sklearn.metrics.precision_recall_curve(y_true, y_score)``
    with its defaults, except when ``y_true`` has no positive item: recall is
    then undefined, so it is NaN (with an :class:`UndefinedMetricWarning`) where
    scikit-learn sets it to 1.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_score: Scores of shape (n,), higher = more likely hallucinated.

    Returns:
        ``(precision, recall, thresholds)``: precision and recall in [0, 1] with
        one more entry than the increasing ``thresholds``; the last pair is
        (1, 0) and has no threshold. Recall is non-increasing.

    Raises:
        InvalidInputError: Bad shapes, lengths, labels, or non-finite scores.
    """
    labels, scores, values = check_labels_scores(y_true, y_score, "precision_recall_curve")
    fps, tps, thresholds = counts_at_thresholds(labels, scores)
    # At least one item is predicted positive at every threshold: no zero division.
    precision = tps / (tps + fps)
    if tps[-1] == 0:
        warn_undefined("precision_recall_curve: y_true has no positive item; recall is NaN.")
        recall = np.full(tps.shape, np.nan)
    else:
        recall = tps / tps[-1]
    thresholds = in_score_units(thresholds[::-1], values)
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0], thresholds


@dataclass(frozen=True)
class RankIndex:
    """Where each hallucinated item's score falls among the scores of one detector.

    Built once per detector; the item weights (multiplicities) can then vary
    freely. All arrays hold item positions in the original arrays, or counts.

    Attributes:
        pos_items: Positions of the positive items, in their original order.
        pos_sorted: Positions of the positive items, by ascending score.
        neg_sorted: Positions of the negative items, by ascending score.
        neg_below: Per positive, the number of negatives with a lower score.
        neg_not_above: Per positive, the number of negatives with a score <= its own.
        pos_below: Per positive, the number of positives with a lower score.
    """

    pos_items: npt.NDArray[np.intp]
    pos_sorted: npt.NDArray[np.intp]
    neg_sorted: npt.NDArray[np.intp]
    neg_below: npt.NDArray[np.intp]
    neg_not_above: npt.NDArray[np.intp]
    pos_below: npt.NDArray[np.intp]

    @classmethod
    def build(cls, labels: npt.NDArray[np.bool_], scores: FloatArray) -> RankIndex:
        """Index one detector's scores against the labels."""
        pos_items = np.flatnonzero(labels)
        neg_items = np.flatnonzero(~labels)
        pos_scores = scores[pos_items]
        neg_order = np.argsort(scores[neg_items], kind="stable")
        pos_order = np.argsort(pos_scores, kind="stable")
        neg_sorted_scores = scores[neg_items][neg_order]
        return cls(
            pos_items=pos_items,
            pos_sorted=pos_items[pos_order],
            neg_sorted=neg_items[neg_order],
            neg_below=np.searchsorted(neg_sorted_scores, pos_scores, side="left"),
            neg_not_above=np.searchsorted(neg_sorted_scores, pos_scores, side="right"),
            pos_below=np.searchsorted(pos_scores[pos_order], pos_scores, side="left"),
        )


@dataclass(frozen=True)
class WeightedItems:
    """Many weightings (e.g. bootstrap resamples) of the same labelled items.

    Holds what every detector needs from the weights, computed once, and the
    scratch arrays the kernel fills: large temporaries cost more to allocate
    (page faults) than to fill, so they are reused across detectors.

    Attributes:
        weights: Non-negative integer multiplicities, shape (B, n), of an
            integer type that holds ``2 * weights.sum(axis=1)``.
        pos_weights: The positives' weights as float64, shape (B, n_pos), in
            the order of ``np.flatnonzero(labels)``.
        n_pos: Total weight of the positives per row, shape (B,).
        n_neg: Total weight of the negatives per row, shape (B,).
        cum_neg: Scratch, shape (B, n_neg + 1).
        cum_pos: Scratch, shape (B, n_pos + 1).
        first: Scratch, shape (B, n_pos).
        second: Scratch, shape (B, n_pos).
    """

    weights: npt.NDArray[Any]
    pos_weights: FloatArray
    n_pos: npt.NDArray[np.int64]
    n_neg: npt.NDArray[np.int64]
    cum_neg: npt.NDArray[Any]
    cum_pos: npt.NDArray[Any]
    first: npt.NDArray[Any]
    second: npt.NDArray[Any]

    @classmethod
    def prepare(cls, weights: npt.NDArray[Any], labels: npt.NDArray[np.bool_]) -> WeightedItems:
        """Precompute the label-dependent parts of ``weights`` (shape (B, n))."""
        pos_weights = weights[:, labels]
        n_pos = pos_weights.sum(axis=1, dtype=np.int64)
        rows, n_pos_items = pos_weights.shape
        return cls(
            weights=weights,
            pos_weights=pos_weights.astype(np.float64),
            n_pos=n_pos,
            n_neg=weights.sum(axis=1, dtype=np.int64) - n_pos,
            cum_neg=np.empty((rows, labels.size - n_pos_items + 1), dtype=weights.dtype),
            cum_pos=np.empty((rows, n_pos_items + 1), dtype=weights.dtype),
            first=np.empty((rows, n_pos_items), dtype=weights.dtype),
            second=np.empty((rows, n_pos_items), dtype=weights.dtype),
        )


def _cumulative(
    weights: npt.NDArray[Any], items: npt.NDArray[np.intp], out: npt.NDArray[Any]
) -> npt.NDArray[Any]:
    """Fill ``out`` with row-wise running sums of ``weights[:, items]`` after a zero column."""
    out[:, 0] = 0
    body = out[:, 1:]
    # mode="clip" skips the bounds-check copy; the positions are valid by construction.
    np.take(weights, items, axis=1, out=body, mode="clip")
    np.cumsum(body, axis=1, out=body)
    return out


def weighted_rank_metric(
    kind: Literal["auroc", "pr_auc"], index: RankIndex, items: WeightedItems
) -> FloatArray:
    """AUROC or average precision for many weightings of the same items at once.

    Row ``b`` of ``items.weights`` gives each item's multiplicity; the result
    equals the metric on the data set in which item ``i`` appears
    ``weights[b, i]`` times (ties handled exactly: AUROC counts a tied pair as
    one half; average precision groups tied scores into one threshold, as
    scikit-learn does).

    Args:
        kind: ``"auroc"`` or ``"pr_auc"``.
        index: The detector's :class:`RankIndex`, built on the same labels.
        items: The weights, prepared with :meth:`WeightedItems.prepare`.

    Returns:
        Shape (B,); NaN where the metric is undefined (no positive weight, or for
        AUROC no negative weight).
    """
    cum_neg = _cumulative(items.weights, index.neg_sorted, items.cum_neg)
    first, second = items.first, items.second
    if kind == "auroc":
        # Mann-Whitney: each (positive, negative) pair counts 1 if the positive
        # scores higher, 1/2 if tied. Twice the count is an exact integer.
        np.take(cum_neg, index.neg_below, axis=1, out=first, mode="clip")
        np.take(cum_neg, index.neg_not_above, axis=1, out=second, mode="clip")
        np.add(first, second, out=first)
        # Float64 sums of integers are exact below 2**53 (n up to ~6e7 items).
        numerator = np.einsum("ij,ij->i", items.pos_weights, first, dtype=np.float64)
        denominator = (2 * items.n_pos * items.n_neg).astype(np.float64)
    else:
        # Each positive adds its weight times the precision at its own score.
        cum_pos = _cumulative(items.weights, index.pos_sorted, items.cum_pos)
        true_pos = np.take(cum_pos, index.pos_below, axis=1, out=first, mode="clip")
        np.subtract(items.n_pos[:, None], true_pos, out=true_pos, casting="same_kind")
        predicted = np.take(cum_neg, index.neg_below, axis=1, out=second, mode="clip")
        np.subtract(items.n_neg[:, None], predicted, out=predicted, casting="same_kind")
        predicted += true_pos
        # A positive of weight 0 may have nothing scored at or above it; it adds
        # 0 either way, so the guard against 0/0 changes no result.
        np.maximum(predicted, 1, out=predicted)
        numerator = np.einsum("ij,ij->i", items.pos_weights, true_pos / predicted)
        denominator = items.n_pos.astype(np.float64)
    values = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=values, where=denominator > 0)
    return values


def _single_rank_metric(
    kind: Literal["auroc", "pr_auc"], labels: npt.NDArray[np.bool_], scores: FloatArray
) -> float:
    items = WeightedItems.prepare(np.ones((1, labels.size), dtype=np.int64), labels)
    return float(weighted_rank_metric(kind, RankIndex.build(labels, scores), items)[0])


def auroc(y_true: Any, y_score: Any) -> float:
    """Area under the ROC curve: how well scores rank hallucinated items first.

    Equals ``sklearn.metrics.roc_auc_score(y_true, y_score)``: the probability
    that a random hallucinated item scores higher than a random faithful one,
    ties counting one half.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_score: Scores of shape (n,), higher = more likely hallucinated.

    Returns:
        A value in [0, 1]; 0.5 is chance, 1 a perfect ranking. NaN, with an
        :class:`UndefinedMetricWarning`, when ``y_true`` has one class only.

    Raises:
        InvalidInputError: Bad shapes, lengths, labels, or non-finite scores.
    """
    labels, scores, _ = check_labels_scores(y_true, y_score, "auroc")
    if labels.all() or not labels.any():
        warn_undefined("auroc is undefined when y_true has one class only; returning NaN.")
        return float("nan")
    return _single_rank_metric("auroc", labels, scores)


def pr_auc(y_true: Any, y_score: Any) -> float:
    """Area under the precision-recall curve, as average precision.

    Equals ``sklearn.metrics.average_precision_score(y_true, y_score)``: the
    step-wise sum over thresholds of (increase in recall) x precision, without
    interpolation; tied scores form one threshold.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_score: Scores of shape (n,), higher = more likely hallucinated.

    Returns:
        A value in [0, 1]; chance is the share of hallucinated items, 1 a
        perfect ranking. With only hallucinated items it is 1. NaN, with an
        :class:`UndefinedMetricWarning`, when ``y_true`` has no hallucinated item.

    Raises:
        InvalidInputError: Bad shapes, lengths, labels, or non-finite scores.
    """
    labels, scores, _ = check_labels_scores(y_true, y_score, "pr_auc")
    if not labels.any():
        warn_undefined("pr_auc is undefined when y_true has no positive item; returning NaN.")
        return float("nan")
    return _single_rank_metric("pr_auc", labels, scores)
