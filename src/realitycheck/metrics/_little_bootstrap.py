"""The bag of little bootstraps: percentile intervals on millions of items in bounded work.

The plain bootstrap costs ``n_resamples x n`` per metric and detector: 10^10
item draws for 10 million responses and 1,000 resamples. The bag of little
bootstraps (Kleiner, Talwalkar, Sarkar and Jordan, "A scalable bootstrap for
massive data", JRSS-B 76(4), 2014, Algorithm 1) reaches the same interval
from small subsets:

1. ``s`` disjoint subsets of ``b = ceil(n ** 0.7)`` items are drawn without
   replacement (``s = 10``, or fewer when ``s x b > n``);
2. each subset gets ``r = ceil(n_resamples / s)`` resamples of full size
   ``n``: multinomial counts of ``n`` draws over its ``b`` items, each with
   probability ``1 / b``, so a resample holds ``n`` items but only ``b``
   distinct ones;
3. the metric of each resample is computed by the same weighted kernels as
   the plain bootstrap (an item of count ``c`` counts ``c`` times), the
   percentile interval of each subset's ``r`` values is taken, and the
   reported interval is the mean of the ``s`` intervals' ends.

Work and memory are ``s x r x b`` (7.9e7 counts for n = 10^7 and 1,000
resamples, as a plain bootstrap of 79,000 items). Everything is drawn from
``np.random.default_rng(seed)``, so the same ``(n, n_resamples, seed)`` gives
the same interval. The interval estimates the same quantity as the plain
percentile bootstrap, with the same asymptotic accuracy (Kleiner et al.,
Theorem 1 and 3), but its ends are not the plain bootstrap's numbers;
:class:`~realitycheck.analysis.Measure` uses it only above
:data:`LITTLE_BOOTSTRAP_ABOVE` items and says so in each row's note.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.errors import InvalidInputError
from realitycheck.metrics._resamples import _CHUNK_ITEMS, Resamples, _smallest

__all__ = ["LITTLE_BOOTSTRAP_ABOVE", "LittleBootstraps"]

LITTLE_BOOTSTRAP_ABOVE = 2**19
"""Above this many items (524,288), evaluate's intervals use the bag of little bootstraps.

Far above every test and every demo dataset (at most tens of thousands of
responses), so their intervals are those of the plain bootstrap; at 1M
responses the plain bootstrap took 550 s of a 2-core machine, the bag of
little bootstraps a small fraction of that (``benchmarks/scaling.py``).
"""

_SUBSETS = 10
_GAMMA = 0.7

Values = Callable[[npt.NDArray[np.bool_], npt.NDArray[Any], Resamples], npt.NDArray[np.float64]]
"""``(labels, inputs, resamples) -> (k, rows)`` metric values, as ``_bootstrap._values``."""


class _SubsetResamples(Resamples):
    """Multinomial ``(n; 1/b, ..., 1/b)`` counts over the ``b`` items of one subset, kept."""

    def __init__(self, counts: npt.NDArray[np.unsignedinteger], seed: int) -> None:
        super().__init__(counts.shape[1], counts.shape[0], seed, max_items=0)
        self._small = counts
        self.shares_sorted = True  # kept by its LittleBootstraps for every metric

    def indices(self) -> Iterator[npt.NDArray[np.int64]]:
        raise InvalidInputError(
            "The bag of little bootstraps weights items by counts; it cannot resample "
            "positions for a callable metric. Use a metric name, or fewer items."
        )

    def small_counts(self) -> Iterator[npt.NDArray[np.unsignedinteger]]:
        rows = max(1, _CHUNK_ITEMS // self.n)
        for start in range(0, self.n_resamples, rows):
            yield self._small[start : start + rows]


class LittleBootstraps:
    """The subsets and resamples of the bag of little bootstraps for ``(n, n_resamples, seed)``.

    Args:
        n: Number of items (>= 2).
        n_resamples: Total number of resamples, shared out over the subsets (>= 1).
        seed: Seed of ``np.random.default_rng`` (None draws fresh entropy once).

    Attributes:
        subsets: The item positions of each subset, ascending.
        counts: Per subset, the (r, b) multinomial counts of its resamples
            (each row sums to n), in the smallest unsigned type that holds them.
    """

    def __init__(self, n: int, n_resamples: int, seed: int | None) -> None:
        if n < 2 or n_resamples < 1:
            raise InvalidInputError(
                f"LittleBootstraps need n >= 2 and n_resamples >= 1. Got n={n}, "
                f"n_resamples={n_resamples} instead."
            )
        self.n, self.n_resamples, self._seed_arg = n, n_resamples, seed
        rng = np.random.default_rng(seed)
        b = min(n - 1, int(np.ceil(n**_GAMMA)))
        s = max(1, min(_SUBSETS, n // b))
        r = -(-n_resamples // s)
        chosen = rng.choice(n, size=s * b, replace=False)
        self.subsets = [np.sort(chosen[j * b : (j + 1) * b]) for j in range(s)]
        self.counts = [_smallest(rng.multinomial(n, np.full(b, 1 / b), size=r)) for _ in range(s)]
        self._resamples = [_SubsetResamples(c, j) for j, c in enumerate(self.counts)]

    def matches(self, n: int, n_resamples: int, seed: int | None) -> bool:
        """Whether these are the little bootstraps of ``(n, n_resamples, seed)``."""
        return (n, n_resamples, seed) == (self.n, self.n_resamples, self._seed_arg)

    @property
    def seed(self) -> int | None:
        """The seed they were drawn with."""
        return self._seed_arg

    def intervals(
        self,
        values: Values,
        labels: npt.NDArray[np.bool_],
        inputs: npt.NDArray[Any],
        quantiles: tuple[float, float],
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """Return the mean of the subsets' percentile intervals, and the defined resamples.

        Args:
            values: Computes a metric for each row of ``inputs`` on each resample.
            labels: Shape (n,).
            inputs: Shape (k, n): scores or 0/1 predictions of k detectors.
            quantiles: The lower and upper quantile of each subset's interval.

        Returns:
            Bounds of shape (k, 2) (NaN for a row no resample defined) and the
            number of resamples on which each row was defined, shape (k,).
        """
        k = inputs.shape[0]
        ends = np.full((len(self.subsets), k, 2), np.nan)
        defined_total = np.zeros(k, dtype=np.int64)
        for j, (positions, resamples) in enumerate(zip(self.subsets, self._resamples, strict=True)):
            got = values(labels[positions], inputs[:, positions], resamples)
            defined = ~np.isnan(got)
            defined_total += defined.sum(axis=1)
            for row in range(k):
                if defined[row].any():
                    ends[j, row] = np.quantile(got[row, defined[row]], quantiles)
        bounds = np.full((k, 2), np.nan)
        for row in range(k):
            usable = ~np.isnan(ends[:, row, 0])
            if usable.any():
                bounds[row] = ends[usable, row].mean(axis=0)
        return bounds, defined_total
