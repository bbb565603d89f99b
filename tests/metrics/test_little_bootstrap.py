"""The bag of little bootstraps against a direct computation with scikit-learn weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, f1_score, roc_auc_score

from realitycheck import metrics as M
from realitycheck.analysis import Bootstrap, Measure, Where
from realitycheck.errors import InvalidInputError


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    return y, np.round(y + rng.normal(size=n), 2)  # rounded: ties on purpose


def _direct(little: M.LittleBootstraps, metric, y, s, confidence=0.95) -> np.ndarray:
    """Algorithm 1 of Kleiner et al. (2014), written out with scikit-learn sample weights."""
    q = ((1 - confidence) / 2, (1 + confidence) / 2)
    ends = []
    for positions, counts in zip(little.subsets, little.counts, strict=True):
        values = [metric(y[positions], s[positions], sample_weight=c) for c in counts]
        ends.append(np.quantile(values, q))
    return np.mean(ends, axis=0)


def test_subsets_are_disjoint_and_resamples_have_n_items():
    n = 50_000
    little = M.LittleBootstraps(n, 200, seed=3)
    b = math.ceil(n**0.7)
    assert len(little.subsets) == 10 and all(p.size == b for p in little.subsets)
    every = np.concatenate(little.subsets)
    assert np.unique(every).size == every.size and every.max() < n
    for counts in little.counts:
        assert counts.shape == (20, b)
        assert (counts.astype(np.int64).sum(axis=1) == n).all()


@pytest.mark.parametrize(
    ("name", "reference"), [("auroc", roc_auc_score), ("pr_auc", average_precision_score)]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_ranking_interval_equals_direct_computation(name, reference, seed):
    y, s = _data(20_000, seed)
    # 20 resamples, 2 in each of the 10 subsets: one weighted sklearn call each.
    little = M.LittleBootstraps(y.size, 20, seed)
    got = M.bootstrap_ci(name, y, s, n_resamples=20, seed=seed, resamples=little)
    np.testing.assert_allclose([got.ci_low, got.ci_high], _direct(little, reference, y, s))
    assert got.value == pytest.approx(reference(y, s), abs=1e-12)
    assert got.n_resamples == 20


def test_thresholded_interval_equals_direct_computation():
    y, s = _data(20_000, 5)
    little = M.LittleBootstraps(y.size, 30, 5)
    got = M.bootstrap_ci("f1", y, s, n_resamples=30, seed=5, threshold=0.5, resamples=little)
    want = _direct(
        little,
        lambda yy, ss, sample_weight: f1_score(yy, ss >= 0.5, sample_weight=sample_weight),
        y,
        s,
    )
    np.testing.assert_allclose([got.ci_low, got.ci_high], want)


def test_interval_is_close_to_the_plain_bootstrap():
    y, s = _data(40_000, 7)
    plain = M.bootstrap_ci("auroc", y, s, n_resamples=400, seed=7)
    little = M.bootstrap_ci(
        "auroc", y, s, n_resamples=400, seed=7, resamples=M.LittleBootstraps(y.size, 400, 7)
    )
    width = plain.ci_high - plain.ci_low
    assert abs(little.ci_low - plain.ci_low) < 0.3 * width
    assert abs(little.ci_high - plain.ci_high) < 0.3 * width


def test_same_seed_same_interval_and_a_callable_is_refused():
    y, s = _data(5_000, 2)
    a = M.bootstrap_ci(
        "prr", y, s, n_resamples=20, seed=2, resamples=M.LittleBootstraps(5_000, 20, 2)
    )
    b = M.bootstrap_ci(
        "prr", y, s, n_resamples=20, seed=2, resamples=M.LittleBootstraps(5_000, 20, 2)
    )
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    with pytest.raises(InvalidInputError, match="'resamples' parameter of bootstrap_ci"):
        M.bootstrap_ci(
            roc_auc_score, y, s, n_resamples=20, seed=2, resamples=M.LittleBootstraps(5_000, 20, 2)
        )


def test_measure_uses_little_bootstraps_only_above_the_threshold(monkeypatch):
    y, s = _data(3_000, 4)
    where = Where(labeler="human", slice="all", dataset="d", n_excluded=0)
    plain = Measure(Bootstrap(n_resamples=20, seed=4)).rows("auroc", ["x"], y, s[None, :], where)[0]
    assert "little" not in plain.note
    monkeypatch.setattr(M, "LITTLE_BOOTSTRAP_ABOVE", 2_000)
    row = Measure(Bootstrap(n_resamples=20, seed=4)).rows("auroc", ["x"], y, s[None, :], where)[0]
    want = M.bootstrap_ci(
        "auroc", y, s, n_resamples=20, seed=4, resamples=M.LittleBootstraps(3_000, 20, 4)
    )
    assert (row.ci_low, row.ci_high) == (want.ci_low, want.ci_high) != (plain.ci_low, plain.ci_high)
    assert row.value == plain.value and "bag of little bootstraps" in row.note
