"""Whether a score ranks the responses the wrong way round.

Every score in realitycheck means higher = more likely hallucinated. A score
whose AUROC against some labels has its whole confidence interval below 0.5
ranks the responses the other way round against those labels: usually its
sign is wrong (a similarity, a confidence or a faithfulness probability that
should have been negated). The report marks such an AUROC and the command line
warns about it, both through :func:`wrong_way`, so the rule is written once.
"""

from __future__ import annotations

import math

__all__ = ["WRONG_WAY_BELOW", "wrong_way"]

WRONG_WAY_BELOW = 0.5
"""An AUROC whose interval's upper end lies below this (chance) is ranked the wrong way round."""


def _number(value: object) -> float | None:
    """``value`` as a float, ``None`` where it is absent (None, NaN, pandas NA) or not a number."""
    if value is None:
        return None
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def wrong_way(metric: str, value: object, ci_low: object, ci_high: object) -> bool:
    """Whether ``metric`` is an AUROC whose whole confidence interval lies below 0.5.

    Args:
        metric: The metric's name; only ``auroc`` is judged.
        value: The AUROC.
        ci_low: Lower end of its confidence interval.
        ci_high: Upper end of its confidence interval.

    Returns:
        True when ``metric`` is ``auroc`` and ``ci_high < 0.5``; False where the
        value or either end of the interval is missing (an AUROC without an
        interval, from too few items, is never judged), and for any other metric.
    """
    if metric != "auroc":
        return False
    point, low, high = _number(value), _number(ci_low), _number(ci_high)
    if point is None or low is None or high is None:
        return False
    return high < WRONG_WAY_BELOW
