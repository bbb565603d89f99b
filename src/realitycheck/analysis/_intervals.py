"""Bootstrap intervals of many confusion metrics, or of many detectors, in one pass.

Both use the resamples of :func:`realitycheck.metrics.bootstrap_ci` drawn with
the run's :class:`~realitycheck.analysis.Bootstrap`, so their intervals equal
``bootstrap_ci``'s for the same metric, items and settings.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from realitycheck.analysis._bootstrap import Bootstrap
from realitycheck.metrics import (
    Resamples,
    UndefinedMetricWarning,
    bootstrap_ci,
    from_counts,
    resample_indices,
)

if TYPE_CHECKING:  # pragma: no cover - pandas is imported where a frame is built
    import pandas as pd

__all__ = ["INTERVAL_COLUMNS", "RANKING_CI_COLUMNS", "confusion_ci", "ranking_ci"]

FloatArray = npt.NDArray[np.float64]

INTERVAL_COLUMNS: tuple[str, ...] = (
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "n_positive",
    "n_excluded",
)
"""A metric with its bootstrap interval, as the columns of every table that holds one.

The metric's name, its value, the interval's ends, the items used, the
hallucinated items among them and the items excluded; named and ordered as
the fields of :class:`~realitycheck.records.MetricResult`.
"""

RANKING_CI_COLUMNS = ["name", *INTERVAL_COLUMNS]
"""The columns of :func:`ranking_ci`'s table: the detector's name, then :data:`INTERVAL_COLUMNS`."""


def confusion_ci(
    y_true: Any, y_pred: Any, metrics: Sequence[str], bootstrap: Bootstrap
) -> dict[str, tuple[float, float, float]]:
    """Every confusion-count metric of one set of predictions, with bootstrap CIs.

    Draws the resamples of :func:`realitycheck.metrics.bootstrap_ci` (same
    ``n``, ``n_resamples`` and ``seed``, hence the same intervals) once, and
    evaluates every metric on their confusion counts.

    Args:
        y_true: Labels, 1/True = hallucinated.
        y_pred: Predictions, 1/True = predicted hallucinated (same length).
        metrics: Names understood by :func:`realitycheck.metrics.from_counts`.
        bootstrap: Resamples, coverage and seed of the intervals.

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

    def counts(rows: npt.NDArray[np.int64]) -> FloatArray:
        flat = (codes[rows] + (np.arange(rows.shape[0]) * 4)[:, None]).ravel()
        return np.bincount(flat, minlength=rows.shape[0] * 4).reshape(-1, 4).astype(float)

    full = counts(np.arange(n)[None, :])
    values = {
        m: float(from_counts(m, full[0, 3], full[0, 1], full[0, 2], full[0, 0])) for m in metrics
    }
    draws: dict[str, list[FloatArray]] = {m: [] for m in metrics}
    for rows in resample_indices(n, bootstrap.n_resamples, bootstrap.seed):
        c = counts(rows)
        with np.errstate(invalid="ignore", divide="ignore"):
            for m in metrics:
                draws[m].append(from_counts(m, c[:, 3], c[:, 1], c[:, 2], c[:, 0]))
    confidence = bootstrap.confidence
    quantiles = ((1 - confidence) / 2, (1 + confidence) / 2)
    out = {}
    for m in metrics:
        sample = np.concatenate(draws[m])
        sample = sample[~np.isnan(sample)]
        low, high = np.quantile(sample, quantiles) if sample.size else (math.nan, math.nan)
        out[m] = (values[m], float(low), float(high))
    return out


def ranking_ci(
    y_true: pd.Series, scores: pd.DataFrame, metrics: Sequence[str], bootstrap: Bootstrap
) -> pd.DataFrame:
    """AUROC / PR-AUC of every column of ``scores`` against ``y_true``, with CIs.

    Each column is measured on the items where both its value and the label
    exist; columns with the same usable items share one paired bootstrap call.

    Args:
        y_true: 1.0 / 0.0 / NaN labels, indexed like ``scores``.
        scores: One column per detector, higher = more likely hallucinated.
        metrics: ``auroc`` and/or ``pr_auc``.
        bootstrap: Resamples, coverage and seed of the intervals.

    Returns:
        One row per column and metric, with the columns of
        :data:`RANKING_CI_COLUMNS` (NaN values where undefined or no item).
    """
    import pandas as pd

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
        # AUROC and PR-AUC only (checked by bootstrap_ci): PRR is not computed beside them.
        drawn = Resamples(n, bootstrap.n_resamples, bootstrap.seed, prr=False) if n else None
        for metric in metrics:
            if n == 0:
                value = low = high = np.full(len(names), np.nan)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UndefinedMetricWarning)
                    result = bootstrap_ci(
                        metric,
                        y,
                        matrix,
                        n_resamples=bootstrap.n_resamples,
                        confidence=bootstrap.confidence,
                        seed=bootstrap.seed,
                        resamples=drawn,
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
    return pd.DataFrame(rows, columns=RANKING_CI_COLUMNS)
