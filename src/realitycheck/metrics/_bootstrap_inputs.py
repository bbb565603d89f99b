"""The inputs of the bootstrap functions, checked: metric, labels, scores, options."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._calibration import check_probabilities
from realitycheck.metrics._classification import CLASSIFICATION_METRICS
from realitycheck.metrics._names import CALIBRATION_METRICS, RANKING_METRICS, REJECTION_METRICS
from realitycheck.metrics._validation import (
    check_binary,
    check_numbers,
    check_same_length,
    check_scores,
)
from realitycheck.params import AnyOf, Interval, OneOf, OrNone, Satisfies, check_arg, param_error

__all__ = ["BOOTSTRAP_METRICS", "RANKING_METRICS", "check_options", "prepare"]

FloatArray = npt.NDArray[np.float64]
Metric = str | Callable[[Any, Any], float]

BOOTSTRAP_METRICS: tuple[str, ...] = (
    RANKING_METRICS + REJECTION_METRICS + CALIBRATION_METRICS + CLASSIFICATION_METRICS
)
# Metrics of the score itself: no threshold applies.
_SCORE_METRICS = RANKING_METRICS + REJECTION_METRICS + CALIBRATION_METRICS


# The arguments of bootstrap_ci and bootstrap_distribution, declared once.
_METRIC = AnyOf(
    OneOf(BOOTSTRAP_METRICS), Satisfies(callable, "a callable(y_true, y_score) -> float")
)
_N_RESAMPLES = Interval(int, 1)
_CONFIDENCE = Interval(float, 0, 1, closed="neither")
_SEED = OrNone(Interval(int, 0))


def check_options(n_resamples: Any, confidence: Any, seed: Any, owner: str) -> None:
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


def prepare(
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
