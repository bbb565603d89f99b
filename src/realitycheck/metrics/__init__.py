"""Metrics: pure functions in the scikit-learn style, positive class = hallucinated.

Labels ``y_true`` are 0/1 or bool with 1/True = hallucinated; scores ``y_score``
are oriented higher = more likely hallucinated; predictions ``y_pred`` are 0/1.
Bad arguments raise :class:`~realitycheck.errors.InvalidInputError` before any
work; an undefined value (one class only, a zero division) is NaN plus an
:class:`UndefinedMetricWarning`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.registry import lazy_names

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.metrics._association import (
        correlation_pvalue,
        discordant_pairs,
        kendall_tau_b,
    )
    from realitycheck.metrics._auroc_comparison import (
        DeLong,
        PairedBootstrap,
        auroc_many,
        delong,
        paired_auroc_bootstrap,
    )
    from realitycheck.metrics._bootstrap import (
        BootstrapResult,
        bootstrap_ci,
        bootstrap_distribution,
    )
    from realitycheck.metrics._calibration import (
        ECE_BINNINGS,
        Reliability,
        brier,
        ece,
        reliability,
    )
    from realitycheck.metrics._classification import (
        CLASSIFICATION_METRICS,
        accuracy,
        balanced_accuracy,
        cohen_kappa,
        f1,
        f1_macro,
        f1_weighted,
        from_counts,
        precision,
        recall,
    )
    from realitycheck.metrics._correlation import (
        pearson,
        rankdata,
        spearman,
    )
    from realitycheck.metrics._little_bootstrap import (
        LITTLE_BOOTSTRAP_ABOVE,
        LittleBootstraps,
    )
    from realitycheck.metrics._locks import (
        LockedState,
    )
    from realitycheck.metrics._names import (
        CALIBRATION_METRICS,
        RANKING_METRICS,
        REJECTION_METRICS,
        THRESHOLD_OBJECTIVES,
    )
    from realitycheck.metrics._proportion import (
        wilson_interval,
    )
    from realitycheck.metrics._ranking import (
        auroc,
        pr_auc,
        precision_recall_curve,
        roc_curve,
    )
    from realitycheck.metrics._rejection import (
        RejectionCurve,
        prr,
        rejection_curve,
    )
    from realitycheck.metrics._resamples import (
        Resamples,
        resample_indices,
    )
    from realitycheck.metrics._threshold import (
        choose_threshold,
    )
    from realitycheck.metrics._validation import (
        UndefinedMetricWarning,
    )

_LAZY = {
    **dict.fromkeys(("correlation_pvalue", "discordant_pairs", "kendall_tau_b"), "_association"),
    **dict.fromkeys(
        ("auroc_many", "delong", "paired_auroc_bootstrap", "DeLong", "PairedBootstrap"),
        "_auroc_comparison",
    ),
    **dict.fromkeys(("bootstrap_ci", "bootstrap_distribution", "BootstrapResult"), "_bootstrap"),
    **dict.fromkeys(("ECE_BINNINGS", "brier", "ece", "reliability", "Reliability"), "_calibration"),
    **dict.fromkeys(
        (
            "CLASSIFICATION_METRICS",
            "accuracy",
            "balanced_accuracy",
            "cohen_kappa",
            "f1",
            "f1_macro",
            "f1_weighted",
            "from_counts",
            "precision",
            "recall",
        ),
        "_classification",
    ),
    **dict.fromkeys(("pearson", "rankdata", "spearman"), "_correlation"),
    **dict.fromkeys(("LITTLE_BOOTSTRAP_ABOVE", "LittleBootstraps"), "_little_bootstrap"),
    "LockedState": "_locks",
    **dict.fromkeys(
        ("CALIBRATION_METRICS", "RANKING_METRICS", "REJECTION_METRICS", "THRESHOLD_OBJECTIVES"),
        "_names",
    ),
    "wilson_interval": "_proportion",
    **dict.fromkeys(("auroc", "pr_auc", "precision_recall_curve", "roc_curve"), "_ranking"),
    **dict.fromkeys(("prr", "rejection_curve", "RejectionCurve"), "_rejection"),
    **dict.fromkeys(("resample_indices", "Resamples"), "_resamples"),
    "choose_threshold": "_threshold",
    "UndefinedMetricWarning": "_validation",
}
"""Each name loaded on first use, from its module: the name lists (``_names``) load no numpy."""

__all__ = [
    "BootstrapResult",
    "CALIBRATION_METRICS",
    "CLASSIFICATION_METRICS",
    "DeLong",
    "ECE_BINNINGS",
    "LITTLE_BOOTSTRAP_ABOVE",
    "LittleBootstraps",
    "LockedState",
    "PairedBootstrap",
    "RANKING_METRICS",
    "REJECTION_METRICS",
    "RejectionCurve",
    "Reliability",
    "Resamples",
    "THRESHOLD_OBJECTIVES",
    "UndefinedMetricWarning",
    "accuracy",
    "auroc",
    "auroc_many",
    "balanced_accuracy",
    "bootstrap_ci",
    "bootstrap_distribution",
    "brier",
    "choose_threshold",
    "cohen_kappa",
    "correlation_pvalue",
    "delong",
    "discordant_pairs",
    "ece",
    "f1",
    "f1_macro",
    "f1_weighted",
    "from_counts",
    "kendall_tau_b",
    "paired_auroc_bootstrap",
    "pearson",
    "pr_auc",
    "precision",
    "precision_recall_curve",
    "prr",
    "rankdata",
    "recall",
    "rejection_curve",
    "reliability",
    "resample_indices",
    "roc_curve",
    "spearman",
    "wilson_interval",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
