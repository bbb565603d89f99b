"""The metric and objective name lists, in table order, declared once.

The modules that compute the metrics check their arguments against these
lists; they import numpy, this module nothing, so that a settings field can
name its choices (``EvaluationConfig.threshold_objective``) without loading
an array library (the command line's ``--help``).
"""

from __future__ import annotations

__all__ = ["CALIBRATION_METRICS", "RANKING_METRICS", "REJECTION_METRICS", "THRESHOLD_OBJECTIVES"]

RANKING_METRICS: tuple[str, ...] = ("auroc", "pr_auc")
"""Metrics of the ranking a score makes (higher is better), in table order."""

REJECTION_METRICS: tuple[str, ...] = ("prr",)
"""Metrics of selective prediction (rank-based: no calibration needed)."""

CALIBRATION_METRICS: tuple[str, ...] = ("ece", "brier")
"""Metrics of probabilities (lower is better), in table order."""

THRESHOLD_OBJECTIVES: tuple[str, ...] = (
    "f1_macro",
    "balanced_accuracy",
    "f1",
    "f1_weighted",
    "youden",
)
"""What :func:`choose_threshold` may maximise."""
