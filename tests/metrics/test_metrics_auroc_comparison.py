"""AUROCs of many detectors on the same items: auroc_many, DeLong's test, the paired bootstrap.

Checked against scikit-learn's ``roc_auc_score``, DeLong's covariance computed
straight from the U-statistic kernel over all pairs, and a loop over the same
bootstrap resamples.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from realitycheck import InvalidInputError
from realitycheck.metrics import auroc_many, delong, paired_auroc_bootstrap, resample_indices


@pytest.mark.parametrize("seed", range(3))
def test_auroc_many_matches_sklearn_with_ties_and_one_class(seed):
    rng = np.random.default_rng(seed)
    labels = (rng.random((6, 150)) < 0.3).astype(float)
    labels[5] = 0.0
    scores = np.round(rng.random((3, 150)) + labels[0] * 0.3, 1)  # many ties
    got = auroc_many(labels, scores)
    assert got.shape == (6, 3)
    for i, j in itertools.product(range(5), range(3)):
        assert got[i, j] == pytest.approx(roc_auc_score(labels[i], scores[j]))
    assert np.isnan(got[5]).all()


def _slow_delong(y, scores):
    """DeLong's covariance straight from the U-statistic kernel psi over all pairs."""
    pos, neg = scores[:, y == 1], scores[:, y == 0]
    m, n = pos.shape[1], neg.shape[1]
    k = scores.shape[0]
    v10, v01 = np.zeros((k, m)), np.zeros((k, n))
    for r in range(k):
        for i in range(m):
            for j in range(n):
                psi = 1.0 if pos[r, i] > neg[r, j] else 0.5 if pos[r, i] == neg[r, j] else 0.0
                v10[r, i] += psi / n
                v01[r, j] += psi / m
    s10 = (v10 - v10.mean(axis=1, keepdims=True)) @ (v10 - v10.mean(axis=1, keepdims=True)).T
    s01 = (v01 - v01.mean(axis=1, keepdims=True)) @ (v01 - v01.mean(axis=1, keepdims=True)).T
    return v10.mean(axis=1), s10 / (m - 1) / m + s01 / (n - 1) / n


@pytest.mark.parametrize("seed", range(4))
def test_fast_delong_equals_the_direct_u_statistic_and_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 60))
    y = (rng.random(n) < 0.4).astype(int)
    y[:2], y[2:4] = 1, 0
    scores = np.vstack(
        [
            np.round(y + rng.normal(size=n), 1),  # ties
            rng.integers(0, 4, size=n).astype(float),  # heavy ties
            np.round(0.5 * y + rng.normal(size=n), 2),
        ]
    )
    fast = delong(y, scores)
    areas, cov = _slow_delong(y, scores)
    np.testing.assert_allclose(fast.auroc, areas)
    np.testing.assert_allclose(fast.auroc, [roc_auc_score(y, s) for s in scores])
    np.testing.assert_allclose(fast.covariance, cov)
    z = (areas[0] - areas[1]) / math.sqrt(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    assert fast.z == pytest.approx(z)
    assert fast.p_value == pytest.approx(2 * stats.norm.sf(abs(z)))


@pytest.mark.parametrize(
    ("y", "scores", "note"),
    [
        ([0, 0, 0, 1], [[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], "fewer than 2"),
        ([0, 0, 1, 1, 0, 1], [[1, 2, 3, 4, 5, 6]] * 2, "zero variance"),
        ([0, 0, 1, 1, 0, 1], [[5.0] * 6, [5.0] * 6], "zero variance"),
    ],
)
def test_delong_is_nan_with_a_note_when_undefined(y, scores, note):
    result = delong(y, scores)
    assert math.isnan(result.p_value) and note in result.note


def test_paired_bootstrap_equals_a_loop_over_the_same_resamples():
    rng = np.random.default_rng(11)
    n = 80
    y = (rng.random(n) < 0.5).astype(int)
    a, b = y + rng.normal(size=n), np.round(y * 0.5 + rng.normal(size=n), 1)
    # 40 resamples (two sklearn calls each): the differences still fall on both sides of 0.
    result = paired_auroc_bootstrap(y, a, b, n_resamples=40, seed=3)
    diffs = []
    for chunk in resample_indices(n, 40, 3):
        for rows in chunk:
            if 0 < y[rows].sum() < n:
                diffs.append(roc_auc_score(y[rows], a[rows]) - roc_auc_score(y[rows], b[rows]))
    diffs = np.array(diffs)
    assert result.n_resamples == diffs.size
    assert result.difference == pytest.approx(roc_auc_score(y, a) - roc_auc_score(y, b))
    assert (result.ci_low, result.ci_high) == pytest.approx(
        tuple(np.quantile(diffs, [0.025, 0.975]))
    )
    side = min(np.mean(diffs <= 0), np.mean(diffs >= 0))
    assert 0 < side
    assert result.p_value == pytest.approx(min(1.0, 2 * side))


def test_paired_bootstrap_of_identical_detectors_has_p_one():
    y = np.array([0, 1] * 20)
    s = np.linspace(0, 1, 40)
    result = paired_auroc_bootstrap(y, s, s, n_resamples=50)
    assert result.difference == 0 and result.p_value == 1.0 and result.ci_low == result.ci_high == 0


@pytest.mark.parametrize("confidence", [0, 1, 1.5, "0.9"])
def test_paired_bootstrap_refuses_a_bad_confidence(confidence):
    with pytest.raises(InvalidInputError, match="'confidence' parameter of paired_auroc_bootstrap"):
        paired_auroc_bootstrap([0, 1, 0, 1], [1, 2, 3, 4], [4, 3, 2, 1], confidence=confidence)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: auroc_many([0, 1, 1], [[0.1, 0.2, 0.3]]), "'y_true' parameter of auroc_many"),
        (lambda: auroc_many([[0, 2]], [[0.1, 0.2]]), "must be an array of 0/1 or bool labels"),
        (lambda: auroc_many([[0, 1]], [[0.1, 0.2, 0.3]]), "one value per item of 'y_true'"),
        (lambda: delong([0, 1, 0, 1], [np.nan, 1, 2, 3]), "'y_score' parameter of delong"),
        (lambda: delong([0, 1, 0, 1], [[[1.0]]]), "'y_score' parameter of delong must be a 2-D"),
    ],
)
def test_bad_inputs_are_refused_in_the_one_message_shape(call, match):
    with pytest.raises(InvalidInputError, match=match):
        call()
