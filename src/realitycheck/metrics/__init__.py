"""Metrics: pure functions in the scikit-learn style, positive class = hallucinated.

Labels ``y_true`` are 0/1 or bool with 1/True = hallucinated; scores ``y_score``
are oriented higher = more likely hallucinated; predictions ``y_pred`` are 0/1.
Bad arguments raise :class:`~realitycheck.errors.InvalidInputError` before any
work; an undefined value (one class only, a zero division) is NaN plus an
:class:`UndefinedMetricWarning`.
"""

from realitycheck.metrics._bootstrap import BootstrapResult, bootstrap_ci
from realitycheck.metrics._classification import (
    accuracy,
    balanced_accuracy,
    cohen_kappa,
    f1,
    f1_macro,
    f1_weighted,
    precision,
    recall,
)
from realitycheck.metrics._correlation import pearson, spearman
from realitycheck.metrics._ranking import auroc, pr_auc, precision_recall_curve, roc_curve
from realitycheck.metrics._threshold import choose_threshold
from realitycheck.metrics._validation import UndefinedMetricWarning

__all__ = [
    "BootstrapResult",
    "UndefinedMetricWarning",
    "accuracy",
    "auroc",
    "balanced_accuracy",
    "bootstrap_ci",
    "choose_threshold",
    "cohen_kappa",
    "f1",
    "f1_macro",
    "f1_weighted",
    "pearson",
    "pr_auc",
    "precision",
    "precision_recall_curve",
    "recall",
    "roc_curve",
    "spearman",
]
