"""Vectorised percentile-bootstrap confidence intervals, paired across detectors.

Resamples are drawn as a (B, n) matrix of item positions (in chunks of rows
when B x n is large) and turned into per-item multiplicities with one
``np.bincount`` on offset positions. Each detector's scores are sorted once;
ranking metrics are then evaluated for all resamples of a chunk at once by the
weighted kernel of ``_ranking`` (running sums over the sorted order, ties
exact), PRR by that of ``_rejection`` (harmonic numbers over runs of tied
scores), ECE and Brier score by matrix products over fixed bins, thresholded
metrics from confusion counts obtained by matrix products.
Only a user-supplied callable falls back to a loop over resamples. Memory
stays near 100 MB whatever B, n and the number of detectors.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._calibration import (
    CALIBRATION_METRICS,
    check_probabilities,
    weighted_calibration_metric,
)
from realitycheck.metrics._classification import CLASSIFICATION_METRICS, from_counts
from realitycheck.metrics._ranking import RankIndex, WeightedItems, weighted_rank_metric
from realitycheck.metrics._rejection import REJECTION_METRICS, weighted_prr
from realitycheck.metrics._validation import (
    UndefinedMetricWarning,
    check_binary,
    check_numbers,
    check_same_length,
    check_scores,
    warn_undefined,
)
from realitycheck.params import (
    AnyOf,
    Interval,
    OneOf,
    OrNone,
    Satisfies,
    check_arg,
    param_error,
    shown,
)

__all__ = ["BootstrapResult", "bootstrap_ci", "bootstrap_distribution", "resample_indices"]

FloatArray = npt.NDArray[np.float64]
Metric = str | Callable[[Any, Any], float]

RANKING_METRICS: tuple[str, ...] = ("auroc", "pr_auc")
BOOTSTRAP_METRICS: tuple[str, ...] = (
    RANKING_METRICS + REJECTION_METRICS + CALIBRATION_METRICS + CLASSIFICATION_METRICS
)
# Metrics of the score itself: no threshold applies.
_SCORE_METRICS = RANKING_METRICS + REJECTION_METRICS + CALIBRATION_METRICS

# Resamples are drawn (and evaluated) in chunks of about this many item
# positions; a handful of int64/float64 arrays of this size stay near 100 MB.
_CHUNK_ITEMS = 2**21


@dataclass(frozen=True)
class BootstrapResult:
    """A metric value with its percentile-bootstrap confidence interval.

    With a 1-D ``y_score`` every field is a scalar; with a 2-D ``y_score`` of
    shape (k, n) every field is an array of shape (k,), one entry per row.

    Attributes:
        value: The metric on the full data (NaN if undefined there).
        ci_low: Lower end of the interval (NaN if no resample was defined).
        ci_high: Upper end of the interval.
        n_resamples: How many resamples gave a defined value; the others
            (e.g. with one class only) were dropped.
        confidence: The nominal coverage of the interval, e.g. 0.95.
    """

    value: float | FloatArray
    ci_low: float | FloatArray
    ci_high: float | FloatArray
    n_resamples: int | npt.NDArray[np.int64]
    confidence: float


def resample_indices(n: int, n_resamples: int, seed: int | None) -> Iterator[npt.NDArray[np.int64]]:
    """Yield the bootstrap resamples as chunks of item positions.

    The chunks depend only on ``(n, n_resamples, seed)``, so every detector,
    and a 1-D or 2-D call, sees the same resamples.

    Args:
        n: Number of items.
        n_resamples: Total number of resamples.
        seed: Seed of ``np.random.default_rng``.

    Yields:
        Arrays of shape (rows, n) with positions in ``[0, n)``; rows add up to
        ``n_resamples``.
    """
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_ITEMS // n)
    for start in range(0, n_resamples, rows):
        yield rng.integers(0, n, size=(min(rows, n_resamples - start), n))


def _multiplicities(indices: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.int64]:
    """Turn (rows, n) resample positions into (rows, n) counts per item."""
    rows = indices.shape[0]
    offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
    return np.bincount((indices + offsets).ravel(), minlength=rows * n).reshape(rows, n)


# The arguments of bootstrap_ci and bootstrap_distribution, declared once.
_METRIC = AnyOf(
    OneOf(BOOTSTRAP_METRICS), Satisfies(callable, "a callable(y_true, y_score) -> float")
)
_N_RESAMPLES = Interval(int, 1)
_CONFIDENCE = Interval(float, 0, 1, closed="neither")
_SEED = OrNone(Interval(int, 0))


def _check_options(n_resamples: Any, confidence: Any, seed: Any, owner: str) -> None:
    check_arg(n_resamples, _N_RESAMPLES, name="n_resamples", owner=owner)
    check_arg(confidence, _CONFIDENCE, name="confidence", owner=owner)
    check_arg(seed, _SEED, name="seed", owner=owner)


def _check_threshold(
    threshold: Any, metric: Metric, scores: FloatArray, owner: str
) -> FloatArray | None:
    """Return one threshold per row of ``scores``, or None to use them as predictions."""
    if isinstance(metric, str) and metric in _SCORE_METRICS:
        if threshold is not None:
            raise param_error(
                "threshold", owner, f"None for the score metric {metric!r}", threshold
            )
        return None
    if threshold is None:
        if isinstance(metric, str) and not np.isin(scores, (0.0, 1.0)).all():
            raise param_error(
                "threshold",
                owner,
                "a number when 'y_score' holds scores rather than 0/1 predictions "
                f"({metric!r} needs predictions)",
                None,
            )
        return None
    values = check_numbers(threshold, "threshold", owner, ndim=(0, 1))
    if values.ndim == 0:
        return np.full(scores.shape[0], float(values))
    if values.shape != (scores.shape[0],):
        raise param_error(
            "threshold",
            owner,
            f"a number or one number per row of 'y_score' ({scores.shape[0]})",
            got=f"shape {values.shape}",
        )
    return values


def _ranking_values(
    kind: Literal["auroc", "pr_auc"],
    labels: npt.NDArray[np.bool_],
    scores: FloatArray,
    chunks: Iterator[Any],
) -> FloatArray:
    indexes = [RankIndex.build(labels, row) for row in scores]
    # Half-width integers halve the memory traffic; running sums stay <= 2 n.
    dtype = np.int32 if 2 * labels.size < np.iinfo(np.int32).max else np.int64
    out = []
    for counts in chunks:
        items = WeightedItems.prepare(counts.astype(dtype, copy=False), labels)
        values = np.empty((len(indexes), counts.shape[0]))
        for k, index in enumerate(indexes):
            values[k] = weighted_rank_metric(kind, index, items)
        out.append(values)
    return np.concatenate(out, axis=1)


def _score_values(
    name: str, labels: npt.NDArray[np.bool_], scores: FloatArray, chunks: Iterator[Any]
) -> FloatArray:
    """PRR, ECE or Brier score of every row of ``scores`` for every resample."""
    out = []
    for counts in chunks:
        values = np.empty((scores.shape[0], counts.shape[0]))
        for k, row in enumerate(scores):
            if name == "ece" or name == "brier":
                values[k] = weighted_calibration_metric(name, labels, row, counts)
            else:
                values[k] = weighted_prr(labels, row, counts)
        out.append(values)
    return np.concatenate(out, axis=1)


def _thresholded_values(
    name: str, labels: npt.NDArray[np.bool_], preds: npt.NDArray[np.bool_], chunks: Iterator[Any]
) -> FloatArray:
    pos_preds = preds[:, labels].T.astype(np.float64)
    neg_preds = preds[:, ~labels].T.astype(np.float64)
    out = []
    for weights in chunks:
        pos_weights = weights[:, labels].astype(np.float64)
        neg_weights = weights[:, ~labels].astype(np.float64)
        # Sums of small integers: exact in float64, and matrix products use BLAS.
        tp = pos_weights @ pos_preds
        fp = neg_weights @ neg_preds
        fn = pos_weights.sum(axis=1)[:, None] - tp
        tn = neg_weights.sum(axis=1)[:, None] - fp
        out.append(from_counts(name, tp, fp, fn, tn).T)
    return np.concatenate(out, axis=1)


def _callable_values(
    metric: Callable[[Any, Any], float],
    labels: npt.NDArray[np.bool_],
    inputs: npt.NDArray[Any],
    index_chunks: Iterator[npt.NDArray[np.int64]],
) -> FloatArray:
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for chunk in index_chunks:
            values = np.empty((inputs.shape[0], chunk.shape[0]))
            for b, rows in enumerate(chunk):
                for k, row in enumerate(inputs):
                    values[k, b] = _call(metric, labels[rows], row[rows])
            out.append(values)
    return np.concatenate(out, axis=1)


def _call(metric: Callable[[Any, Any], float], labels: Any, inputs: Any) -> float:
    result = metric(labels, inputs)
    try:
        return float(result)
    except (TypeError, ValueError):
        raise param_error(
            "metric",
            "bootstrap_ci",
            "a callable that returns a number",
            got=f"a callable that returned {shown(result)}",
        ) from None


def _prepare(
    metric: Any, y_true: Any, y_score: Any, threshold: Any, owner: str
) -> tuple[Metric, npt.NDArray[np.bool_], FloatArray, npt.NDArray[Any]]:
    """Validate; return the metric, labels, 2-D scores and 2-D metric inputs."""
    resolved: Metric = check_arg(metric, _METRIC, name="metric", owner=owner)
    labels = check_binary(y_true, "y_true", owner)
    rank_based = RANKING_METRICS + REJECTION_METRICS
    if isinstance(resolved, str) and resolved in rank_based and threshold is None:
        # Rank-based: order-exact scores (integers beyond 2**53 as exact ranks).
        scores = check_scores(y_score, "y_score", owner, ndim=(1, 2))[0]
    elif isinstance(resolved, str) and resolved in CALIBRATION_METRICS:
        scores = check_numbers(y_score, "y_score", owner, ndim=(1, 2))
        for row in np.atleast_2d(scores):
            check_probabilities(labels, row, owner, name="y_score")
    else:
        scores = check_numbers(y_score, "y_score", owner, ndim=(1, 2))
    check_same_length(labels, "y_true", scores, "y_score", owner)
    scores = np.atleast_2d(scores)
    thresholds = _check_threshold(threshold, resolved, scores, owner)
    if thresholds is not None:
        inputs: npt.NDArray[Any] = scores >= thresholds[:, None]
    elif isinstance(resolved, str) and resolved in CLASSIFICATION_METRICS:
        inputs = scores == 1.0
    else:
        inputs = scores
    return resolved, labels, scores, inputs


def _values(
    metric: Metric,
    labels: npt.NDArray[np.bool_],
    inputs: npt.NDArray[Any],
    index_chunks: Iterator[npt.NDArray[np.int64]],
) -> FloatArray:
    """Metric values of shape (k, B) for each row of ``inputs`` and each resample."""
    if callable(metric):
        return _callable_values(metric, labels, inputs, index_chunks)
    n = labels.size
    chunks = (_multiplicities(indices, n) for indices in index_chunks)
    if metric == "auroc":
        return _ranking_values("auroc", labels, inputs, chunks)
    if metric == "pr_auc":
        return _ranking_values("pr_auc", labels, inputs, chunks)
    if metric in REJECTION_METRICS or metric in CALIBRATION_METRICS:
        return _score_values(metric, labels, inputs, chunks)
    return _thresholded_values(metric, labels, inputs, chunks)


def bootstrap_distribution(
    metric: Any,
    y_true: Any,
    y_score: Any,
    *,
    n_resamples: int = 1000,
    seed: int | None = 0,
    threshold: Any = None,
) -> FloatArray:
    """Metric value on every bootstrap resample (the input of :func:`bootstrap_ci`).

    The resamples are those of :func:`resample_indices` ``(n, n_resamples, seed)``.

    Args:
        metric: As for :func:`bootstrap_ci`.
        y_true: As for :func:`bootstrap_ci`.
        y_score: As for :func:`bootstrap_ci`.
        n_resamples: Number of resamples.
        seed: Seed of the resampling.
        threshold: As for :func:`bootstrap_ci`.

    Returns:
        Shape (k, n_resamples) (k = 1 for a 1-D ``y_score``); NaN where the
        metric is undefined on a resample.
    """
    _check_options(n_resamples, 0.5, seed, "bootstrap_distribution")
    resolved, labels, _, inputs = _prepare(
        metric, y_true, y_score, threshold, "bootstrap_distribution"
    )
    return _values(resolved, labels, inputs, resample_indices(labels.size, n_resamples, seed))


def bootstrap_ci(
    metric: Any,
    y_true: Any,
    y_score: Any,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    threshold: Any = None,
) -> BootstrapResult:
    """Percentile-bootstrap confidence interval of a metric, for one or many detectors.

    Items are resampled with replacement ``n_resamples`` times; with a 2-D
    ``y_score`` every row (detector) is evaluated on the same resamples, so the
    intervals are paired. Resamples on which the metric is undefined (e.g. one
    class only) are dropped and ``n_resamples`` of the result says how many
    remained. The interval is given by the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles of the defined values (linear
    interpolation, as ``np.quantile``).

    Args:
        metric: A name, ``"auroc"``, ``"pr_auc"``, ``"prr"``, ``"ece"`` (10
            equal-width bins), ``"brier"`` (both on probabilities in [0, 1])
            or a classification metric
            (``"accuracy"``, ``"balanced_accuracy"``, ``"precision"``,
            ``"recall"``, ``"f1"``, ``"f1_macro"``, ``"f1_weighted"``,
            ``"cohen_kappa"``), all vectorised over resamples; or a callable
            ``metric(y_true, y_score) -> float`` evaluated in a loop.
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_score: Shape (n,) or (k, n) for k detectors scored on the same items;
            higher = more likely hallucinated, or 0/1 predictions.
        n_resamples: Number of bootstrap resamples, >= 1.
        confidence: Nominal coverage, in (0, 1).
        seed: Seed of ``np.random.default_rng``; the same seed gives the same
            resamples for any k.
        threshold: For a classification metric (or a callable wanting
            predictions): predict hallucinated iff ``y_score >= threshold``; a
            number, or one per row of a 2-D ``y_score``. May be None when
            ``y_score`` already holds 0/1 predictions. Must be None for
            ``"auroc"``, ``"pr_auc"``, ``"prr"``, ``"ece"`` and ``"brier"``.

    Returns:
        A :class:`BootstrapResult`; scalars for a 1-D ``y_score``, arrays of
        shape (k,) for a 2-D one. Values lie in the metric's own range.
        An :class:`UndefinedMetricWarning` is emitted when the metric is
        undefined on the full data or on every resample.

    Raises:
        InvalidInputError: An unknown metric, bad shapes, labels or options.
    """
    _check_options(n_resamples, confidence, seed, "bootstrap_ci")
    resolved, labels, scores, inputs = _prepare(metric, y_true, y_score, threshold, "bootstrap_ci")
    n = labels.size
    name = resolved if isinstance(resolved, str) else getattr(resolved, "__name__", "metric")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        value = _values(resolved, labels, inputs, iter([np.arange(n)[None, :]]))[:, 0]
    values = _values(resolved, labels, inputs, resample_indices(n, n_resamples, seed))
    defined = ~np.isnan(values)
    counts = defined.sum(axis=1)
    quantiles = ((1 - confidence) / 2, (1 + confidence) / 2)
    bounds = np.full((scores.shape[0], 2), np.nan)
    for k, row in enumerate(values):
        if counts[k]:
            bounds[k] = np.quantile(row[defined[k]], quantiles)
    if np.isnan(value).any():
        warn_undefined(f"bootstrap_ci: {name} is undefined on the full data; value is NaN.")
    if (counts == 0).any():
        warn_undefined(f"bootstrap_ci: {name} is undefined on every resample; the CI is NaN.")
    if np.ndim(y_score) == 1:
        return BootstrapResult(
            value=float(value[0]),
            ci_low=float(bounds[0, 0]),
            ci_high=float(bounds[0, 1]),
            n_resamples=int(counts[0]),
            confidence=float(confidence),
        )
    return BootstrapResult(
        value=value,
        ci_low=bounds[:, 0].copy(),
        ci_high=bounds[:, 1].copy(),
        n_resamples=counts.astype(np.int64),
        confidence=float(confidence),
    )
