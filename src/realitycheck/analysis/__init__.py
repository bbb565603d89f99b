"""The analysis core: what evaluate and every study measure with.

It sits below the pipeline's evaluate stage and the studies, and above the
components and the store: the calibration/test split (:func:`split_of`), one
set of bootstrap settings (:class:`Bootstrap`), the measurement of many
detectors on the same items (:class:`Measure`), threshold choice on the
calibration split, and the metric and objective lists in table order. The
label-key grammar it reads keys with is :class:`realitycheck.keys.LabelKey`.
"""

from realitycheck.analysis._bootstrap import Bootstrap
from realitycheck.analysis._measure import Measure, Where, choose_or_fix_threshold, group_by_mask
from realitycheck.analysis._names import (
    AGREEMENT_METRICS,
    OBJECTIVES,
    RANKING_METRICS,
    THRESHOLD_METRICS,
)
from realitycheck.analysis._split import CALIBRATION, TEST, split_of

__all__ = [
    "AGREEMENT_METRICS",
    "CALIBRATION",
    "OBJECTIVES",
    "RANKING_METRICS",
    "TEST",
    "THRESHOLD_METRICS",
    "Bootstrap",
    "Measure",
    "Where",
    "choose_or_fix_threshold",
    "group_by_mask",
    "split_of",
]
