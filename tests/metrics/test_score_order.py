"""AUROC, PR-AUC and PRR in one sorted pass: equal to sklearn, the plain PRR and each kernel."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from realitycheck import metrics as M
from realitycheck.metrics import _score_order
from realitycheck.metrics._ranking import RankIndex, WeightedItems, weighted_rank_metric
from realitycheck.metrics._rejection import RejectionOrder, weighted_prr_sorted
from realitycheck.metrics._score_order import ScoreOrder, sorted_metric_values


def _data(seed, n, k=3):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    scores = y + rng.normal(size=(k, n))
    scores[1] = np.round(scores[1], 1)  # many ties
    scores[2] = np.round(scores[2])  # few distinct values
    counts = np.stack([np.bincount(r, minlength=n) for r in rng.integers(0, n, (40, n))])
    return y, scores, counts.astype(np.uint8)


def _plain_prr(y, s):
    """LM-Polygraph's PRR on distinct scores: mean over kept sizes m of the kept accuracy."""
    quality = (~y)[np.argsort(s)].astype(float)  # ascending score: kept first
    m = np.arange(1, y.size + 1)
    area = np.mean(np.cumsum(quality) / m)
    oracle = np.mean(np.cumsum(np.sort(quality)[::-1]) / m)
    random = quality.mean()
    return (area - random) / (oracle - random)


@pytest.mark.parametrize("seed", range(3))
def test_values_equal_sklearn_and_the_plain_prr_on_the_expanded_resamples(seed):
    n = 150
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    scores = (y + rng.normal(size=(2, n))).astype(np.float64)  # distinct scores
    counts = np.stack([np.bincount(r, minlength=n) for r in rng.integers(0, n, (6, n))])
    got = sorted_metric_values([ScoreOrder.build(y, s) for s in scores], y, counts.astype(np.uint8))
    for k, s in enumerate(scores):
        for b, w in enumerate(counts):
            yy, ss = np.repeat(y, w), np.repeat(s, w)
            assert got["auroc"][k, b] == pytest.approx(roc_auc_score(yy, ss), abs=1e-12)
            assert got["pr_auc"][k, b] == pytest.approx(average_precision_score(yy, ss), abs=1e-12)
            # Copies of one item tie only with each other and share its label: any order is exact.
            assert got["prr"][k, b] == pytest.approx(_plain_prr(yy, ss), abs=1e-12)


@pytest.mark.parametrize("rows_a_block", [None, 3])
@pytest.mark.parametrize(("seed", "n"), [(0, 5), (1, 300), (2, 2000)])
def test_values_are_bit_identical_to_the_separate_kernels_with_ties(
    seed, n, rows_a_block, monkeypatch
):
    if rows_a_block:  # 40 rows in blocks of 3, the last of 1
        monkeypatch.setattr(_score_order, "_BLOCK_ITEMS", rows_a_block * n)
    y, scores, counts = _data(seed, n)
    got = sorted_metric_values([ScoreOrder.build(y, s) for s in scores], y, counts)
    items = WeightedItems.prepare(counts.astype(np.int32), y)
    for k, s in enumerate(scores):
        index = RankIndex.build(y, s)
        np.testing.assert_array_equal(got["auroc"][k], weighted_rank_metric("auroc", index, items))
        np.testing.assert_array_equal(
            got["pr_auc"][k], weighted_rank_metric("pr_auc", index, items)
        )
        want = weighted_prr_sorted(RejectionOrder.build(y, s), counts.astype(np.int64))
        np.testing.assert_array_equal(got["prr"][k], want)


def test_undefined_rows_are_nan_as_in_the_kernels():
    y = np.array([True, False, True, False])
    counts = np.array([[1, 1, 1, 1], [2, 0, 2, 0], [0, 3, 0, 1], [0, 0, 0, 0]], dtype=np.uint8)
    got = sorted_metric_values([ScoreOrder.build(y, np.array([0.9, 0.1, 0.4, 0.4]))], y, counts)
    assert got["auroc"][0, 0] == pytest.approx(0.875)  # (1 + 1 + 1 + 0.5) / 4
    assert np.isnan(got["auroc"][0, 1:]).all()  # one class, or none
    assert got["pr_auc"][0, 1] == 1.0 and np.isnan(got["pr_auc"][0, 2:]).all()
    assert np.isnan(got["prr"][0, 1:]).all()


def test_kept_resamples_compute_the_three_once_and_give_fresh_draws_intervals(monkeypatch):
    from realitycheck.metrics import _resamples

    y, scores, _ = _data(4, 500)
    calls = []
    real = _resamples.sorted_metric_values
    monkeypatch.setattr(
        _resamples, "sorted_metric_values", lambda *a, **kw: calls.append(kw) or real(*a, **kw)
    )
    shared = M.Resamples(500, 200, 4)
    for metric in ("auroc", "pr_auc", "prr"):
        reused = M.bootstrap_ci(metric, y, scores, n_resamples=200, seed=4, resamples=shared)
        fresh = M.bootstrap_ci(metric, y, scores, n_resamples=200, seed=4)
        for field in ("value", "ci_low", "ci_high", "n_resamples"):
            np.testing.assert_array_equal(getattr(reused, field), getattr(fresh, field))
    assert len(calls) == 1  # one chunk, one pass for all three metrics


def test_resamples_without_prr_skip_it_give_the_same_numbers_and_compute_it_when_asked(
    monkeypatch,
):
    from realitycheck.metrics import _resamples

    y, scores, counts = _data(5, 400)
    orders = [ScoreOrder.build(y, s) for s in scores]
    ranking = sorted_metric_values(orders, y, counts, prr=False)
    full = sorted_metric_values(orders, y, counts)
    assert set(ranking) == {"auroc", "pr_auc"}
    for metric in ranking:
        np.testing.assert_array_equal(ranking[metric], full[metric])

    calls = []
    real = _resamples.sorted_metric_values
    monkeypatch.setattr(
        _resamples, "sorted_metric_values", lambda *a, **kw: calls.append(kw) or real(*a, **kw)
    )
    lean = M.Resamples(400, 200, 5, prr=False)
    for metric in ("auroc", "pr_auc", "prr", "auroc"):
        got = M.bootstrap_ci(metric, y, scores, n_resamples=200, seed=5, resamples=lean)
        fresh = M.bootstrap_ci(metric, y, scores, n_resamples=200, seed=5)
        for field in ("value", "ci_low", "ci_high", "n_resamples"):
            np.testing.assert_array_equal(getattr(got, field), getattr(fresh, field))
    # AUROC and PR-AUC in one pass without PRR; PRR asked for: one pass with it, which
    # the last AUROC reuses.
    assert calls == [{"prr": False}, {"prr": True}]
