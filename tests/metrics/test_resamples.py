"""Resamples drawn once and shared: the same intervals as fresh draws and as a plain loop."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import f1_score, roc_auc_score

from realitycheck import metrics as M
from realitycheck.analysis import Bootstrap, Measure, Where
from realitycheck.errors import InvalidInputError
from realitycheck.metrics import _bootstrap, _resamples


def _data(seed, n, k=3):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    scores = y + rng.normal(size=(k, n)) * np.linspace(0.5, 2.0, k)[:, None]
    scores[k // 2] = np.round(scores[k // 2], 1)  # ties
    return y, scores


ALL = M.RANKING_METRICS + M.REJECTION_METRICS + M.CALIBRATION_METRICS + M.CLASSIFICATION_METRICS


@pytest.mark.parametrize("max_items", [0, 10**9])
def test_counts_are_the_multiplicities_of_resample_indices_on_every_pass(max_items, monkeypatch):
    monkeypatch.setattr(_resamples, "_CHUNK_ITEMS", 40 * 37)  # several chunks
    drawn = M.Resamples(37, 130, 9, max_items=max_items)
    want = [
        np.stack([np.bincount(row, minlength=37) for row in chunk])
        for chunk in M.resample_indices(37, 130, 9)
    ]
    assert len(want) == 4
    for _ in range(2):
        got = list(drawn.counts())
        assert [g.dtype for g in got] == [np.dtype(np.int64)] * 4
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    assert (drawn._kept is not None) == bool(max_items)


@pytest.mark.parametrize(("seed", "n"), [(0, 9), (1, 200), (2, 1500)])
def test_shared_resamples_give_the_intervals_of_fresh_draws_for_every_metric(seed, n):
    y, scores = _data(seed, n)
    probabilities = 1 / (1 + np.exp(-scores))
    shared = M.Resamples(n, 100, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        for metric in ALL:
            inputs = probabilities if metric in M.CALIBRATION_METRICS else scores
            kw = {"threshold": 0.4} if metric in M.CLASSIFICATION_METRICS else {}
            for rows in (inputs, inputs[0]):
                fresh = M.bootstrap_ci(metric, y, rows, n_resamples=100, seed=seed, **kw)
                reused = M.bootstrap_ci(
                    metric, y, rows, n_resamples=100, seed=seed, resamples=shared, **kw
                )
                for field in ("value", "ci_low", "ci_high", "n_resamples"):
                    np.testing.assert_array_equal(
                        getattr(reused, field), getattr(fresh, field), err_msg=metric
                    )


@pytest.mark.parametrize("seed", range(2))
def test_shared_intervals_equal_a_plain_loop_over_sklearn(seed):
    # b = 40 resamples: one sklearn call each per metric, the bulk of the test's time.
    n, b = 300, 40
    y, scores = _data(seed, n, k=1)
    s = scores[0]
    # The resamples, drawn independently: one (b, n) matrix from the seeded generator.
    rows = np.random.default_rng(seed).integers(0, n, size=(b, n))
    shared = M.Resamples(n, b, seed)
    checks = {
        "auroc": (lambda t, v: roc_auc_score(t, v), {}),
        "f1": (lambda t, v: f1_score(t, v >= 0.5, zero_division=0.0), {"threshold": 0.5}),
    }
    for metric, (loop_metric, kw) in checks.items():
        values = [loop_metric(y[r], s[r]) for r in rows if 0 < y[r].sum() < n]
        low, high = np.quantile(values, (0.025, 0.975))
        got = M.bootstrap_ci(metric, y, s, n_resamples=b, seed=seed, resamples=shared, **kw)
        assert got.ci_low == pytest.approx(low, abs=1e-12)
        assert got.ci_high == pytest.approx(high, abs=1e-12)


def test_resamples_are_drawn_once_and_confusion_counts_shared(monkeypatch):
    y, scores = _data(0, 400)
    draws, confusions = [], []
    real_indices, real_confusion = _resamples.resample_indices, _resamples.confusion_counts
    monkeypatch.setattr(
        _resamples, "resample_indices", lambda *a: draws.append(a) or real_indices(*a)
    )
    # Counted where the full data's (_bootstrap) and the resamples' (_resamples) are made.
    for module in (_bootstrap, _resamples):
        monkeypatch.setattr(
            module, "confusion_counts", lambda *a: confusions.append(1) or real_confusion(*a)
        )
    measure = Measure(Bootstrap(n_resamples=120, seed=3))
    where = Where(labeler="human", slice="all", dataset="d", n_excluded=0)
    rows = []
    for metric in ("auroc", "pr_auc", "prr", *M.CLASSIFICATION_METRICS):
        t = [0.5] * 3 if metric in M.CLASSIFICATION_METRICS else None
        rows += measure.rows(metric, ["a", "b", "c"], y.astype(float), scores, where, thresholds=t)
    assert draws == [(400, 120, 3)]
    # One count per metric on the full data (the value), one for all resamples.
    assert len(confusions) == len(M.CLASSIFICATION_METRICS) + 1
    # The same rows as bootstrap_ci with fresh draws for each metric.
    for row in rows:
        k = "abc".index(row.detector)
        kw = {"threshold": 0.5} if row.metric in M.CLASSIFICATION_METRICS else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", M.UndefinedMetricWarning)
            want = M.bootstrap_ci(row.metric, y, scores[k], n_resamples=120, seed=3, **kw)
        assert (row.value, row.ci_low, row.ci_high) == (want.value, want.ci_low, want.ci_high)


def test_measure_keeps_resamples_within_its_memory_bound(monkeypatch):
    from realitycheck.analysis import _measure

    monkeypatch.setattr(_measure, "_KEPT_ITEMS", 100 * 1000)
    measure = Measure(Bootstrap(n_resamples=1000, seed=0))
    first = measure.resamples(60)
    assert measure.resamples(60) is first
    measure.resamples(30)
    measure.resamples(20)  # 60 + 30 + 20 > 100 items per resample: the oldest goes
    assert list(measure._drawn) == [30, 20]


def test_resamples_of_other_items_or_seed_are_refused():
    y, scores = _data(0, 50)
    with pytest.raises(InvalidInputError, match="resamples"):
        M.bootstrap_ci("auroc", y, scores[0], n_resamples=100, resamples=M.Resamples(49, 100, 0))
    with pytest.raises(InvalidInputError, match="resamples"):
        M.bootstrap_ci("auroc", y, scores[0], seed=1, resamples=M.Resamples(50, 1000, 0))
    with pytest.raises(InvalidInputError, match="n >= 1"):
        M.Resamples(0, 10, 0)
