"""Scores too large for float64, and correlations of values near the float64 limit."""

import warnings

import numpy as np
import pytest

from realitycheck.metrics import (
    UndefinedMetricWarning,
    auroc,
    auroc_many,
    bootstrap_ci,
    choose_threshold,
    delong,
    discordant_pairs,
    kendall_tau_b,
    pearson,
    pr_auc,
    precision_recall_curve,
    rankdata,
    roc_curve,
    spearman,
)

BIG = 2**53  # 2**53 + 1 is the first integer float64 cannot hold


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, None])
def test_auroc_keeps_integer_scores_beyond_2_53_apart(dtype):
    scores = [BIG + 1, BIG] if dtype is None else np.array([BIG + 1, BIG], dtype=dtype)
    # Before: 0.5 (both scores became 9007199254740992.0 and tied).
    assert auroc([1, 0], scores) == 1.0
    assert auroc([0, 1], scores) == 0.0
    assert pr_auc([1, 0], scores) == 1.0


def test_every_rank_metric_orders_huge_integers_exactly():
    y = [1, 0, 1, 0]
    s = [BIG + 3, BIG, BIG + 1, BIG]
    assert bootstrap_ci("auroc", y, s, n_resamples=20).value == 1.0
    assert auroc_many([y], [s]).tolist() == [[1.0]]
    assert delong(y, [s, [4, 3, 2, 1]]).auroc.tolist() == [1.0, 0.75]
    fpr, tpr, _ = roc_curve(y, s)
    assert tpr[1] == 0.5 and fpr[1] == 0.0  # the top score alone is a point of the curve
    precision, _, thresholds = precision_recall_curve(y, s)
    assert len(thresholds) == 3 and precision[-2] == 1.0
    assert choose_threshold(y, s, objective="f1") == float(BIG + 1)
    assert rankdata([BIG + 1, BIG]).tolist() == [2.0, 1.0]
    assert spearman([BIG + 2, BIG + 1, BIG], [3, 2, 1]) == pytest.approx(1.0)
    assert kendall_tau_b([BIG + 1, BIG], [2, 1])[0] == 1.0
    assert discordant_pairs([BIG + 1, BIG], [1, 2])[0] == [(1, 0)]


def test_int64_extremes_keep_their_order():
    scores = np.array([2**63 - 1, 2**63 - 2, -(2**63), -(2**63) + 1], dtype=np.int64)
    # 3 of 4 pairs ordered (as integers); as float64 two pairs tied and it was 0.5.
    assert auroc([1, 0, 0, 1], scores) == 0.75


def test_small_integer_scores_are_used_as_values():
    assert roc_curve([1, 0, 1], [3, 1, 2])[2].tolist() == [np.inf, 3.0, 2.0, 1.0]


def test_pearson_of_values_near_the_float64_limit_is_the_true_value():
    # Before: -1.0 (the mean overflowed to inf, the NaN was clamped to -1).
    # True value: r of [1, 1, -1, 0] and [1, 2, 3, 4] = -2.5 / sqrt(2.75 * 5).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = pearson([1e308, 1e308, -1e308, 0], [1, 2, 3, 4])
    assert r == pytest.approx(-2.5 / np.sqrt(2.75 * 5), rel=1e-12)
    assert pearson([5e-324, 0, 1e-323], [1, 2, 3]) == pytest.approx(0.5, rel=1e-12)


def test_pearson_never_clamps_a_nan(monkeypatch):
    from realitycheck.metrics import _correlation

    # Force the kernel's result to NaN (what an overflow would give): NaN with a warning.
    monkeypatch.setattr(_correlation.np.linalg, "norm", lambda v: np.float64(np.nan))
    with pytest.warns(UndefinedMetricWarning, match="overflow"):
        r = pearson([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])
    assert np.isnan(r)
