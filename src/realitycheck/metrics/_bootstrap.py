"""Vectorised percentile-bootstrap confidence intervals, paired across detectors.

Resamples are drawn as a (B, n) matrix of item positions (in chunks of rows
when B x n is large) and turned into per-item multiplicities with one
``np.bincount`` on offset positions; a :class:`Resamples` passed in draws them
once for every metric and detector on the same items, and shares the
confusion counts of the same predictions across classification metrics.
A :class:`~realitycheck.metrics.LittleBootstraps` passed instead gives the
bag of little bootstraps' interval (see ``_little_bootstrap``).
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

import hashlib
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from realitycheck.errors import InvalidInputError
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
from realitycheck.metrics._ranking import RankIndex, WeightedItems, weighted_rank_metric
from realitycheck.metrics._rejection import REJECTION_METRICS, RejectionOrder, weighted_prr_sorted
from realitycheck.metrics._score_order import (
    SHARED_SORT_METRICS,
    ScoreOrder,
    sorted_metric_values,
)
from realitycheck.metrics._validation import UndefinedMetricWarning, warn_undefined
from realitycheck.params import param_error, shown

if TYPE_CHECKING:  # _little_bootstrap builds on Resamples, defined here
    from realitycheck.metrics._little_bootstrap import LittleBootstraps

__all__ = [
    "BOOTSTRAP_METRICS",
    "BootstrapResult",
    "RANKING_METRICS",
    "Resamples",
    "bootstrap_ci",
    "bootstrap_distribution",
    "resample_indices",
]

FloatArray = npt.NDArray[np.float64]


# Resamples are drawn (and evaluated) in chunks of about this many item
# positions; a handful of int64/float64 arrays of this size stay near 100 MB.
_CHUNK_ITEMS = 2**21
# Resamples keep their multiplicities up to this many positions (1 byte each
# while no item is drawn more than 255 times): 1 GiB, 1,000 resamples of 1M items.
_MAX_KEPT_ITEMS = 2**30
# Confusion counts kept per Resamples (one entry per labels x predictions).
_MAX_CONFUSIONS = 16
# AUROC, PR-AUC and PRR values kept per Resamples (one entry per labels x scores).
_MAX_SORTED = 16

Counts = npt.NDArray[np.int64]
Confusion = tuple[npt.NDArray[np.float64], ...]


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


def _multiplicities(indices: npt.NDArray[np.int64], n: int) -> Counts:
    """Turn (rows, n) resample positions into (rows, n) counts per item."""
    rows = indices.shape[0]
    offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
    return np.bincount((indices + offsets).ravel(), minlength=rows * n).reshape(rows, n)


def _smallest(counts: Counts) -> npt.NDArray[np.unsignedinteger]:
    """``counts`` in the smallest unsigned integer type holding its largest value."""
    top = int(counts.max()) if counts.size else 0
    for kind in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(kind).max:
            return counts.astype(kind)
    return counts.astype(np.uint64)


class Resamples:
    """The bootstrap resamples of ``(n, n_resamples, seed)``, drawn once and shared.

    Equal, chunk for chunk, to what :func:`resample_indices` draws, so an
    interval computed with them is identical to one computed without.
    Kept resamples also compute AUROC, PR-AUC and PRR of the same scores
    together (one sort and two running sums per detector; see
    ``_score_order``) and keep the values for the next of the three metrics.
    Safe to share between threads: what is kept is built under a lock.

    Args:
        n: Number of items (>= 1).
        n_resamples: Number of resamples (>= 1).
        seed: Seed of ``np.random.default_rng`` (None draws fresh entropy once).
        max_items: Keep the multiplicities while ``n * n_resamples`` is at most
            this; otherwise draw them again on every pass (bounded memory).
    """

    def __init__(
        self, n: int, n_resamples: int, seed: int | None, *, max_items: int = _MAX_KEPT_ITEMS
    ) -> None:
        if n < 1 or n_resamples < 1:
            raise InvalidInputError(
                f"Resamples need n >= 1 and n_resamples >= 1. Got n={n}, "
                f"n_resamples={n_resamples} instead."
            )
        self.n, self.n_resamples, self._seed_arg = n, n_resamples, seed
        # A None seed is drawn once, so every pass sees the same resamples.
        self.seed: int = int(np.random.SeedSequence().entropy) if seed is None else seed  # type: ignore[arg-type]
        self._keep = n * n_resamples <= max_items
        # One-off resamples (max_items=0) compute only the metric asked for.
        self.shares_sorted = max_items > 0
        self._kept: list[npt.NDArray[np.unsignedinteger]] | None = None
        self._confusions: dict[bytes, list[Confusion]] = {}
        self._sorted: dict[bytes, dict[str, FloatArray]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (e.g. for a Ray worker) without the lock; the unpickled copy makes its own."""
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def matches(self, n: int, n_resamples: int, seed: int | None) -> bool:
        """Whether these are the resamples of ``(n, n_resamples, seed)``."""
        return (n, n_resamples, seed) == (self.n, self.n_resamples, self._seed_arg)

    def indices(self) -> Iterator[npt.NDArray[np.int64]]:
        """Yield the resamples as chunks of item positions (as :func:`resample_indices`)."""
        return resample_indices(self.n, self.n_resamples, self.seed)

    def _kept_counts(self) -> list[npt.NDArray[np.unsignedinteger]]:
        """The multiplicities of every chunk in their smallest type, drawn once (under the lock)."""
        with self._lock:
            if self._kept is None:
                self._kept = [_smallest(_multiplicities(c, self.n)) for c in self.indices()]
            return self._kept

    def counts(self) -> Iterator[Counts]:
        """Yield the resamples as (rows, n) int64 multiplicities, chunk by chunk."""
        for small in self.small_counts():
            yield small.astype(np.int64)

    def small_counts(self) -> Iterator[npt.NDArray[np.unsignedinteger]]:
        """Yield the multiplicities as :meth:`counts` does, in the smallest unsigned type."""
        if self._keep:
            yield from self._kept_counts()
            return
        for chunk in self.indices():
            yield _smallest(_multiplicities(chunk, self.n))

    def sorted_values(
        self, metric: str, labels: npt.NDArray[np.bool_], scores: FloatArray
    ) -> FloatArray:
        """AUROC, PR-AUC or PRR (``metric``) of each row of ``scores`` (k, n), shape (k, B).

        The three are computed together and kept for the next call with the
        same labels and scores; each equals its own kernel's value bit for bit.
        """
        key = _digest(labels) + hashlib.blake2b(scores.tobytes(), digest_size=16).digest()
        key += repr(scores.shape).encode()
        with self._lock:
            found = self._sorted.get(key)
        if found is None:
            orders = [ScoreOrder.build(labels, row) for row in scores]
            chunks = [sorted_metric_values(orders, labels, c) for c in self.small_counts()]
            found = {m: np.concatenate([c[m] for c in chunks], axis=1) for m in chunks[0]}
            with self._lock:
                if len(self._sorted) >= _MAX_SORTED:
                    self._sorted.pop(next(iter(self._sorted)))
                self._sorted[key] = found
        return found[metric].copy()

    def confusion(
        self, labels: npt.NDArray[np.bool_], preds: npt.NDArray[np.bool_]
    ) -> list[Confusion]:
        """Return ``(tp, fp, fn, tn)`` of each chunk, each of shape (rows, k).

        ``labels`` (n,) are the true classes, ``preds`` (k, n) the predictions
        of k detectors. Counts are sums of small integers, exact in float64;
        they are kept for the next metric of the same labels and predictions.
        """
        key = _digest(labels, preds)
        with self._lock:
            found = self._confusions.get(key)
        if found is None:
            found = list(confusion_counts(labels, preds, self.small_counts()))
            with self._lock:
                if len(self._confusions) >= _MAX_CONFUSIONS:
                    self._confusions.pop(next(iter(self._confusions)))
                self._confusions[key] = found
        return found


def confusion_counts(
    labels: npt.NDArray[np.bool_], preds: npt.NDArray[np.bool_], chunks: Iterator[npt.NDArray[Any]]
) -> Iterator[Confusion]:
    """Yield ``(tp, fp, fn, tn)``, each (rows, k), for each chunk of multiplicities."""
    pos_preds = preds[:, labels].T.astype(np.float64)
    neg_preds = preds[:, ~labels].T.astype(np.float64)
    for weights in chunks:
        pos_weights = weights[:, labels].astype(np.float64)
        neg_weights = weights[:, ~labels].astype(np.float64)
        # Sums of small integers: exact in float64, and matrix products use BLAS.
        tp = pos_weights @ pos_preds
        fp = neg_weights @ neg_preds
        fn = pos_weights.sum(axis=1)[:, None] - tp
        tn = neg_weights.sum(axis=1)[:, None] - fp
        yield tp, fp, fn, tn


def _digest(*arrays: npt.NDArray[np.bool_]) -> bytes:
    """A key for boolean arrays: their shapes and packed bits."""
    return b"".join(repr(a.shape).encode() + np.packbits(a).tobytes() for a in arrays)


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
    if name == "ece" or name == "brier":
        terms = [calibration_terms(name, labels, row) for row in scores]
    else:
        orders = [RejectionOrder.build(labels, row) for row in scores]
    out = []
    for counts in chunks:
        values = np.empty((scores.shape[0], counts.shape[0]))
        if name == "ece" or name == "brier":
            counts = counts.astype(np.float64)  # once per chunk, not once per detector
        for k in range(scores.shape[0]):
            if name == "ece" or name == "brier":
                values[k] = weighted_calibration_from_terms(name, terms[k], counts)
            else:
                values[k] = weighted_prr_sorted(orders[k], counts)
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
