"""Metrics on hard predictions: accuracy, balanced accuracy, precision, recall, F1, kappa.

Every metric is a function of the four confusion counts. :func:`from_counts`
evaluates one for arrays of counts at once; the public functions and the
bootstrap both go through it, so a resample is scored exactly like a call.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._validation import check_binary, check_same_length, warn_undefined

__all__ = [
    "CLASSIFICATION_METRICS",
    "accuracy",
    "balanced_accuracy",
    "cohen_kappa",
    "f1",
    "f1_macro",
    "f1_weighted",
    "from_counts",
    "precision",
    "recall",
]

FloatArray = npt.NDArray[np.float64]
ClassificationMetric = Literal[
    "accuracy",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "f1_macro",
    "f1_weighted",
    "cohen_kappa",
]
CLASSIFICATION_METRICS: tuple[str, ...] = get_args(ClassificationMetric)


def _ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    """``numerator / denominator``, NaN where the denominator is 0."""
    out = np.full(np.broadcast(numerator, denominator).shape, np.nan)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def from_counts(name: str, tp: Any, fp: Any, fn: Any, tn: Any) -> FloatArray:
    """Evaluate a classification metric from confusion counts, element-wise.

    Args:
        name: One of :data:`CLASSIFICATION_METRICS`.
        tp: True positives (hallucinated items predicted hallucinated).
        fp: False positives.
        fn: False negatives.
        tn: True negatives.

    Returns:
        The metric, broadcast over the count arrays; NaN where it is undefined.
    """
    tp, fp, fn, tn = (np.asarray(c, dtype=np.float64) for c in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    if name == "accuracy":
        return _ratio(tp + tn, n)
    if name == "precision":
        return _ratio(tp, tp + fp)
    if name == "recall":
        return _ratio(tp, tp + fn)
    if name == "balanced_accuracy":
        return (_ratio(tp, tp + fn) + _ratio(tn, tn + fp)) / 2
    if name == "f1":
        return _ratio(2 * tp, 2 * tp + fp + fn)
    if name == "f1_macro":
        return (_ratio(2 * tp, 2 * tp + fp + fn) + _ratio(2 * tn, 2 * tn + fp + fn)) / 2
    if name == "f1_weighted":
        # A class with no true item has weight 0 (its F1 may be undefined).
        positives, negatives = tp + fn, tn + fp
        f1_pos = np.where(positives > 0, _ratio(2 * tp, 2 * tp + fp + fn), 0.0)
        f1_neg = np.where(negatives > 0, _ratio(2 * tn, 2 * tn + fp + fn), 0.0)
        return _ratio(positives * f1_pos + negatives * f1_neg, n)
    if name == "cohen_kappa":
        # 1 - observed disagreement / disagreement expected from the marginals.
        expected = ((tn + fp) * (tp + fp) + (tp + fn) * (tn + fn)) / np.where(n > 0, n, 1)
        return 1 - _ratio(fp + fn, expected)
    raise ValueError(f"unknown classification metric {name!r}")  # pragma: no cover


def _single(name: str, y_true: Any, y_pred: Any, undefined_when: str) -> float:
    labels = check_binary(y_true, "y_true", name)
    preds = check_binary(y_pred, "y_pred", name)
    check_same_length(labels, "y_true", preds, "y_pred", name)
    tp = np.count_nonzero(labels & preds)
    fp = np.count_nonzero(~labels & preds)
    fn = np.count_nonzero(labels & ~preds)
    tn = labels.size - tp - fp - fn
    value = float(from_counts(name, tp, fp, fn, tn))
    if np.isnan(value):
        warn_undefined(f"{name} is undefined when {undefined_when}; returning NaN.")
    return value


def accuracy(y_true: Any, y_pred: Any) -> float:
    """Share of items whose prediction equals the label.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_pred: Predictions of shape (n,), 1/True = predicted hallucinated.

    Returns:
        A value in [0, 1]. Always defined.

    Raises:
        InvalidInputError: Bad shapes, lengths or labels.
    """
    return _single("accuracy", y_true, y_pred, "there is no item")


def balanced_accuracy(y_true: Any, y_pred: Any) -> float:
    """Mean of the recall on hallucinated items and the recall on faithful items.

    Equals ``sklearn.metrics.balanced_accuracy_score`` when ``y_true`` has both
    classes.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_pred: Predictions of shape (n,), 1/True = predicted hallucinated.

    Returns:
        A value in [0, 1]; 0.5 is chance. NaN, with an
        :class:`UndefinedMetricWarning`, when ``y_true`` has one class only
        (scikit-learn then returns the recall of the one class).

    Raises:
        InvalidInputError: Bad shapes, lengths or labels.
    """
    return _single("balanced_accuracy", y_true, y_pred, "y_true has one class only")


def precision(y_true: Any, y_pred: Any) -> float:
    """Share of items predicted hallucinated that are hallucinated.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_pred: Predictions of shape (n,), 1/True = predicted hallucinated.

    Returns:
        A value in [0, 1]. NaN, with an :class:`UndefinedMetricWarning`, when no
        item is predicted hallucinated (scikit-learn returns 0 by default).

    Raises:
        InvalidInputError: Bad shapes, lengths or labels.
    """
    return _single("precision", y_true, y_pred, "no item is predicted hallucinated")


def recall(y_true: Any, y_pred: Any) -> float:
    """Share of hallucinated items that are predicted hallucinated.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_pred: Predictions of shape (n,), 1/True = predicted hallucinated.

    Returns:
        A value in [0, 1]. NaN, with an :class:`UndefinedMetricWarning`, when
        ``y_true`` has no hallucinated item (scikit-learn returns 0 by default).

    Raises:
        InvalidInputError: Bad shapes, lengths or labels.
    """
    return _single("recall", y_true, y_pred, "y_true has no hallucinated item")


def f1(y_true: Any, y_pred: Any) -> float:
    """F1 of the hallucinated class: ``2 TP / (2 TP + FP + FN)``.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_pred: Predictions of shape (n,), 1/True = predicted hallucinated.

    Returns:
        A value in [0, 1]. NaN, with an :class:`UndefinedMetricWarning`, when no
        item is hallucinated or predicted hallucinated.

    Raises:
        InvalidInputError: Bad shapes, lengths or labels.
    """
    return _single("f1", y_true, y_pred, "no item is hallucinated or predicted hallucinated")


def f1_macro(y_true: Any, y_pred: Any) -> float:
    """Unweighted mean of the F1 of the hallucinated and of the faithful class.

    Equals ``sklearn.metrics.f1_score(y_true, y_pred, average="macro")`` when
    both classes occur in ``y_true`` or ``y_pred``.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_pred: Predictions of shape (n,), 1/True = predicted hallucinated.

    Returns:
        A value in [0, 1]. NaN, with an :class:`UndefinedMetricWarning`, when a
        class occurs neither in ``y_true`` nor in ``y_pred`` (its F1 is 0/0).

    Raises:
        InvalidInputError: Bad shapes, lengths or labels.
    """
    return _single("f1_macro", y_true, y_pred, "one class occurs in neither y_true nor y_pred")


def f1_weighted(y_true: Any, y_pred: Any) -> float:
    """Mean of the two per-class F1 scores weighted by each class's share in ``y_true``.

    Equals ``sklearn.metrics.f1_score(y_true, y_pred, average="weighted")``.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_pred: Predictions of shape (n,), 1/True = predicted hallucinated.

    Returns:
        A value in [0, 1]. Always defined: a class absent from ``y_true`` has
        weight 0.

    Raises:
        InvalidInputError: Bad shapes, lengths or labels.
    """
    return _single("f1_weighted", y_true, y_pred, "there is no item")


def cohen_kappa(y_true: Any, y_pred: Any) -> float:
    """Cohen's kappa: agreement of predictions and labels beyond chance.

    Equals ``sklearn.metrics.cohen_kappa_score(y_true, y_pred)``.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_pred: Predictions of shape (n,), 1/True = predicted hallucinated.

    Returns:
        A value in [-1, 1]; 0 is chance agreement, 1 perfect agreement. NaN, with
        an :class:`UndefinedMetricWarning`, when ``y_true`` and ``y_pred`` are
        both constant and equal (no disagreement is expected by chance).

    Raises:
        InvalidInputError: Bad shapes, lengths or labels.
    """
    return _single("cohen_kappa", y_true, y_pred, "y_true and y_pred are the same constant")
