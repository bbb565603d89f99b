"""Shared by the labeler-shift, labeler-agreement, length and repetition studies.

Option checks in the sklearn message shape, the choice of labelers and
detectors to study, a one-pass bootstrap of every confusion-count metric,
AUROC / PR-AUC of many detectors against one labeler, p-values of correlation
coefficients, Wilson intervals, the relative change Δ% and number formatting
for findings.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from realitycheck.errors import InvalidInputError
from realitycheck.keys import is_human
from realitycheck.metrics import UndefinedMetricWarning, bootstrap_ci, from_counts, resample_indices
from realitycheck.registry import parse_key

__all__ = [
    "LEXICAL_LABELERS",
    "automatic_labelers",
    "base_name",
    "check_fraction",
    "check_int",
    "check_keys",
    "confusion_ci",
    "correlation_pvalue",
    "fmt",
    "quiet",
    "ranking_ci",
    "relative_change",
    "similarity_of",
    "wilson_interval",
]

FloatArray = npt.NDArray[np.float64]

LEXICAL_LABELERS: frozenset[str] = frozenset(
    {"rouge_l", "bleu", "token_f1", "exact_match", "knowledge_f1"}
)
"""Labelers that compare words: their errors are broken down by cause."""

_SIMILARITY_RAW = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*=\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s*$")


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence undefined-metric warnings inside the block (the tables show NaN instead)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        yield


def check_int(value: Any, name: str, owner: str, *, low: int) -> int:
    """Return ``value`` if it is an int >= ``low``, else raise in the sklearn shape."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} must be an int >= {low}. Got {value!r} instead."
        )
    return int(value)


def check_fraction(
    value: Any, name: str, owner: str, *, low: float = 0.0, high: float = 1.0, closed: bool = False
) -> float:
    """Return ``value`` if it is a real number in ``(low, high)`` (``[low, high]`` if closed)."""
    x = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None
    ok = x is not None and (low <= x <= high if closed else low < x < high)
    if not ok:
        interval = f"[{low:g}, {high:g}]" if closed else f"({low:g}, {high:g})"
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} must be a float in {interval}. "
            f"Got {value!r} instead."
        )
    return float(value)


def check_keys(value: Any, name: str, owner: str) -> tuple[str, ...]:
    """Return ``value`` as a tuple of non-empty strings (a single string is one key)."""
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, Iterable) or not all(isinstance(k, str) and k for k in items):
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} must be a sequence of component keys. "
            f"Got {value!r} instead."
        )
    return tuple(items)


def base_name(key: str) -> str:
    """The registered name of a component key (``rouge_l[threshold=0.5]`` -> ``rouge_l``)."""
    try:
        return parse_key(key)[0]
    except InvalidInputError:
        return key


def automatic_labelers(keys: Iterable[str], reference: str) -> list[str]:
    """Labeler keys that are neither human labels nor the reference, sorted."""
    return sorted(k for k in keys if k != reference and not is_human(k))


def similarity_of(raw: pd.Series) -> pd.Series:
    """Parse a similarity labeler's ``raw`` text (``rouge_l_f1=0.4615``) into a float.

    Returns:
        The similarity (higher = closer to the truth), NaN where ``raw`` is not
        of that shape.
    """
    return raw.astype("string").str.extract(_SIMILARITY_RAW, expand=False).astype(float)


def relative_change(value: float, reference: float) -> float:
    """Δ% = (value − reference) / reference × 100; NaN when the reference is 0 or NaN."""
    if not np.isfinite(reference) or reference == 0 or not np.isfinite(value):
        return float("nan")
    return (value - reference) / reference * 100.0


def correlation_pvalue(r: float, n: int) -> float:
    """Two-sided p-value of a correlation coefficient under no association.

    Uses ``t = r sqrt((n - 2) / (1 - r^2))`` with ``n - 2`` degrees of freedom,
    which gives the p-value of ``scipy.stats.pearsonr`` (exact for normal data)
    and of ``scipy.stats.spearmanr`` (its t approximation).

    Returns:
        A value in [0, 1]; NaN when ``r`` is NaN or ``n < 3``.
    """
    if n < 3 or not np.isfinite(r):
        return float("nan")
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt((n - 2) / (1.0 - r * r))
    return float(min(1.0, 2 * stats.t.sf(abs(t), n - 2)))


def wilson_interval(successes: Any, n: Any, confidence: float = 0.95) -> tuple[Any, Any]:
    """Wilson score interval of a proportion, element-wise; NaN where ``n`` is 0.

    Equals ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="wilson")``.
    """
    k = np.asarray(successes, dtype=np.float64)
    size = np.asarray(n, dtype=np.float64)
    z = stats.norm.ppf((1 + confidence) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / size
        center = (p + z * z / (2 * size)) / (1 + z * z / size)
        half = z * np.sqrt(p * (1 - p) / size + z * z / (4 * size * size)) / (1 + z * z / size)
    low = np.where(size > 0, np.clip(center - half, 0.0, 1.0), np.nan)
    high = np.where(size > 0, np.clip(center + half, 0.0, 1.0), np.nan)
    return low, high


def confusion_ci(
    y_true: Any,
    y_pred: Any,
    metrics: Sequence[str],
    *,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, tuple[float, float, float]]:
    """Every confusion-count metric of one set of predictions, with bootstrap CIs.

    Draws the resamples of :func:`realitycheck.metrics.bootstrap_ci` (same
    ``n``, ``n_resamples`` and ``seed``, hence the same intervals) once, and
    evaluates every metric on their confusion counts.

    Args:
        y_true: Labels, 1/True = hallucinated.
        y_pred: Predictions, 1/True = predicted hallucinated (same length).
        metrics: Names understood by ``metrics._classification.from_counts``.
        n_resamples: Bootstrap resamples.
        confidence: Coverage of the percentile intervals.
        seed: Seed of the resampling.

    Returns:
        ``{metric: (value, ci_low, ci_high)}``; NaN where undefined (and all
        NaN when there is no item).
    """
    labels = np.asarray(y_true, dtype=bool)
    preds = np.asarray(y_pred, dtype=bool)
    n = labels.size
    if n == 0:
        return {m: (math.nan, math.nan, math.nan) for m in metrics}
    codes = (labels.astype(np.int64) << 1) | preds.astype(np.int64)  # 3=TP 2=FN 1=FP 0=TN

    def counts(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        flat = (codes[rows] + (np.arange(rows.shape[0]) * 4)[:, None]).ravel()
        return np.bincount(flat, minlength=rows.shape[0] * 4).reshape(-1, 4).astype(float)

    full = counts(np.arange(n)[None, :])
    values = {
        m: float(from_counts(m, full[0, 3], full[0, 1], full[0, 2], full[0, 0])) for m in metrics
    }
    draws: dict[str, list[FloatArray]] = {m: [] for m in metrics}
    for rows in resample_indices(n, n_resamples, seed):
        c = counts(rows)
        with np.errstate(invalid="ignore", divide="ignore"):
            for m in metrics:
                draws[m].append(from_counts(m, c[:, 3], c[:, 1], c[:, 2], c[:, 0]))
    quantiles = ((1 - confidence) / 2, (1 + confidence) / 2)
    out = {}
    for m in metrics:
        sample = np.concatenate(draws[m])
        sample = sample[~np.isnan(sample)]
        low, high = np.quantile(sample, quantiles) if sample.size else (math.nan, math.nan)
        out[m] = (values[m], float(low), float(high))
    return out


def ranking_ci(
    y_true: pd.Series,
    scores: pd.DataFrame,
    metrics: Sequence[str],
    *,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> pd.DataFrame:
    """AUROC / PR-AUC of every column of ``scores`` against ``y_true``, with CIs.

    Each column is measured on the items where both its value and the label
    exist; columns with the same usable items share one paired bootstrap call.

    Args:
        y_true: 1.0 / 0.0 / NaN labels, indexed like ``scores``.
        scores: One column per detector, higher = more likely hallucinated.
        metrics: ``auroc`` and/or ``pr_auc``.
        n_resamples: Bootstrap resamples.
        confidence: Coverage of the intervals.
        seed: Seed of the resampling.

    Returns:
        One row per column and metric: ``name, metric, value, ci_low, ci_high,
        n, n_positive, n_excluded`` (NaN values where undefined or no item).
    """
    label_ok = y_true.notna().to_numpy()
    groups: dict[bytes, list[str]] = {}
    masks: dict[bytes, npt.NDArray[np.bool_]] = {}
    for name in scores.columns:
        mask = label_ok & scores[name].notna().to_numpy()
        groups.setdefault(mask.tobytes(), []).append(name)
        masks[mask.tobytes()] = mask
    rows = []
    for token, names in groups.items():
        mask = masks[token]
        y = y_true.to_numpy()[mask].astype(bool)
        matrix = scores.loc[mask, names].to_numpy(dtype=float).T
        n, n_pos = int(mask.sum()), int(y.sum())
        for metric in metrics:
            if n == 0:
                value = low = high = np.full(len(names), np.nan)
            else:
                with quiet():
                    result = bootstrap_ci(
                        metric, y, matrix, n_resamples=n_resamples, confidence=confidence, seed=seed
                    )
                value, low, high = (
                    np.atleast_1d(result.value),
                    np.atleast_1d(result.ci_low),
                    np.atleast_1d(result.ci_high),
                )
            for k, name in enumerate(names):
                rows.append(
                    {
                        "name": name,
                        "metric": metric,
                        "value": float(value[k]),
                        "ci_low": float(low[k]),
                        "ci_high": float(high[k]),
                        "n": n,
                        "n_positive": n_pos,
                        "n_excluded": int(len(mask) - n),
                    }
                )
    columns = ["name", "metric", "value", "ci_low", "ci_high", "n", "n_positive", "n_excluded"]
    return pd.DataFrame(rows, columns=columns)


def fmt(value: float, digits: int = 3, *, signed: bool = False) -> str:
    """Format a number for a finding; ``n/a`` for NaN."""
    if value is None or not np.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
