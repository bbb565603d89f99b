"""Choosing a decision threshold on a calibration split."""

from __future__ import annotations

from typing import Any

import numpy as np

from realitycheck.metrics._classification import from_counts
from realitycheck.metrics._names import THRESHOLD_OBJECTIVES
from realitycheck.metrics._ranking import (
    check_labels_scores,
    counts_at_thresholds,
    in_score_units,
)
from realitycheck.metrics._validation import warn_undefined
from realitycheck.params import OneOf, check_arg

__all__ = ["THRESHOLD_OBJECTIVES", "choose_threshold"]


# Objective values this close to the best one count as ties (rounding noise).
_TIE_TOLERANCE = 1e-12


def choose_threshold(y_true: Any, y_score: Any, *, objective: str = "f1_macro") -> float:
    """Pick the score threshold that maximises a classification objective.

    Items are predicted hallucinated iff ``y_score >= threshold``. Every
    distinct score value is tried; among the thresholds reaching the best
    objective (within 1e-12) the **smallest** is returned, so ties resolve
    towards flagging more items, deterministically.

    Call it on a calibration split and apply the threshold to a separate test
    split: a threshold chosen on the data it is evaluated on overstates every
    thresholded metric.

    Args:
        y_true: Labels of shape (n,), 1/True = hallucinated.
        y_score: Scores of shape (n,), higher = more likely hallucinated.
        objective: ``"f1_macro"``, ``"balanced_accuracy"``, ``"f1"`` (of the
            hallucinated class), ``"f1_weighted"`` or ``"youden"`` (true
            positive rate minus false positive rate; same choice as
            balanced accuracy).

    Returns:
        One of the values of ``y_score``. NaN, with an
        :class:`UndefinedMetricWarning`, when the objective is undefined at
        every threshold (e.g. balanced accuracy with one class in ``y_true``).

    Raises:
        InvalidInputError: Bad shapes, lengths, labels, non-finite scores, or an
            unknown objective.
    """
    check_arg(objective, OneOf(THRESHOLD_OBJECTIVES), name="objective", owner="choose_threshold")
    labels, scores, units = check_labels_scores(y_true, y_score, "choose_threshold")
    fps, tps, thresholds = counts_at_thresholds(labels, scores)
    n_pos = float(labels.sum())
    fns = n_pos - tps
    tns = (labels.size - n_pos) - fps
    if objective == "youden":
        values = 2 * from_counts("balanced_accuracy", tps, fps, fns, tns) - 1
    else:
        values = from_counts(objective, tps, fps, fns, tns)
    if np.isnan(values).all():
        warn_undefined(
            f"choose_threshold: {objective} is undefined at every threshold; returning NaN."
        )
        return float("nan")
    best = np.nanmax(values)
    # Thresholds are in decreasing order: the last tie is the smallest threshold.
    ties = np.flatnonzero(values >= best - _TIE_TOLERANCE)
    return float(in_score_units(thresholds[ties[-1] :], units)[0])
