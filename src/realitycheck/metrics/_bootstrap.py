"""Vectorised percentile-bootstrap confidence intervals, paired across detectors.

The resamples come from a :class:`~realitycheck.metrics.Resamples` (see
``_resamples``): passed in, it draws them once for every metric and detector
on the same items and shares the confusion counts of the same predictions
across classification metrics. A :class:`~realitycheck.metrics.LittleBootstraps`
passed instead gives the bag of little bootstraps' interval (see
``_little_bootstrap``).
Each detector's scores are sorted once;
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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._bootstrap_inputs import (
    BOOTSTRAP_METRICS,
    RANKING_METRICS,
    Metric,
    check_options,
    prepare,
)
from realitycheck.metrics._calibration import (
    CALIBRATION_METRICS,
    calibration_terms,
    weighted_calibration_from_terms,
)
from realitycheck.metrics._classification import from_counts
from realitycheck.metrics._little_bootstrap import LittleBootstraps
from realitycheck.metrics._ranking import RankIndex, WeightedItems, weighted_rank_metric
from realitycheck.metrics._rejection import REJECTION_METRICS, RejectionOrder, weighted_prr_sorted
from realitycheck.metrics._resamples import Resamples, confusion_counts
from realitycheck.metrics._score_order import SHARED_SORT_METRICS
from realitycheck.metrics._validation import UndefinedMetricWarning, warn_undefined
from realitycheck.params import param_error, shown

__all__ = [
    "BOOTSTRAP_METRICS",
    "BootstrapResult",
    "RANKING_METRICS",
    "bootstrap_ci",
    "bootstrap_distribution",
]

FloatArray = npt.NDArray[np.float64]


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
    """PRR, ECE or Brier score of every row of ``scores`` for every resample.

    Each row is sorted (PRR) or binned (ECE, Brier) once, before the chunks.
    """
    out = []
    if name in CALIBRATION_METRICS:
        terms = [calibration_terms(name, labels, row) for row in scores]
        for counts in chunks:
            weights = counts.astype(np.float64)  # once per chunk, not once per detector
            values = np.empty((len(terms), counts.shape[0]))
            for k, term in enumerate(terms):
                values[k] = weighted_calibration_from_terms(name, term, weights)
            out.append(values)
    else:
        orders = [RejectionOrder.build(labels, row) for row in scores]
        for counts in chunks:
            values = np.empty((len(orders), counts.shape[0]))
            for k, order in enumerate(orders):
                values[k] = weighted_prr_sorted(order, counts)
            out.append(values)
    return np.concatenate(out, axis=1)


def _thresholded_values(name: str, confusions: Iterable[tuple[FloatArray, ...]]) -> FloatArray:
    """A classification metric of each resample (k, B) from its confusion counts."""
    return np.concatenate([from_counts(name, *c).T for c in confusions], axis=1)


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


def _values(
    metric: Metric,
    labels: npt.NDArray[np.bool_],
    inputs: npt.NDArray[Any],
    resamples: Resamples | None,
) -> FloatArray:
    """Metric values of shape (k, B) for each row of ``inputs`` and each resample.

    ``resamples=None`` evaluates the full data once (every multiplicity 1).
    """
    n = labels.size
    if callable(metric):
        whole = iter([np.arange(n)[None, :]])
        index_chunks = whole if resamples is None else resamples.indices()
        return _callable_values(metric, labels, inputs, index_chunks)
    if resamples is not None and resamples.shares_sorted and metric in SHARED_SORT_METRICS:
        return resamples.sorted_values(metric, labels, inputs)
    chunks: Iterator[Any]
    if resamples is None:
        chunks = iter([np.ones((1, n), dtype=np.int64)])
    else:
        chunks = resamples.small_counts()  # every kernel takes any integer type
    if metric == "auroc":
        return _ranking_values("auroc", labels, inputs, chunks)
    if metric == "pr_auc":
        return _ranking_values("pr_auc", labels, inputs, chunks)
    if metric in REJECTION_METRICS or metric in CALIBRATION_METRICS:
        return _score_values(metric, labels, inputs, chunks)
    if resamples is None:
        return _thresholded_values(metric, confusion_counts(labels, inputs, chunks))
    return _thresholded_values(metric, resamples.confusion(labels, inputs))


def _intervals(
    metric: Metric,
    labels: npt.NDArray[np.bool_],
    inputs: npt.NDArray[Any],
    drawn: Resamples | LittleBootstraps,
    confidence: float,
) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """Percentile interval (k, 2) of each row of ``inputs``, and its defined resamples (k,)."""
    quantiles = ((1 - confidence) / 2, (1 + confidence) / 2)
    if not isinstance(drawn, Resamples):
        return drawn.intervals(lambda y, x, r: _values(metric, y, x, r), labels, inputs, quantiles)
    values = _values(metric, labels, inputs, drawn)
    defined = ~np.isnan(values)
    counts = defined.sum(axis=1)
    bounds = np.full((inputs.shape[0], 2), np.nan)
    whole = counts == values.shape[1]
    if whole.any():  # rows defined on every resample: one call, the same numbers
        bounds[whole] = np.quantile(values[whole], quantiles, axis=1).T
    for k, row in enumerate(values):
        if counts[k] and not whole[k]:
            bounds[k] = np.quantile(row[defined[k]], quantiles)
    return bounds, counts


def _resamples_for(
    resamples: Resamples | LittleBootstraps | None,
    n: int,
    n_resamples: int,
    seed: int | None,
    owner: str,
    metric: Metric,
) -> Resamples | LittleBootstraps:
    """The given resamples, checked against the call's options, or fresh ones."""
    if resamples is None:
        return Resamples(n, n_resamples, seed, max_items=0)
    if not resamples.matches(n, n_resamples, seed):
        raise param_error(
            "resamples",
            owner,
            f"the resamples of n={n}, n_resamples={n_resamples}, seed={seed}",
            got=f"those of n={resamples.n}, n_resamples={resamples.n_resamples}, "
            f"seed={resamples.seed}",
        )
    if callable(metric) and not isinstance(resamples, Resamples):
        raise param_error(
            "resamples",
            owner,
            "plain Resamples for a callable metric (the little bootstraps weight items)",
            got="LittleBootstraps",
        )
    return resamples


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
    check_options(n_resamples, 0.5, seed, "bootstrap_distribution")
    resolved, labels, _, inputs = prepare(
        metric, y_true, y_score, threshold, "bootstrap_distribution"
    )
    return _values(resolved, labels, inputs, Resamples(labels.size, n_resamples, seed, max_items=0))


def bootstrap_ci(
    metric: Any,
    y_true: Any,
    y_score: Any,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    threshold: Any = None,
    resamples: Resamples | LittleBootstraps | None = None,
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
        resamples: The :class:`Resamples` of ``(n, n_resamples, seed)``, drawn
            once and shared by every call on the same items (the same
            intervals, less work); None draws them for this call. Or the
            :class:`LittleBootstraps` of ``(n, n_resamples, seed)``: the
            interval is then the bag of little bootstraps' (the mean of the
            percentile intervals of its subsets; see ``_little_bootstrap``),
            for a metric name only.

    Returns:
        A :class:`BootstrapResult`; scalars for a 1-D ``y_score``, arrays of
        shape (k,) for a 2-D one. Values lie in the metric's own range.
        An :class:`UndefinedMetricWarning` is emitted when the metric is
        undefined on the full data or on every resample.

    Raises:
        InvalidInputError: An unknown metric, bad shapes, labels or options.
    """
    check_options(n_resamples, confidence, seed, "bootstrap_ci")
    resolved, labels, scores, inputs = prepare(metric, y_true, y_score, threshold, "bootstrap_ci")
    n = labels.size
    name = resolved if isinstance(resolved, str) else getattr(resolved, "__name__", "metric")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        value = _values(resolved, labels, inputs, None)[:, 0]
    drawn = _resamples_for(resamples, n, n_resamples, seed, "bootstrap_ci", resolved)
    bounds, counts = _intervals(resolved, labels, inputs, drawn, confidence)
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
