"""Wilson score interval: against statsmodels and scipy on seeded random counts."""

import math

import numpy as np
import pytest
from scipy import stats

from realitycheck import InvalidInputError
from realitycheck.metrics import wilson_interval


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wilson_interval_matches_statsmodels(seed):
    proportion_confint = pytest.importorskip("statsmodels.stats.proportion").proportion_confint
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 300, size=40)
    k = rng.integers(0, n + 1)
    k[:3], n[:3] = [0, 5, 7], [9, 5, 7]  # no successes, all successes
    for confidence in (0.8, 0.9, 0.95, 0.99):
        low, high = wilson_interval(k, n, confidence=confidence)
        ref_low, ref_high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
        np.testing.assert_allclose(low, ref_low, atol=1e-12)
        np.testing.assert_allclose(high, ref_high, atol=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (3, 17), (50, 200), (1, 1)])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_wilson_interval_of_one_count_equals_scipy(k, n, confidence):
    low, high = wilson_interval(k, n, confidence=confidence)
    expected = stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
    assert isinstance(low, float) and isinstance(high, float)
    assert (low, high) == pytest.approx((expected.low, expected.high))


def test_wilson_interval_of_nothing_is_nan():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    low, high = wilson_interval(np.array([1, 0]), np.array([4, 0]))
    assert 0 < low[0] < 0.25 < high[0] < 1 and np.isnan(low[1]) and np.isnan(high[1])


@pytest.mark.parametrize("confidence", [0, 1, -0.5, True, float("nan")])
def test_wilson_interval_refuses_a_bad_confidence(confidence):
    with pytest.raises(InvalidInputError, match="'confidence' parameter of wilson_interval"):
        wilson_interval(1, 2, confidence=confidence)
