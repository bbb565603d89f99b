"""Calibration metrics of probabilities: expected calibration error and Brier score.

Both read ``y_score`` as the probability that an item is hallucinated, in
[0, 1]; a detector's raw score is not one, so it is first mapped to a
probability (Platt scaling or isotonic regression fitted on a calibration
split, see :func:`realitycheck.analysis.fit_calibration`). Like the ranking
metrics, each has a weighted kernel that evaluates many weightings
(bootstrap resamples) of the same items at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._names import CALIBRATION_METRICS
from realitycheck.metrics._validation import check_binary, check_numbers, check_same_length
from realitycheck.params import Interval, OneOf, check_arg, param_error

__all__ = ["CALIBRATION_METRICS", "ECE_BINNINGS", "Reliability", "brier", "ece", "reliability"]

FloatArray = npt.NDArray[np.float64]

ECE_BINNINGS: tuple[str, ...] = ("equal_width", "equal_mass")
"""How :func:`ece` bins the probabilities."""

_N_BINS = Interval(int, 1)


def check_probabilities(
    y_true: Any, y_prob: Any, func: str, name: str = "y_prob"
) -> tuple[npt.NDArray[np.bool_], FloatArray]:
    """Labels and probabilities in [0, 1] of one length, or InvalidInputError."""
    labels = check_binary(y_true, "y_true", func)
    probs = check_numbers(y_prob, name, func)
    check_same_length(labels, "y_true", probs, name, func)
    outside = (probs < 0) | (probs > 1)
    if outside.any():
        shown = np.unique(probs[outside])[:3].tolist()
        raise param_error(
            name,
            func,
            "probabilities in [0, 1] (calibrate a raw score first)",
            got=f"{int(outside.sum())} values outside, e.g. {shown}",
        )
    return labels, probs


def bin_edges(probs: FloatArray, n_bins: int, binning: str) -> FloatArray:
    """The ``n_bins + 1`` bin edges of :func:`ece`, as ``sklearn.calibration.calibration_curve``."""
    if binning == "equal_width":
        return np.linspace(0.0, 1.0, n_bins + 1)
    return np.percentile(probs, np.linspace(0.0, 100.0, n_bins + 1))


def bin_ids(probs: FloatArray, edges: FloatArray) -> npt.NDArray[np.intp]:
    """Bin of each probability: bin ``b`` holds ``edges[b] < p <= edges[b + 1]`` (bin 0 from 0)."""
    return np.searchsorted(edges[1:-1], probs, side="left")


@dataclass(frozen=True)
class Reliability:
    """A reliability diagram: per non-empty bin, the mean probability and the observed rate.

    Attributes:
        mean_prob: Mean predicted probability of hallucination in each bin.
        rate: Share of hallucinated items in each bin.
        count: Items in each bin.
        edges: All ``n_bins + 1`` bin edges (empty bins included).
    """

    mean_prob: FloatArray
    rate: FloatArray
    count: npt.NDArray[np.int64]
    edges: FloatArray


def _options(n_bins: Any, binning: Any, func: str) -> None:
    check_arg(n_bins, _N_BINS, name="n_bins", owner=func)
    check_arg(binning, OneOf(ECE_BINNINGS), name="binning", owner=func)


def reliability(
    y_true: Any,
    y_prob: Any,
    *,
    n_bins: int = 10,
    binning: Literal["equal_width", "equal_mass"] = "equal_width",
) -> Reliability:
    """Bin the probabilities and compare each bin's mean probability with its observed rate.

    The bins are those of :func:`ece`; ``mean_prob`` and ``rate`` equal
    ``sklearn.calibration.calibration_curve(y_true, y_prob, n_bins=n_bins)``'s
    ``prob_pred`` and ``prob_true`` (``strategy="uniform"`` for equal width,
    ``"quantile"`` for equal mass).

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_prob: Probabilities of hallucination of shape (n,), in [0, 1].
        n_bins: Number of bins, >= 1.
        binning: ``"equal_width"`` or ``"equal_mass"`` (see :func:`ece`).

    Returns:
        A :class:`Reliability` over the non-empty bins, in increasing order.

    Raises:
        InvalidInputError: Bad shapes, labels, options, or a value outside [0, 1].
    """
    _options(n_bins, binning, "reliability")
    labels, probs = check_probabilities(y_true, y_prob, "reliability")
    edges = bin_edges(probs, n_bins, binning)
    ids = bin_ids(probs, edges)
    count = np.bincount(ids, minlength=n_bins)
    sums = np.bincount(ids, weights=probs, minlength=n_bins)
    hits = np.bincount(ids, weights=labels.astype(np.float64), minlength=n_bins)
    used = count > 0
    return Reliability(
        mean_prob=sums[used] / count[used],
        rate=hits[used] / count[used],
        count=count[used].astype(np.int64),
        edges=edges,
    )


def ece(
    y_true: Any,
    y_prob: Any,
    *,
    n_bins: int = 10,
    binning: Literal["equal_width", "equal_mass"] = "equal_width",
) -> float:
    """Expected calibration error of probabilities of hallucination.

    ``ECE = sum_b (n_b / n) * |rate_b - mean_prob_b|`` over the bins ``b``
    (Naeini et al., 2015; Guo et al., 2017), where ``rate_b`` is the share of
    hallucinated items in the bin and ``mean_prob_b`` their mean probability.
    By default 10 **equal-width** bins on [0, 1]; ``binning="equal_mass"``
    puts the edges at the 0, 1/n_bins, ..., 100 percentiles of ``y_prob``
    (linear interpolation), so bins hold about as many items each. Bin ``b``
    holds ``edges[b] < p <= edges[b + 1]``, the first bin also ``p = 0``, as
    ``sklearn.calibration.calibration_curve`` bins. Empty bins add nothing.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_prob: Probabilities of hallucination of shape (n,), in [0, 1].
        n_bins: Number of bins, >= 1.
        binning: ``"equal_width"`` (default) or ``"equal_mass"``.

    Returns:
        A value in [0, 1]; 0 = perfectly calibrated within every bin; lower
        is better. Defined for one class too.

    Raises:
        InvalidInputError: Bad shapes, labels, options, or a value outside [0, 1].
    """
    _options(n_bins, binning, "ece")
    labels, probs = check_probabilities(y_true, y_prob, "ece")
    ids = bin_ids(probs, bin_edges(probs, n_bins, binning))
    gaps = np.bincount(ids, weights=probs - labels, minlength=n_bins)
    return float(np.abs(gaps).sum() / labels.size)


def brier(y_true: Any, y_prob: Any) -> float:
    """Brier score: the mean squared difference between probability and label.

    ``mean((y_prob - y_true) ** 2)`` with ``y_true`` 1 = hallucinated; equals
    ``sklearn.metrics.brier_score_loss(y_true, y_prob)``.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_prob: Probabilities of hallucination of shape (n,), in [0, 1].

    Returns:
        A value in [0, 1]; 0 = certain and right on every item, 0.25 = a
        constant 0.5; lower is better. Defined for one class too.

    Raises:
        InvalidInputError: Bad shapes, labels, or a value outside [0, 1].
    """
    labels, probs = check_probabilities(y_true, y_prob, "brier")
    return float(np.mean((probs - labels) ** 2))


def weighted_calibration_metric(
    kind: str,
    labels: npt.NDArray[np.bool_],
    probs: FloatArray,
    weights: npt.NDArray[Any],
) -> FloatArray:
    """ECE (10 equal-width bins) or Brier score for many weightings of the same items.

    ``kind`` is ``"ece"`` or ``"brier"``.

    Row ``b`` of ``weights`` gives each item's multiplicity; the result equals
    the metric on the data set in which item ``i`` appears ``weights[b, i]``
    times. Equal-width bins do not depend on the weights, so the per-bin gaps
    are one matrix product (see :func:`calibration_terms`).

    Returns:
        Shape (B,); NaN where a row's weights sum to 0.
    """
    return weighted_calibration_from_terms(kind, calibration_terms(kind, labels, probs), weights)


def calibration_terms(kind: str, labels: npt.NDArray[np.bool_], probs: FloatArray) -> FloatArray:
    """What each item adds to ECE or the Brier score, before weighting (computed once).

    For ``"brier"``, shape (n,): ``(prob - label) ** 2``. For ``"ece"``,
    shape (n, 10): ``prob - label`` in the column of the item's equal-width
    bin, 0 elsewhere.
    """
    if kind == "brier":
        return (probs - labels) ** 2
    ids = bin_ids(probs, bin_edges(probs, 10, "equal_width"))
    gaps = np.zeros((probs.size, 10))
    gaps[np.arange(probs.size), ids] = probs - labels
    return gaps


def weighted_calibration_from_terms(
    kind: str, terms: FloatArray, weights: npt.NDArray[Any]
) -> FloatArray:
    """ECE or Brier score of each row of ``weights`` from :func:`calibration_terms`."""
    w = np.asarray(weights, dtype=np.float64)  # no copy when already float64
    total = w.sum(axis=1)
    if kind == "brier":
        numerator = w @ terms
    else:
        numerator = np.abs(w @ terms).sum(axis=1)
    out = np.full(total.shape, np.nan)
    np.divide(numerator, total, out=out, where=total > 0)
    return out
