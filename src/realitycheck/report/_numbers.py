"""How every number of the report is written, in one place (HTML and Markdown alike).

- Metric values and their confidence intervals share one precision:
  ``0.712 [0.680, 0.744]``, never ``0.500 [0.50, 0.50]``.
- A difference carries its sign, its interval too: ``+0.064 [-0.012, +0.139]``.
- Rates (shares of responses) are percentages: ``11.9% [9.8%, 14.2%]``.
- Ranks are whole numbers; a tie is marked with ``=`` (``2=``), and an average
  rank that is not whole (two tied for 2nd and 3rd share 2.5) keeps its half.
- A rank range (the ranks a rate could take where intervals overlap) reads
  ``1–3``, and a rank its interval tells apart from every other reads ``2``.
- p-values too small to be told apart from 0 in double precision read ``< 1e-16``.
- Counts carry thousands separators; a missing value is ``n/a``.
- Column names of study tables (``n_judged``, ``kendall_tau_b``) are written in
  words by :func:`header`.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "P_FLOOR",
    "fmt_ci",
    "fmt_count",
    "fmt_diff_ci",
    "fmt_p",
    "fmt_rank",
    "fmt_rank_range",
    "fmt_rate",
    "fmt_rate_ci",
    "fmt_value",
    "header",
    "is_missing",
]

P_FLOOR = 1e-16
"""p-values below this (0 included) are written ``< 1e-16``."""

_WORDS = {
    "n": "n",
    "ci": "CI",
    "auroc": "AUROC",
    "pr": "PR",
    "auc": "AUC",
    "tau": "tau",
    "id": "id",
    "p": "p",
}
_HEADERS = {
    "p_value": "p-value",
    "kendall_tau_b": "Kendall tau-b",
    "spearman_rho": "Spearman rho",
    "pr_auc": "PR-AUC",
    "ci_low": "CI low",
    "ci_high": "CI high",
    "f1_macro": "F1-macro",
    "cohen_kappa": "Cohen's kappa",
}


def is_missing(value: Any) -> bool:
    """Return whether a cell value is absent (None, NaN, pandas NA)."""
    if value is None:
        return True
    try:
        return bool(math.isnan(value))
    except (TypeError, ValueError):
        return False


def fmt_value(value: Any, digits: int = 3) -> str:
    """Format a metric value with ``digits`` decimals (``n/a`` when undefined)."""
    if is_missing(value):
        return "n/a"
    return f"{float(value):.{digits}f}"


def fmt_ci(value: Any, low: Any, high: Any, digits: int = 3) -> str:
    """Format a value and its confidence interval at one precision: ``0.712 [0.680, 0.744]``."""
    if is_missing(value):
        return "n/a"
    if is_missing(low) or is_missing(high):
        return fmt_value(value, digits)
    return f"{float(value):.{digits}f} [{float(low):.{digits}f}, {float(high):.{digits}f}]"


def fmt_diff_ci(value: Any, low: Any, high: Any, digits: int = 3) -> str:
    """Format a difference and its interval, every number signed: ``+0.064 [-0.012, +0.139]``."""
    if is_missing(value):
        return "n/a"
    text = f"{float(value):+.{digits}f}"
    if is_missing(low) or is_missing(high):
        return text
    return f"{text} [{float(low):+.{digits}f}, {float(high):+.{digits}f}]"


def fmt_count(value: Any) -> str:
    """Format a count with thousands separators."""
    if is_missing(value):
        return "n/a"
    return f"{int(value):,}"


def fmt_rate(value: Any) -> str:
    """Format a proportion as a percentage with one decimal: ``0.119`` -> ``11.9%``."""
    if is_missing(value):
        return "n/a"
    return f"{100 * float(value):.1f}%"


def fmt_rate_ci(value: Any, low: Any, high: Any) -> str:
    """Format a proportion and its interval as percentages: ``11.9% [9.8%, 14.2%]``."""
    if is_missing(value):
        return "n/a"
    if is_missing(low) or is_missing(high):
        return fmt_rate(value)
    return f"{fmt_rate(value)} [{fmt_rate(low)}, {fmt_rate(high)}]"


def fmt_rank(value: Any, *, tied: bool = False) -> str:
    """Format a rank as a whole number, ``=`` marking a tie (``2=``, ``2.5=``)."""
    if is_missing(value):
        return "n/a"
    x = float(value)
    text = f"{int(x)}" if x.is_integer() else f"{x:g}"
    return text + "=" if tied or not x.is_integer() else text


def fmt_rank_range(low: Any, high: Any) -> str:
    """Format the ranks a rate could take: ``1–3``, or ``2`` when both ends agree."""
    if is_missing(low) or is_missing(high):
        return "n/a"
    a, b = float(low), float(high)
    first, last = (f"{int(x)}" if x.is_integer() else f"{x:g}" for x in (a, b))
    return first if first == last else f"{first}\u2013{last}"


def fmt_p(value: Any) -> str:
    """Format a p-value: 3 decimals, 2 significant digits below 0.001, ``< 1e-16`` at the floor."""
    if is_missing(value):
        return "n/a"
    x = float(value)
    if x < P_FLOOR:
        return "< 1e-16"
    if x < 0.001:
        return f"{x:.1e}"
    return f"{x:.3f}"


def header(column: str) -> str:
    """Write a column name in words: ``n_judged`` -> ``n judged``, ``p_value`` -> ``p-value``."""
    if column in _HEADERS:
        return _HEADERS[column]
    for suffix, words in (("_ci_low", " CI low"), ("_ci_high", " CI high")):
        if column.endswith(suffix):
            return header(column[: -len(suffix)]) + words
    parts = [p for p in re.split(r"_+", column) if p]
    if not parts:
        return column
    return " ".join(_WORDS.get(p, p) for p in parts)
