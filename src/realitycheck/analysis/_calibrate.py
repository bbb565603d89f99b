"""Turning a detector's score into a probability of hallucination, fitted on the calibration split.

ECE and the Brier score judge probabilities; a detector's score (a length, a
log-probability, an overlap) is only oriented higher = more likely
hallucinated. :func:`calibrate` fits a monotone map from score to
probability on the calibration split (scikit-learn's logistic regression for
Platt scaling, its isotonic regression otherwise) and applies it to every
score, so the metrics are then measured on the separate test split.

SciPy's wheels bundle their own OpenBLAS beside NumPy's. The Platt fit's
L-BFGS-B steps call it on two-element vectors, where waking its threads
costs far more than the work (3 ms a step on a 2-core machine), so the fit
runs it on one thread; no result depends on it (NumPy's BLAS, whose thread
count changes the fit's last bits, keeps its own).
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["BLAS_LOCK", "calibrate"]

BLAS_LOCK = threading.Lock()
"""Held by a thread while it changes or restores BLAS thread counts (a Platt
fit holds it throughout), so that threads never restore each other's counts."""

FloatArray = npt.NDArray[np.float64]

# Practically unpenalised: the targets are smoothed, so the fit stays finite.
_PLATT_C = 1e6


@functools.cache
def _scipy_own_blas() -> Any:
    """The thread pools of the BLAS that SciPy's wheel bundles (none when SciPy uses NumPy's).

    Built once per process (scanning the loaded libraries costs about 3 ms, a
    third of a small Platt fit): the selection reads each library's thread
    count live when it limits or restores it. sklearn, imported before the
    first call, has loaded SciPy's BLAS by then.
    """
    import scipy
    from threadpoolctl import ThreadpoolController

    bundled = os.path.dirname(scipy.__file__) + ".libs" + os.sep
    controller = ThreadpoolController()
    own = [lib.filepath for lib in controller.lib_controllers if lib.filepath.startswith(bundled)]
    return controller.select(filepath=own)


def _platt(y: FloatArray, s: FloatArray, apply: FloatArray) -> FloatArray:
    """Platt (1999) scaling: ``p = 1 / (1 + exp(-(a s + b)))`` fitted by maximum likelihood.

    Platt's smoothed targets, ``(N+ + 1) / (N+ + 2)`` for hallucinated items and
    ``1 / (N- + 2)`` for the others, are fitted as weights of a positive and a
    negative copy of each item, which keeps the fit finite when the classes
    separate. The score is standardised on the fitted items first.
    """
    from sklearn.linear_model import LogisticRegression

    n_pos = float(y.sum())
    n_neg = float(y.size - n_pos)
    target = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    centre, scale = float(s.mean()), float(s.std()) or 1.0
    x = ((s - centre) / scale)[:, None]
    model = LogisticRegression(C=_PLATT_C, tol=1e-10, max_iter=1000)
    with BLAS_LOCK, _scipy_own_blas().limit(limits=1):
        model.fit(
            np.vstack([x, x]),
            np.r_[np.ones(y.size), np.zeros(y.size)],
            sample_weight=np.r_[target, 1 - target],
        )
    return np.asarray(model.predict_proba(((apply - centre) / scale)[:, None])[:, 1], float)


def _isotonic(y: FloatArray, s: FloatArray, apply: FloatArray) -> FloatArray:
    """Isotonic regression (Zadrozny and Elkan, 2002): the best non-decreasing step map.

    Scores beyond the fitted range take the value at its nearest end.
    """
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    model.fit(s, y)
    return np.asarray(model.predict(apply), float)


_NAMES = {"platt": "Platt scaling", "isotonic": "isotonic regression"}


def calibrate(
    y: FloatArray, s: FloatArray, apply: FloatArray, method: str
) -> tuple[FloatArray | None, str]:
    """Fit ``method`` on ``(y, s)`` (the calibration split) and map ``apply`` to probabilities.

    Args:
        y: 0/1 labels of the fitted items, 1 = hallucinated.
        s: Their scores, higher = more likely hallucinated (finite).
        apply: Scores to map (NaN stays NaN; none, or only NaN, gives all NaN).
        method: ``"platt"``, ``"isotonic"``, or ``"none"`` to take the scores
            as probabilities when every one lies in [0, 1].

    Returns:
        The probabilities of ``apply`` (or None when no map can be fitted: the
        calibration split holds one class, or ``"none"`` meets a score
        outside [0, 1]) and a note saying what was done.
    """
    known = ~np.isnan(apply)
    if method == "none":
        if ((apply[known] < 0) | (apply[known] > 1)).any():
            return None, "no ECE or Brier score: values outside [0, 1] and calibration = none"
        return apply.copy(), "scores taken as probabilities (calibration = none); test split"
    if y.size == 0 or y.min() == y.max():
        return None, "no calibration: the calibration split has one class"
    fit = _platt if method == "platt" else _isotonic
    out = np.full(apply.shape, np.nan)
    if known.any():  # nothing to map (e.g. an empty test split) stays all NaN
        out[known] = fit(y.astype(float), s.astype(float), apply[known].astype(float))
    note = (
        f"{_NAMES[method]} fitted on {y.size:,} calibration-split responses "
        f"({int(y.sum()):,} hallucinated); metric on the test split"
    )
    return out, note
