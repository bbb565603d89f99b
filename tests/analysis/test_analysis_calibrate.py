"""Score calibration (Platt, isotonic) against independent fits."""

import numpy as np
import pytest
from scipy.optimize import minimize

from realitycheck.analysis import calibrate


def _data(seed, n=150):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(float)
    # A raw score far from [0, 1]: a length-like scale with an offset.
    s = 40.0 * y + rng.normal(0, 30, n) + 200.0
    return y, s


def _platt_by_hand(y, s):
    """Platt's objective (cross-entropy to smoothed targets) minimised by scipy, raw scores."""
    n_pos, n_neg = y.sum(), len(y) - y.sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    z = (s - s.mean()) / s.std()

    def loss(ab):
        logit = ab[0] * z + ab[1]
        return np.sum(np.logaddexp(0, logit) - t * logit)

    a, b = minimize(loss, [1.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    return lambda v: 1 / (1 + np.exp(-(a * (v - s.mean()) / s.std() + b)))


def _pav(y):
    """Pool-adjacent-violators on values already in score order: a plain loop."""
    blocks = []  # [mean, weight]
    for v in y:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2 = blocks.pop()
            m1, w1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2])
    return np.concatenate([[m] * int(w) for m, w in blocks])


@pytest.mark.parametrize("seed", range(4))
def test_platt_equals_a_direct_fit_of_platts_objective(seed):
    y, s = _data(seed)
    apply = np.r_[s, np.nan, 0.0, 500.0]
    probs, note = calibrate(y, s, apply, "platt")
    expected = _platt_by_hand(y, s)(apply)
    np.testing.assert_allclose(probs, expected, atol=2e-5)
    assert np.isnan(probs[len(s)])
    assert note.startswith(f"Platt scaling fitted on {len(y)} calibration-split responses")


@pytest.mark.parametrize("seed", range(4))
def test_isotonic_equals_pool_adjacent_violators(seed):
    y, s = _data(seed)
    order = np.argsort(s)
    fitted = np.empty_like(y)
    fitted[order] = _pav(y[order])
    probs, note = calibrate(y, s, np.r_[s, s.min() - 1, s.max() + 1], "isotonic")
    np.testing.assert_allclose(probs[: len(s)], fitted, atol=1e-12)
    # Beyond the fitted range: the value at the nearest end.
    assert probs[-2] == pytest.approx(fitted[order[0]])
    assert probs[-1] == pytest.approx(fitted[order[-1]])
    assert "isotonic regression" in note


def test_maps_are_monotone_and_probabilities():
    y, s = _data(9)
    grid = np.linspace(s.min() - 50, s.max() + 50, 300)
    for method in ("platt", "isotonic"):
        probs, _ = calibrate(y, s, grid, method)
        assert ((probs >= 0) & (probs <= 1)).all()
        assert (np.diff(probs) >= -1e-12).all()


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_one_class_in_the_calibration_split_gives_no_map(method):
    probs, note = calibrate(np.ones(5), np.arange(5.0), np.arange(5.0), method)
    assert probs is None and "one class" in note


@pytest.mark.parametrize("method", ["platt", "isotonic"])
@pytest.mark.parametrize("apply", [np.array([]), np.array([np.nan, np.nan])])
def test_nothing_to_map_gives_nothing_not_an_error(method, apply):
    # A small dataset can put every example in the calibration split: the test split is empty.
    y, s = _data(3, n=20)
    probs, note = calibrate(y, s, apply, method)
    assert probs is not None and probs.shape == apply.shape and np.isnan(probs).all()
    assert "fitted on 20 calibration-split responses" in note


def test_none_takes_probabilities_as_they_are_and_refuses_raw_scores():
    probs, note = calibrate(
        np.array([0.0, 1.0]), np.array([0.2, 0.9]), np.array([0.2, 0.9]), "none"
    )
    np.testing.assert_array_equal(probs, [0.2, 0.9])
    assert "as probabilities" in note
    probs, note = calibrate(
        np.array([0.0, 1.0]), np.array([2.0, 9.0]), np.array([2.0, 9.0]), "none"
    )
    assert probs is None and "outside [0, 1]" in note
