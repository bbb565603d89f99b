"""Bootstrap resamples: drawn once as item multiplicities, shared by every metric.

Resamples are drawn as a (B, n) matrix of item positions (in chunks of rows
when B x n is large) and turned into per-item multiplicities with one
``np.bincount`` on offset positions. A :class:`Resamples` draws them once for
every metric and detector on the same items, keeps them in the smallest
unsigned type, and shares what several metrics need from the same inputs:
the confusion counts of the same predictions, and AUROC, PR-AUC and PRR of
the same scores (one sort per detector; see ``_score_order``). The intervals
themselves are computed in ``_bootstrap``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from realitycheck.errors import InvalidInputError
from realitycheck.metrics._locks import LockedState
from realitycheck.metrics._score_order import ScoreOrder, sorted_metric_values

__all__ = ["Resamples", "confusion_counts", "resample_indices"]

V = TypeVar("V")
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


class Resamples(LockedState):
    """The bootstrap resamples of ``(n, n_resamples, seed)``, drawn once and shared.

    Equal, chunk for chunk, to what :func:`resample_indices` draws, so an
    interval computed with them is identical to one computed without.
    Kept resamples also compute AUROC, PR-AUC and PRR of the same scores
    together (one sort and two running sums per detector; see
    ``_score_order``) and keep the values for the next of the three metrics.
    Safe to share between threads: what is kept is built under a lock
    (dropped on pickling, made anew on unpickling; see :class:`LockedState`).

    Args:
        n: Number of items (>= 1).
        n_resamples: Number of resamples (>= 1).
        seed: Seed of ``np.random.default_rng`` (None draws fresh entropy once).
        max_items: Keep the multiplicities while ``n * n_resamples`` is at most
            this; otherwise draw them again on every pass (bounded memory).
        prr: Whether AUROC and PR-AUC bring PRR with them (the default; about
            a third of their time). A caller that never asks for PRR (a study
            of AUROC and PR-AUC) passes False; PRR asked for anyway is still
            computed, with the other two again.
    """

    def __init__(
        self,
        n: int,
        n_resamples: int,
        seed: int | None,
        *,
        max_items: int = _MAX_KEPT_ITEMS,
        prr: bool = True,
    ) -> None:
        if n < 1 or n_resamples < 1:
            raise InvalidInputError(
                f"Resamples need n >= 1 and n_resamples >= 1. Got n={n}, "
                f"n_resamples={n_resamples} instead."
            )
        super().__init__()
        self.n, self.n_resamples, self._seed_arg = n, n_resamples, seed
        # A None seed is drawn once, so every pass sees the same resamples.
        self.seed: int = int(np.random.SeedSequence().entropy) if seed is None else seed  # type: ignore[arg-type]
        self._keep = n * n_resamples <= max_items
        # One-off resamples (max_items=0) compute only the metric asked for.
        self.shares_sorted = max_items > 0
        self._with_prr = prr
        self._kept: list[npt.NDArray[np.unsignedinteger]] | None = None
        self._confusions: dict[bytes, list[Confusion]] = {}
        self._sorted: dict[bytes, dict[str, FloatArray]] = {}

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
        prr = self._with_prr or metric == "prr"
        if not prr:  # values kept with PRR serve as well
            with self._lock:
                found = self._sorted.get(key + b"+prr")
            if found is not None:
                return found[metric].copy()

        def compute() -> dict[str, FloatArray]:
            orders = [ScoreOrder.build(labels, row) for row in scores]
            chunks = [sorted_metric_values(orders, labels, c, prr=prr) for c in self.small_counts()]
            return {m: np.concatenate([c[m] for c in chunks], axis=1) for m in chunks[0]}

        key += b"+prr" if prr else b""
        return self._memo(self._sorted, _MAX_SORTED, key, compute)[metric].copy()

    def confusion(
        self, labels: npt.NDArray[np.bool_], preds: npt.NDArray[np.bool_]
    ) -> list[Confusion]:
        """Return ``(tp, fp, fn, tn)`` of each chunk, each of shape (rows, k).

        ``labels`` (n,) are the true classes, ``preds`` (k, n) the predictions
        of k detectors. Counts are sums of small integers, exact in float64;
        they are kept for the next metric of the same labels and predictions.
        """
        return self._memo(
            self._confusions,
            _MAX_CONFUSIONS,
            _digest(labels, preds),
            lambda: list(confusion_counts(labels, preds, self.small_counts())),
        )

    def _memo(self, table: dict[bytes, V], limit: int, key: bytes, compute: Callable[[], V]) -> V:
        """``table[key]``, computed (outside the lock) and kept when absent; the oldest goes first.

        Two threads asking for the same new key both compute it; the values are equal.
        """
        with self._lock:
            found = table.get(key)
        if found is None:
            found = compute()
            with self._lock:
                if len(table) >= limit:
                    table.pop(next(iter(table)))
                table[key] = found
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
