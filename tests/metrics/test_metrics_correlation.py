import numpy as np
import pytest
import scipy.stats

from realitycheck.metrics import UndefinedMetricWarning, pearson, rankdata, spearman


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [2, 3, 30, 1000])
@pytest.mark.parametrize("decimals", [None, 1, 0])
@pytest.mark.parametrize("strength", [-2.0, 0.0, 0.5])
def test_equals_scipy(seed, n, decimals, strength):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = strength * x + rng.normal(size=n)
    if decimals is not None:
        x, y = np.round(x, decimals), np.round(y, decimals)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        x[0], y[0] = x[0] + 1, y[0] + 1
    r = pearson(x, y)
    rho = spearman(x, y)
    assert r == pytest.approx(scipy.stats.pearsonr(x, y).statistic, abs=1e-12)
    assert rho == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)
    assert -1 <= r <= 1 and -1 <= rho <= 1


def test_scale_does_not_overflow():
    x = np.array([1e200, 2e200, 3e200])
    assert pearson(x, [1, 2, 4]) == pytest.approx(scipy.stats.pearsonr(x, [1, 2, 4]).statistic)


def test_perfect_relations():
    x = np.arange(10.0)
    assert pearson(x, 3 * x + 1) == 1.0
    assert spearman(x, np.exp(x)) == 1.0
    assert spearman(x, -(x**3)) == -1.0


@pytest.mark.parametrize("func", [pearson, spearman])
@pytest.mark.parametrize(("x", "y"), [([1, 1, 1], [1, 2, 3]), ([1, 2, 3], [2, 2, 2]), ([5], [3])])
def test_constant_input_is_nan_with_warning(func, x, y):
    with pytest.warns(UndefinedMetricWarning, match="constant"):
        assert np.isnan(func(x, y))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 500])
@pytest.mark.parametrize("distinct", [1, 3, 50, None])
def test_rankdata_equals_scipy_to_the_bit(n, distinct):
    rng = np.random.default_rng(n * 31 + (distinct or 0))
    x = rng.normal(size=n) if distinct is None else rng.integers(0, distinct, n).astype(float)
    assert np.array_equal(rankdata(x), scipy.stats.rankdata(x))
