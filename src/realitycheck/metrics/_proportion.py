"""Confidence intervals of a binomial proportion."""

from __future__ import annotations

from typing import Any

import numpy as np

from realitycheck.params import Interval, check_arg

__all__ = ["wilson_interval"]


def wilson_interval(successes: Any, n: Any, *, confidence: float = 0.95) -> tuple[Any, Any]:
    """Wilson score interval of a binomial proportion ``successes / n``, element-wise.

    Equals ``statsmodels.stats.proportion.proportion_confint(successes, n,
    alpha=1 - confidence, method="wilson")`` and
    ``scipy.stats.binomtest(successes, n).proportion_ci(confidence, "wilson")``.

    Args:
        successes: Counts of successes, a scalar or an array.
        n: Numbers of trials, of the same shape; 0 gives NaN bounds.
        confidence: Nominal coverage, in (0, 1).

    Returns:
        ``(low, high)``, each in [0, 1]: floats for scalar inputs, arrays
        otherwise; NaN where ``n`` is 0.

    Raises:
        InvalidInputError: If ``confidence`` is not in (0, 1).
    """
    from scipy.stats import norm

    check_arg(
        confidence,
        Interval(float, 0, 1, closed="neither"),
        name="confidence",
        owner="wilson_interval",
    )

    k = np.asarray(successes, dtype=float)
    total = np.asarray(n, dtype=float)
    z = float(norm.ppf(0.5 + confidence / 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / total
        denom = 1 + z**2 / total
        centre = (p + z**2 / (2 * total)) / denom
        half = z * np.sqrt(p * (1 - p) / total + z**2 / (4 * total**2)) / denom
    # At k = 0 (k = n) the bound is exactly 0 (1); rounding alone would leave 5e-20.
    low = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(k == total, 1.0, np.clip(centre + half, 0.0, 1.0))
    low = np.where(total > 0, low, np.nan)
    high = np.where(total > 0, high, np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high
