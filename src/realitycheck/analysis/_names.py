"""The metric and objective lists of evaluate and the studies, named once.

The names come from the metric functions' own lists in
:mod:`realitycheck.metrics` (a test checks that each tuple here holds only
those names); the tuples only fix the order in which the tables show them.
"""

from __future__ import annotations

from realitycheck.metrics import (
    CALIBRATION_METRICS,
    RANKING_METRICS,
    REJECTION_METRICS,
    THRESHOLD_OBJECTIVES,
)

__all__ = [
    "AGREEMENT_METRICS",
    "CALIBRATION_METHODS",
    "CALIBRATION_METRICS",
    "OBJECTIVES",
    "RANKING_METRICS",
    "REJECTION_METRICS",
    "SCORE_METRICS",
    "THRESHOLD_METRICS",
]

SCORE_METRICS: tuple[str, ...] = RANKING_METRICS + REJECTION_METRICS
"""Metrics of a detector's score on every usable item, in table order: AUROC, PR-AUC, PRR."""

THRESHOLD_METRICS: tuple[str, ...] = (
    "balanced_accuracy",
    "f1_macro",
    "f1_weighted",
    "precision",
    "recall",
    "f1",
    "accuracy",
    "cohen_kappa",
)
"""Metrics of a detector at a threshold, in table order: every classification metric."""

AGREEMENT_METRICS: tuple[str, ...] = (
    "precision",
    "recall",
    "f1",
    "accuracy",
    "cohen_kappa",
    "balanced_accuracy",
    "f1_macro",
)
"""Metrics of a labeler's verdicts against human labels, in table order."""

OBJECTIVES: tuple[str, ...] = THRESHOLD_OBJECTIVES
"""What a calibration-split threshold may maximise."""

CALIBRATION_METHODS: tuple[str, ...] = ("platt", "isotonic", "none")
"""How a score becomes a probability (:func:`calibrate`): Platt scaling, isotonic regression,
or as is."""
