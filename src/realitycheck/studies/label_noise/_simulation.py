"""Noisy test labels, and detector measurement under them.

Labels are arrays of 1.0 (hallucinated) / 0.0 / NaN (no reference label: the
item is left out of every measurement). Noise only ever touches items that
have a reference label.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from realitycheck import metrics as M
from realitycheck.analysis import Bootstrap, Measure, Where, choose_or_fix_threshold, group_by_mask

__all__ = [
    "OBJECTIVE",
    "Noisy",
    "apply_proposal",
    "dissenting_label_proposal",
    "measure_condition",
    "random_flips",
]

OBJECTIVE = "f1_macro"


@dataclass(frozen=True)
class Noisy:
    """A noisy copy of the reference labels.

    Attributes:
        labels: The noisy labels (NaN where the reference has none).
        natural_rate: Share of labelled items on which the noise source differs
            from the reference, before any cap.
        rate: Share of labelled items whose label was actually changed.
    """

    labels: np.ndarray
    natural_rate: float
    rate: float


def random_flips(y: np.ndarray, rate: float, repetitions: int, seed: int) -> np.ndarray:
    """Flip exactly ``round(rate * n)`` labelled items, chosen at random, per repetition.

    Returns:
        Shape (repetitions, len(y)); NaN stays NaN.
    """
    rng = np.random.default_rng(seed)
    labelled = np.flatnonzero(~np.isnan(y))
    n_flip = int(round(rate * labelled.size))
    out = np.tile(y, (repetitions, 1))
    if n_flip == 0:
        return out
    order = np.argsort(rng.random((repetitions, labelled.size)), axis=1)[:, :n_flip]
    rows = np.repeat(np.arange(repetitions), n_flip)
    cols = labelled[order.ravel()]
    out[rows, cols] = 1.0 - out[rows, cols]
    return out


def dissenting_label_proposal(y: np.ndarray, ratings: np.ndarray) -> np.ndarray:
    """Where raters disagree, the minority verdict; NaN elsewhere.

    On a tied vote the minority is the verdict that differs from the reference
    ``y`` (NaN when ``y`` is NaN).
    """
    ones = (ratings == 1).sum(axis=1)
    zeros = (ratings == 0).sum(axis=1)
    tie_break = np.where(np.isnan(y), np.nan, 1.0 - y)
    minority = np.where(ones < zeros, 1.0, np.where(zeros < ones, 0.0, tie_break))
    return np.where((ones > 0) & (zeros > 0), minority, np.nan)


def apply_proposal(y: np.ndarray, proposal: np.ndarray, *, cap: float | None, seed: int) -> Noisy:
    """Replace reference labels by ``proposal`` where it has a verdict.

    With ``cap``, at most ``round(cap * n_labelled)`` of the differing items
    (chosen at random) are changed, as paper 002 controls its human-noise sets
    at a fixed noise level.
    """
    labelled = ~np.isnan(y)
    n = int(labelled.sum())
    differ = np.flatnonzero(labelled & ~np.isnan(proposal) & (proposal != y))
    natural = differ.size / n if n else float("nan")
    if cap is not None:
        limit = int(round(cap * n))
        if differ.size > limit:
            differ = np.sort(np.random.default_rng(seed).choice(differ, limit, replace=False))
    out = y.copy()
    out[differ] = proposal[differ]
    return Noisy(out, natural, differ.size / n if n else float("nan"))


def _point(metric: str, y: np.ndarray, s: np.ndarray) -> float:
    if y.size == 0 or y.min() == y.max():
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        return float(M.auroc(y, s) if metric == "auroc" else M.pr_auc(y, s))


def _balanced_accuracy(y: np.ndarray, s: np.ndarray, test: np.ndarray) -> tuple[float, float]:
    """Threshold chosen on the calibration items, balanced accuracy on the test items."""
    threshold, _ = choose_or_fix_threshold(y[~test], s[~test], OBJECTIVE)
    yt, st = y[test], s[test]
    if np.isnan(threshold) or yt.size == 0 or yt.min() == yt.max():
        return threshold, float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        return threshold, float(M.balanced_accuracy(yt, (st >= threshold).astype(int)))


@functools.lru_cache(maxsize=4)
def _measure(bootstrap: Bootstrap) -> Measure:
    """One :class:`Measure` per bootstrap setting for the whole study.

    Its resamples are drawn once per item count and its sorted metric values
    are kept, so PR-AUC reuses AUROC's pass over the same labels and scores
    and every condition reuses the draws (the same seeded draws a fresh
    Measure would make: the numbers are unchanged).
    """
    return Measure(bootstrap, prr=False)  # the study reports no PRR: not computed beside them


def measure_condition(
    y: np.ndarray,
    scores: Mapping[str, np.ndarray],
    test: np.ndarray,
    bootstrap: Bootstrap | None,
) -> dict[str, dict[str, float]]:
    """AUROC and PR-AUC (CIs with ``bootstrap``) and balanced accuracy per detector.

    Balanced accuracy: threshold chosen on the calibration items (``~test``)
    with these same labels, as evaluate does, and applied to the test items.
    """
    valid = {d: ~np.isnan(y) & ~np.isnan(s) for d, s in scores.items()}
    out: dict[str, dict[str, float]] = {d: {} for d in scores}
    measure = None if bootstrap is None else _measure(bootstrap)
    for keys, mask in group_by_mask(valid):
        ym = y[mask]
        for metric in ("auroc", "pr_auc"):
            if measure is None:
                for d in keys:
                    out[d][metric] = _point(metric, ym, scores[d][mask])
                continue
            stacked = np.vstack([scores[d][mask] for d in keys])
            where = Where(labeler="", slice="", dataset="", n_excluded=0)
            for d, row in zip(keys, measure.rows(metric, keys, ym, stacked, where), strict=True):
                out[d].update(
                    {
                        metric: row.value,
                        f"{metric}_ci_low": row.ci_low,
                        f"{metric}_ci_high": row.ci_high,
                    }
                )
        for d in keys:
            threshold, bacc = _balanced_accuracy(ym, scores[d][mask], test[mask])
            out[d].update(
                n=float(mask.sum()),
                n_positive=float(ym.sum()),
                threshold=threshold,
                balanced_accuracy=bacc,
            )
    return out
