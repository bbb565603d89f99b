"""Correlation p-values, Kendall's tau-b and discordant pairs: against scipy and brute force."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from realitycheck import InvalidInputError
from realitycheck.metrics import correlation_pvalue, discordant_pairs, kendall_tau_b


@pytest.mark.parametrize("n", [5, 40, 300])
@pytest.mark.parametrize("seed", [0, 1])
def test_correlation_pvalue_equals_scipy(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.3 * x + rng.normal(size=n)
    r = stats.pearsonr(x, y)
    assert correlation_pvalue(r.statistic, n) == pytest.approx(r.pvalue, rel=1e-7)
    xt, yt = np.round(x), np.round(y)  # ties
    rho = stats.spearmanr(xt, yt)
    assert correlation_pvalue(rho.statistic, n) == pytest.approx(rho.pvalue, rel=1e-7)


@pytest.mark.parametrize(
    ("r", "n", "expected"),
    [(0.5, 2, np.nan), (np.nan, 50, np.nan), (1.0, 10, 0.0), (-1.0, 10, 0.0)],
)
def test_correlation_pvalue_edge_cases(r, n, expected):
    np.testing.assert_equal(correlation_pvalue(r, n), expected)


def _brute_force(a, b):
    concordant = discordant = tied_a = tied_b = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        da, db = a[i] - a[j], b[i] - b[j]
        tied_a += da == 0
        tied_b += db == 0
        if da * db > 0:
            concordant += 1
        elif da * db < 0:
            discordant += 1
    n0 = len(a) * (len(a) - 1) / 2
    tau_b = (concordant - discordant) / math.sqrt((n0 - tied_a) * (n0 - tied_b))
    return discordant, tau_b


@pytest.mark.parametrize("seed", range(6))
def test_discordant_pairs_and_tau_b_on_rankings_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 15))
    x = rng.integers(0, 5, n) / 10  # few distinct values: many ties
    y = x + rng.integers(-2, 3, n) / 10
    pairs, n_tied = discordant_pairs(x, y)
    discordant, tau_b = _brute_force(x, y)
    assert len(pairs) == discordant
    assert all(x[i] < x[j] and y[i] > y[j] for i, j in pairs)
    both_untied = sum(
        (x[i] != x[j]) and (y[i] != y[j]) for i, j in itertools.combinations(range(n), 2)
    )
    assert n_tied == n * (n - 1) // 2 - both_untied
    tau, p = kendall_tau_b(x, y)
    assert tau == pytest.approx(tau_b, abs=1e-12)
    expected = stats.kendalltau(x, y, variant="b")
    assert tau == pytest.approx(expected.statistic) and p == pytest.approx(expected.pvalue)


def test_kendall_tau_b_leaves_out_pairs_with_a_nan():
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=30), rng.normal(size=30)
    x[3], y[10] = np.nan, np.nan
    keep = ~np.isnan(x) & ~np.isnan(y)
    expected = stats.kendalltau(x[keep], y[keep])
    assert kendall_tau_b(x, y) == pytest.approx((expected.statistic, expected.pvalue))
    pairs, _ = discordant_pairs(x, y)
    assert all(3 not in pair and 10 not in pair for pair in pairs)


def test_reversed_ranking_is_all_discordant_and_constant_is_undefined():
    pairs, n_tied = discordant_pairs([0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1])
    assert len(pairs) == 6 and n_tied == 0
    assert kendall_tau_b([0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1])[0] == pytest.approx(-1)
    assert all(math.isnan(v) for v in kendall_tau_b([0.1, 0.2, 0.3], [0.5, 0.5, 0.5]))
    assert all(math.isnan(v) for v in kendall_tau_b([0.1], [0.2]))
    assert all(math.isnan(v) for v in kendall_tau_b([0.5, np.nan], [0.1, 0.2]))


def test_bad_inputs_are_refused_in_the_one_message_shape():
    with pytest.raises(InvalidInputError, match="'y' parameter of kendall_tau_b must be an array"):
        kendall_tau_b([1, 2, 3], [1, 2])
    with pytest.raises(InvalidInputError, match="'x' parameter of discordant_pairs must be a 1-D"):
        discordant_pairs([[1, 2]], [1, 2])
    with pytest.raises(InvalidInputError, match="'n' parameter of correlation_pvalue"):
        correlation_pvalue(0.5, -1)
