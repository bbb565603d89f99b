"""Association between two variables or two rankings: correlation p-values, Kendall's tau-b.

scipy is imported inside the functions, so that importing the metrics stays fast.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from realitycheck.metrics._validation import check_scores
from realitycheck.params import Interval, check_arg, param_error

__all__ = ["correlation_pvalue", "discordant_pairs", "kendall_tau_b"]


def correlation_pvalue(r: float, n: int) -> float:
    """Two-sided p-value of a correlation coefficient under no association.

    Uses ``t = r sqrt((n - 2) / (1 - r^2))`` with ``n - 2`` degrees of freedom,
    which gives the p-value of ``scipy.stats.pearsonr`` (exact for normal data)
    and of ``scipy.stats.spearmanr`` (its t approximation).

    Args:
        r: The coefficient (Pearson's r or Spearman's rho), in [-1, 1].
        n: The number of pairs it was computed on.

    Returns:
        A value in [0, 1]; NaN when ``r`` is NaN or ``n < 3``.

    Raises:
        InvalidInputError: If ``n`` is not an int >= 0.
    """
    check_arg(n, Interval(int, 0), name="n", owner="correlation_pvalue")
    if n < 3 or not np.isfinite(r):
        return float("nan")
    if abs(r) >= 1.0:
        return 0.0
    from scipy.stats import t as student_t

    t = r * float(np.sqrt((n - 2) / (1.0 - r * r)))
    return float(min(1.0, 2 * student_t.sf(abs(t), n - 2)))


def kendall_tau_b(x: Any, y: Any) -> tuple[float, float]:
    """Kendall's tau-b (ties corrected) between two rankings, and its two-sided p-value.

    Equals ``scipy.stats.kendalltau(x, y, variant="b")`` on the pairs where
    neither value is NaN.

    Args:
        x: Values of shape (n,) (e.g. each detector's AUROC under clean labels).
        y: Values of the same items under another condition, shape (n,).

    Returns:
        ``(tau, p_value)``: tau in [-1, 1] (1 = the same order), p in [0, 1];
        ``(nan, nan)`` with fewer than two complete pairs or when either side
        is constant.

    Raises:
        InvalidInputError: If ``x`` and ``y`` are not 1-D arrays of one length.
    """
    a, b = _pair(x, y, "kendall_tau_b")
    keep = ~np.isnan(a) & ~np.isnan(b)
    a, b = a[keep], b[keep]
    if a.size < 2 or np.unique(a).size < 2 or np.unique(b).size < 2:
        return float("nan"), float("nan")
    from scipy.stats import kendalltau

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kendalltau(a, b, variant="b")
    return float(result.statistic), float(result.pvalue)


def discordant_pairs(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[list[tuple[int, int]], int]:
    """Pairs of items ordered one way by ``x`` and the other way by ``y``.

    A pair tied in either sequence is neither concordant nor discordant; a
    pair with a NaN is neither discordant nor tied.

    Args:
        x: Values per item (e.g. human hallucination rates of generators).
        y: Values of the same items under another judge or condition.

    Returns:
        ``(pairs, n_tied)``: the discordant pairs as ``(i, j)`` with
        ``x[i] < x[j]``, in the order of ``itertools.combinations``, and the
        number of pairs tied in at least one sequence.

    Raises:
        InvalidInputError: If ``x`` and ``y`` are not 1-D arrays of one length.
    """
    a, b = _pair(x, y, "discordant_pairs")
    pairs: list[tuple[int, int]] = []
    n_tied = 0
    for i in range(a.size):
        for j in range(i + 1, a.size):
            sign = np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
            if sign == 0:
                n_tied += 1
            elif sign < 0:
                pairs.append((i, j) if a[i] < a[j] else (j, i))
    return pairs, n_tied


def _pair(x: Any, y: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as float arrays, or raise unless both are 1-D of one length."""
    a, b = _exact_order(x), _exact_order(y)
    for name, array in (("x", a), ("y", b)):
        if array.ndim != 1:
            raise param_error(name, owner, "a 1-D array", got=f"an array of shape {array.shape}")
    if a.size != b.size:
        raise param_error("y", owner, f"an array of the length of 'x' ({a.size})", got=str(b.size))
    return a, b


def _exact_order(values: Any) -> np.ndarray:
    """Values as floats; integers beyond 2**53 as exact dense ranks (their order, no new ties)."""
    array = np.asarray(values)
    if array.dtype.kind in "iu" and array.ndim == 1 and array.size:
        return check_scores(array, "x", "kendall_tau_b")[0]
    return array.astype(float)
