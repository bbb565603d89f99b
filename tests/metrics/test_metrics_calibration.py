"""ECE, Brier score, PRR and the rejection curve against independent computations."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

import realitycheck.metrics as M
from realitycheck.errors import InvalidInputError

SEEDS = range(6)


def _data(seed, n=120, ties=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    if ties:
        return y, rng.integers(0, 6, n) / 5.0
    # Probabilities that lean towards the labels, so bins hold both classes.
    return y, np.clip(0.3 * y + rng.uniform(0, 0.7, n), 0, 1)


# ---- Brier ------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_brier_equals_sklearn(seed):
    y, p = _data(seed)
    assert M.brier(y, p) == pytest.approx(brier_score_loss(y, p), abs=1e-15)


def test_brier_range_ends():
    assert M.brier([0, 1], [0.0, 1.0]) == 0.0
    assert M.brier([0, 1], [1.0, 0.0]) == 1.0
    assert M.brier([0, 1, 1], [0.5, 0.5, 0.5]) == 0.25


# ---- ECE and reliability ------------------------------------------------------


def _loop_ece(y, p, edges):
    """ECE with bins (edges[b], edges[b+1]], the first also holding its left end: a plain loop."""
    n_bins = len(edges) - 1
    members = [[] for _ in range(n_bins)]
    for i, value in enumerate(p):
        b = 0
        while b < n_bins - 1 and value > edges[b + 1]:
            b += 1
        members[b].append(i)
    total = 0.0
    for items in members:
        if items:
            gap = abs(np.mean([y[i] for i in items]) - np.mean([p[i] for i in items]))
            total += len(items) / len(p) * gap
    return total


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ties", [False, True])
def test_ece_equal_width_equals_a_plain_loop(seed, ties):
    y, p = _data(seed, ties=ties)
    assert M.ece(y, p) == pytest.approx(_loop_ece(y, p, np.linspace(0, 1, 11)), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_ece_equal_mass_equals_a_plain_loop(seed):
    y, p = _data(seed)
    edges = np.percentile(p, np.linspace(0, 100, 6))
    got = M.ece(y, p, n_bins=5, binning="equal_mass")
    assert got == pytest.approx(_loop_ece(y, p, edges), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("binning", "strategy"), [("equal_width", "uniform"), ("equal_mass", "quantile")]
)
def test_reliability_equals_sklearn_calibration_curve(seed, binning, strategy):
    y, p = _data(seed)
    got = M.reliability(y, p, n_bins=8, binning=binning)
    rate, mean_prob = calibration_curve(y, p, n_bins=8, strategy=strategy)
    np.testing.assert_allclose(got.rate, rate, atol=1e-12)
    np.testing.assert_allclose(got.mean_prob, mean_prob, atol=1e-12)
    # ECE is the count-weighted gap of the same bins.
    ece = np.sum(got.count * np.abs(rate - mean_prob)) / len(y)
    assert M.ece(y, p, n_bins=8, binning=binning) == pytest.approx(ece, abs=1e-12)


def test_ece_is_zero_when_calibrated_within_bins_and_one_when_wrong():
    assert M.ece([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5]) == pytest.approx(0.0)
    assert M.ece([1, 1, 0, 0], [0.0, 0.0, 1.0, 1.0]) == pytest.approx(1.0)


# ---- PRR and the rejection curve --------------------------------------------------


def _pra(uncertainty, quality):
    """LM-Polygraph's prediction-rejection area, written out as a loop over rejection rates."""
    order = np.argsort(uncertainty, kind="stable")
    kept_quality = np.asarray(quality, float)[order]
    n = len(kept_quality)
    return np.mean([kept_quality[: n - k].mean() for k in range(n)])


def _loop_prr(y, s):
    quality = 1 - np.asarray(y, float)
    ue = _pra(s, quality)
    oracle = _pra(-quality, quality)
    # LM-Polygraph's random baseline averages shuffles; its expectation is the mean quality.
    random = quality.mean()
    return (ue - random) / (oracle - random)


@pytest.mark.parametrize("seed", SEEDS)
def test_prr_equals_lm_polygraph_definition(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 80)
    s = y * 0.5 + rng.normal(size=80)
    assert M.prr(y, s) == pytest.approx(_loop_prr(y, s), abs=1e-12)


def test_prr_random_baseline_matches_shuffles():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 30)
    quality = 1 - y
    shuffled = [_pra(rng.permutation(30), quality) for _ in range(4000)]
    assert np.mean(shuffled) == pytest.approx(quality.mean(), abs=5e-3)


def test_prr_with_ties_is_the_average_over_every_order_of_the_tied_items():
    y = np.array([1, 0, 0, 1, 0, 1, 0])
    s = np.array([1.0, 1.0, 2.0, 2.0, 2.0, 0.0, 3.0])
    # Every tie-break: a small offset taken from each permutation of the positions.
    values = [_loop_prr(y, s + 1e-6 * np.array(p)) for p in itertools.permutations(range(7))]
    assert M.prr(y, s) == pytest.approx(np.mean(values), abs=1e-12)


def test_prr_range_ends_and_order_invariance():
    y = np.array([0, 0, 1, 1, 0, 1])
    assert M.prr(y, y) == pytest.approx(1.0)
    assert M.prr(y, -y.astype(float)) < 0
    assert M.prr(y, np.zeros(6)) == pytest.approx(0.0)
    rng = np.random.default_rng(0)
    s = rng.normal(size=6)
    perm = rng.permutation(6)
    assert M.prr(y[perm], s[perm]) == pytest.approx(M.prr(y, s))


def test_prr_with_one_class_is_nan_with_a_warning():
    with pytest.warns(M.UndefinedMetricWarning, match="one class"):
        assert np.isnan(M.prr([1, 1, 1], [0.1, 0.2, 0.3]))


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_rejection_curve_equals_a_plain_loop(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 40)
    s = rng.normal(size=40)
    curve = M.rejection_curve(y, s)
    order = np.argsort(s)
    for k in range(40):
        kept = order[: 40 - k]
        assert curve.rate[k] == pytest.approx(k / 40)
        assert curve.accuracy[k] == pytest.approx(1 - y[kept].mean())
        assert curve.oracle[k] == pytest.approx(min(1.0, (1 - y).sum() / (40 - k)))
    np.testing.assert_allclose(curve.random, 1 - y.mean())


# ---- bootstrap ----------------------------------------------------------------


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("metric", ["prr", "ece", "brier"])
def test_bootstrap_distribution_equals_the_metric_on_each_resample(metric, ties):
    y, p = _data(3, n=60, ties=ties)
    scores = np.vstack([p, 1 - p])
    got = M.bootstrap_distribution(metric, y, scores, n_resamples=40, seed=5)
    func = getattr(M, metric)
    expected = np.full((2, 40), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        for b, idx in enumerate(np.concatenate(list(M.resample_indices(60, 40, 5)))):
            for k in range(2):
                expected[k, b] = func(y[idx], scores[k, idx])
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_bootstrap_ci_of_prr_brackets_its_value():
    y, p = _data(1, n=200)
    res = M.bootstrap_ci("prr", y, p, n_resamples=200, seed=0)
    assert res.ci_low <= res.value <= res.ci_high
    assert res.value == pytest.approx(M.prr(y, p))


# ---- bad input ----------------------------------------------------------------


@pytest.mark.parametrize("func", [M.ece, M.brier, M.reliability])
def test_probabilities_outside_the_unit_interval_are_refused(func):
    with pytest.raises(InvalidInputError, match=r"'y_prob' parameter of \w+ must be probabilities"):
        func([0, 1], [0.2, 1.5])


def test_bootstrap_refuses_raw_scores_for_calibration_metrics():
    with pytest.raises(InvalidInputError, match="'y_score' parameter of bootstrap_ci"):
        M.bootstrap_ci("brier", [0, 1, 0], [3.0, 0.1, 0.2])


def test_bootstrap_refuses_a_threshold_for_prr():
    with pytest.raises(InvalidInputError, match="None for the score metric 'prr'"):
        M.bootstrap_ci("prr", [0, 1, 0], [3.0, 0.1, 0.2], threshold=0.5)


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"n_bins": 0}, "n_bins"), ({"binning": "x"}, "binning")]
)
def test_ece_options_are_checked(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        M.ece([0, 1], [0.2, 0.4], **kwargs)
