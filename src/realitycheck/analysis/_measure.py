"""Bootstrap measurement of many detectors at once, and threshold choice.

:class:`Measure` turns one metric of many score rows on the same items into
:class:`~realitycheck.records.MetricResult` rows, all rows sharing the
resamples of one :class:`Bootstrap`; :func:`choose_or_fix_threshold` picks a
detector's threshold on the calibration split.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from realitycheck import metrics as M
from realitycheck.analysis._bootstrap import Bootstrap
from realitycheck.records import MetricResult

__all__ = ["Measure", "Where", "choose_or_fix_threshold", "group_by_mask"]


@dataclass(frozen=True, kw_only=True)
class Where:
    """What a batch of rows is about: the reference, the slice and the dataset."""

    labeler: str
    slice: str
    dataset: str
    n_excluded: int


# Resamples a Measure keeps, in item positions over all sizes n (one byte each,
# 2 GiB: 1,000 resamples of 1M items and of a 500k split); the oldest are dropped first.
_KEPT_ITEMS = 2**31
_LITTLE_NOTE = (
    f"interval: bag of little bootstraps (more than {M.LITTLE_BOOTSTRAP_ABOVE:,} items; "
    "Kleiner et al. 2014)"
)


class Measure(M.LockedState):
    """Bootstrap one metric for many score rows on the same items and build result rows.

    The resamples of each number of items n are drawn once and shared by
    every metric, detector, reference and slice of that size (the same seed
    gives the same resamples for the same n, so the intervals are unchanged);
    classification metrics of the same predictions share their confusion counts.
    Safe to share between threads (the kept resamples are looked up under a lock,
    dropped on pickling and made anew on unpickling; see
    :class:`~realitycheck.metrics.LockedState`).
    """

    def __init__(self, bootstrap: Bootstrap, *, prr: bool = True) -> None:
        super().__init__()
        self.bootstrap = bootstrap
        self._prr = prr  # False: AUROC and PR-AUC skip PRR (a caller that never asks for it)
        self._drawn: OrderedDict[int, M.Resamples | M.LittleBootstraps] = OrderedDict()

    def resamples(self, n: int) -> M.Resamples | M.LittleBootstraps:
        """Return the resamples of ``n`` items under this bootstrap, drawing them once.

        Above :data:`~realitycheck.metrics.LITTLE_BOOTSTRAP_ABOVE` items they are
        the bag of little bootstraps (bounded work; see ``metrics._little_bootstrap``).
        """
        with self._lock:
            return self._resamples(n)

    def _resamples(self, n: int) -> M.Resamples | M.LittleBootstraps:
        if n in self._drawn:
            self._drawn.move_to_end(n)
            return self._drawn[n]
        b = self.bootstrap
        drawn: M.Resamples | M.LittleBootstraps
        if n > M.LITTLE_BOOTSTRAP_ABOVE:
            drawn = M.LittleBootstraps(n, b.n_resamples, b.seed)
        else:
            drawn = M.Resamples(n, b.n_resamples, b.seed, prr=self._prr)
        self._drawn[n] = drawn
        while sum(self._drawn) * b.n_resamples > _KEPT_ITEMS and len(self._drawn) > 1:
            self._drawn.popitem(last=False)
        return drawn

    def rows(
        self,
        metric: str,
        keys: Sequence[str],
        y: np.ndarray,
        s: np.ndarray,
        where: Where,
        *,
        thresholds: Sequence[float] | None = None,
        notes: Sequence[str] | None = None,
    ) -> list[MetricResult]:
        """Return one MetricResult per row of ``s`` (shape k × n), keyed by ``keys``.

        With one class only every metric is NaN, except ECE and the Brier
        score, which are defined there.
        """
        k = s.shape[0]
        little = y.size > M.LITTLE_BOOTSTRAP_ABOVE
        one_class = y.size > 0 and y.min() == y.max()
        if y.size == 0 or (one_class and metric not in M.CALIBRATION_METRICS):
            values = [(float("nan"),) * 3] * k
        else:
            t = None if thresholds is None else np.asarray(thresholds, dtype=float)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", M.UndefinedMetricWarning)
                res = M.bootstrap_ci(
                    metric,
                    y,
                    s if k > 1 else s[0],
                    n_resamples=self.bootstrap.n_resamples,
                    confidence=self.bootstrap.confidence,
                    seed=self.bootstrap.seed,
                    threshold=t if t is None or k > 1 else float(t[0]),
                    resamples=self.resamples(y.size),
                )
            values = list(
                zip(
                    np.atleast_1d(res.value).tolist(),
                    np.atleast_1d(res.ci_low).tolist(),
                    np.atleast_1d(res.ci_high).tolist(),
                    strict=True,
                )
            )
        out = []
        for i, (key, (v, lo, hi)) in enumerate(zip(keys, values, strict=True)):
            note = notes[i] if notes is not None else ""
            out.append(
                MetricResult(
                    detector=key,
                    labeler=where.labeler,
                    metric=metric,
                    value=float(v),
                    ci_low=float(lo),
                    ci_high=float(hi),
                    n=int(y.size),
                    n_positive=int(y.sum()),
                    n_excluded=where.n_excluded,
                    slice=where.slice,
                    dataset=where.dataset,
                    threshold=None if thresholds is None else float(thresholds[i]),
                    note=_note(note, float(v), little),
                )
            )
        return out


def _note(given: str, value: float, little: bool) -> str:
    """A row's note: the given one (or "undefined: one class" for NaN), and how its CI was drawn."""
    note = given or ("undefined: one class" if np.isnan(value) else "")
    if little and not np.isnan(value):
        note = f"{note}; {_LITTLE_NOTE}" if note else _LITTLE_NOTE
    return note


def choose_or_fix_threshold(y: np.ndarray, s: np.ndarray, objective: str) -> tuple[float, str]:
    """Return a detector's threshold and how it was chosen.

    A binary detector (values only 0 and 1) gets 0.5; otherwise the threshold
    maximising ``objective`` on ``(y, s)`` (the calibration split), or NaN
    when that split has one class.
    """
    uniq = np.unique(s)
    if np.isin(uniq, (0.0, 1.0)).all():
        return 0.5, "given: binary detector, hallucinated iff value >= 0.5"
    if y.size == 0 or y.min() == y.max():
        return float("nan"), "no threshold: the calibration split has one class"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        t = float(M.choose_threshold(y, s, objective=objective))
    return t, f"threshold maximising {objective} on the calibration split; metric on the test split"


def group_by_mask(masks: dict[str, np.ndarray]) -> list[tuple[list[str], np.ndarray]]:
    """Group keys whose boolean masks are equal, so each group shares one bootstrap call."""
    groups: dict[bytes, tuple[list[str], np.ndarray]] = {}
    for key, mask in masks.items():
        groups.setdefault(np.packbits(mask).tobytes(), ([], mask))[0].append(key)
    return list(groups.values())
