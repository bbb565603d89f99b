"""Correlation coefficients between two score vectors (Pearson, Spearman)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._validation import (
    check_numbers,
    check_same_length,
    check_scores,
    warn_undefined,
)

__all__ = ["pearson", "rankdata", "spearman"]


def _check_pair(
    x: Any, y: Any, func: str, *, ranks: bool = False
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    if ranks:  # only the order matters: keep it exact
        xs, ys = check_scores(x, "x", func)[0], check_scores(y, "y", func)[0]
    else:
        xs, ys = check_numbers(x, "x", func), check_numbers(y, "y", func)
    check_same_length(xs, "x", ys, "y", func)
    return xs, ys


def _unit_scale(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``values`` times a power of two (exact) that brings the largest magnitude into [0.5, 1)."""
    largest = float(np.abs(values).max())
    return values if largest == 0 else np.ldexp(values, -int(np.frexp(largest)[1]))


def _pearson(xs: npt.NDArray[np.float64], ys: npt.NDArray[np.float64], func: str) -> float:
    # Scale to magnitudes below 1 first (by powers of two, exactly), so the
    # mean and the products of huge values cannot overflow: 1e308 stays finite.
    xs, ys = _unit_scale(xs), _unit_scale(ys)
    dx = xs - xs.mean()
    dy = ys - ys.mean()
    # Scale by the largest deviation so tiny deviations cannot underflow in the products.
    scale_x, scale_y = np.abs(dx).max(), np.abs(dy).max()
    if scale_x == 0 or scale_y == 0:
        warn_undefined(f"{func} is undefined when an input is constant; returning NaN.")
        return float("nan")
    dx /= scale_x
    dy /= scale_y
    with np.errstate(all="ignore"):
        r = float(dx @ dy / (np.linalg.norm(dx) * np.linalg.norm(dy)))
    if not np.isfinite(r):
        warn_undefined(f"{func} could not be computed in float64 (overflow); returning NaN.")
        return float("nan")
    # Only rounding may put a finite r just outside the range (|r| up to 1 + 1e-15).
    return min(1.0, max(-1.0, r))


def pearson(x: Any, y: Any) -> float:
    """Pearson's linear correlation coefficient.

    Equals the statistic of ``scipy.stats.pearsonr(x, y)``.

    Args:
        x: Values of shape (n,).
        y: Values of shape (n,).

    Returns:
        A value in [-1, 1]; 0 means no linear association. NaN, with an
        :class:`UndefinedMetricWarning`, when ``x`` or ``y`` is constant
        (including n = 1).

    Raises:
        InvalidInputError: Bad shapes, lengths, or non-finite values.
    """
    xs, ys = _check_pair(x, y, "pearson")
    return _pearson(xs, ys, "pearson")


def rankdata(values: Any) -> npt.NDArray[np.float64]:
    """Ranks 1..n of ``values``, ties given the average of the ranks they span.

    The same ranks, to the bit, as ``scipy.stats.rankdata(values)`` (method
    ``average``), without importing scipy.stats (over half a second).
    """
    array = np.asarray(values).ravel()
    # Integers beyond 2**53 are compared as integers (exactly), not as rounded floats.
    x = (
        np.unique(array, return_inverse=True)[1]
        if array.dtype.kind in "iu"
        else array.astype(np.float64)
    )
    order = np.argsort(x, kind="mergesort")
    ordered = x[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(first)  # 1-based tie group of each sorted position
    bounds = np.r_[np.flatnonzero(first), x.size]
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = 0.5 * (bounds[group] + bounds[group - 1] + 1)
    return ranks


def spearman(x: Any, y: Any) -> float:
    """Spearman's rank correlation: Pearson's coefficient of the ranks.

    Tied values get the average of the ranks they span. Equals the statistic of
    ``scipy.stats.spearmanr(x, y)``.

    Args:
        x: Values of shape (n,).
        y: Values of shape (n,).

    Returns:
        A value in [-1, 1]; 1 means a perfectly increasing relation. NaN, with
        an :class:`UndefinedMetricWarning`, when ``x`` or ``y`` is constant.

    Raises:
        InvalidInputError: Bad shapes, lengths, or non-finite values.
    """
    xs, ys = _check_pair(x, y, "spearman", ranks=True)
    return _pearson(rankdata(xs), rankdata(ys), "spearman")
