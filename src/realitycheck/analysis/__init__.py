"""The analysis core: what evaluate and every study measure with.

It sits below the pipeline's evaluate stage, the studies and the labelers
and detectors (a ``panel`` labeler fits Dawid-Skene on the calibration split),
and above the datasets, backends and the store; it imports no component. It
holds the calibration/test split (:func:`split_of`), one
set of bootstrap settings (:class:`Bootstrap`), the measurement of many
detectors on the same items (:class:`Measure`), threshold choice and score
calibration (:func:`calibrate`, Platt or isotonic via scikit-learn) on the
calibration split, and the metric and objective lists in table order. The
label-key grammar it reads keys with is :class:`realitycheck.records.keys.LabelKey`.

It also holds the statistics the studies share beyond single metrics: bootstrap
tables of many confusion metrics or many detectors at once
(:func:`confusion_ci`, :func:`ranking_ci`), agreement between raters
(:func:`majority_vote`, :func:`dawid_skene`, :func:`pairwise_kappa`,
:func:`fleiss_by_count`, :func:`krippendorff_alpha`), factor analysis of
mixed data (:func:`fit_famd`), the refusal rule (:func:`refusal_mask`), prompt
multiplicity (:func:`multiplicity`, :func:`consistency_vs_correctness`), and the
rule by which a score ranks the responses the wrong way round (:func:`wrong_way`:
its whole AUROC interval below 0.5), which the report and the command line share.
Optional packages (crowd-kit, statsmodels, krippendorff, prince) and pandas
are imported inside the functions that use them (:func:`require_module`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from realitycheck.analysis._bootstrap import Bootstrap
from realitycheck.registry import lazy_names

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from realitycheck.analysis._calibrate import (
        BLAS_LOCK,
        calibrate,
    )
    from realitycheck.analysis._famd import (
        FamdFit,
        famd_scores,
        fit_famd,
    )
    from realitycheck.analysis._intervals import (
        INTERVAL_COLUMNS,
        RANKING_CI_COLUMNS,
        confusion_ci,
        ranking_ci,
    )
    from realitycheck.analysis._measure import (
        Measure,
        Where,
        choose_or_fix_threshold,
        group_by_mask,
    )
    from realitycheck.analysis._multiplicity import (
        CATEGORIES,
        Multiplicity,
        consistency_vs_correctness,
        multiplicity,
        self_consistency,
    )
    from realitycheck.analysis._names import (
        AGREEMENT_METRICS,
        CALIBRATION_METHODS,
        CALIBRATION_METRICS,
        OBJECTIVES,
        RANKING_METRICS,
        REJECTION_METRICS,
        SCORE_METRICS,
        THRESHOLD_METRICS,
    )
    from realitycheck.analysis._optional import require_module
    from realitycheck.analysis._orientation import (
        WRONG_WAY_BELOW,
        wrong_way,
    )
    from realitycheck.analysis._raters import (
        DawidSkeneFit,
        dawid_skene,
        fleiss_by_count,
        krippendorff_alpha,
        leave_one_out_majority,
        majority_vote,
        pairwise_kappa,
    )
    from realitycheck.analysis._refusal import refusal_mask
    from realitycheck.analysis._split import (
        CALIBRATION,
        TEST,
        split_of,
    )

_LAZY = {
    "BLAS_LOCK": "_calibrate",
    "CALIBRATION_METHODS": "_names",
    "calibrate": "_calibrate",
    "FamdFit": "_famd",
    "famd_scores": "_famd",
    "fit_famd": "_famd",
    "INTERVAL_COLUMNS": "_intervals",
    "RANKING_CI_COLUMNS": "_intervals",
    "confusion_ci": "_intervals",
    "ranking_ci": "_intervals",
    "Measure": "_measure",
    "Where": "_measure",
    "choose_or_fix_threshold": "_measure",
    "group_by_mask": "_measure",
    "CATEGORIES": "_multiplicity",
    "Multiplicity": "_multiplicity",
    "consistency_vs_correctness": "_multiplicity",
    "multiplicity": "_multiplicity",
    "self_consistency": "_multiplicity",
    "AGREEMENT_METRICS": "_names",
    "CALIBRATION_METRICS": "_names",
    "OBJECTIVES": "_names",
    "RANKING_METRICS": "_names",
    "REJECTION_METRICS": "_names",
    "SCORE_METRICS": "_names",
    "THRESHOLD_METRICS": "_names",
    "require_module": "_optional",
    "WRONG_WAY_BELOW": "_orientation",
    "wrong_way": "_orientation",
    "DawidSkeneFit": "_raters",
    "dawid_skene": "_raters",
    "fleiss_by_count": "_raters",
    "krippendorff_alpha": "_raters",
    "leave_one_out_majority": "_raters",
    "majority_vote": "_raters",
    "pairwise_kappa": "_raters",
    "refusal_mask": "_refusal",
    "CALIBRATION": "_split",
    "TEST": "_split",
    "split_of": "_split",
}
"""Each name loaded on first use, from its module (the command line's ``--help`` stays cheap)."""

__all__ = [
    "AGREEMENT_METRICS",
    "BLAS_LOCK",
    "CALIBRATION",
    "CALIBRATION_METHODS",
    "CALIBRATION_METRICS",
    "CATEGORIES",
    "INTERVAL_COLUMNS",
    "OBJECTIVES",
    "RANKING_CI_COLUMNS",
    "RANKING_METRICS",
    "REJECTION_METRICS",
    "SCORE_METRICS",
    "TEST",
    "THRESHOLD_METRICS",
    "WRONG_WAY_BELOW",
    "Bootstrap",
    "DawidSkeneFit",
    "FamdFit",
    "Measure",
    "Multiplicity",
    "Where",
    "calibrate",
    "choose_or_fix_threshold",
    "confusion_ci",
    "consistency_vs_correctness",
    "dawid_skene",
    "famd_scores",
    "fit_famd",
    "fleiss_by_count",
    "group_by_mask",
    "krippendorff_alpha",
    "leave_one_out_majority",
    "majority_vote",
    "multiplicity",
    "pairwise_kappa",
    "ranking_ci",
    "refusal_mask",
    "require_module",
    "self_consistency",
    "split_of",
    "wrong_way",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
