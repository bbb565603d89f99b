"""Agreement between raters: majority vote, Dawid–Skene, Cohen's / Fleiss' kappa, Krippendorff.

Each statistic is checked against an independent computation (Bayes' rule,
scikit-learn's Cohen's kappa, the Fleiss and Krippendorff formulas by hand) on
seeded random rating matrices with missing ratings.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from realitycheck import MissingDependencyError
from realitycheck import analysis as A


def _ratings(seed, n_items=60, n_raters=5, missing=0.3):
    rng = np.random.default_rng(seed)
    truth = rng.random(n_items) < 0.4
    accuracy = rng.uniform(0.6, 0.95, n_raters)
    correct = rng.random((n_items, n_raters)) < accuracy
    matrix = np.where(correct, truth[:, None], ~truth[:, None]).astype(float)
    matrix[rng.random(matrix.shape) < missing] = np.nan
    return matrix


# --- aggregation -------------------------------------------------------------------------


def test_majority_vote_ties_and_empty_items_are_undecided():
    m = np.array([[1, 1, 0], [0, 0, 1], [1, 0, np.nan], [np.nan] * 3, [1, np.nan, np.nan]])
    np.testing.assert_array_equal(A.majority_vote(m), [1, 0, np.nan, np.nan, 1])
    np.testing.assert_array_equal(A.leave_one_out_majority(m, 2), [1, 0, np.nan, np.nan, 1])
    np.testing.assert_array_equal(
        A.leave_one_out_majority(m, 0), [np.nan, np.nan, 0, np.nan, np.nan]
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dawid_skene_posterior_is_bayes_rule_of_its_own_parameters(seed):
    m = _ratings(seed)
    fit = A.dawid_skene(m, n_iter=15)
    # Independent E-step: P(h | votes) from the prior and each rater's 2x2 confusion matrix.
    like1 = np.full(len(m), fit.prior)
    like0 = np.full(len(m), 1 - fit.prior)
    for r in range(m.shape[1]):
        said1, said0 = m[:, r] == 1, m[:, r] == 0
        like1 *= np.where(said1, fit.sensitivity[r], np.where(said0, 1 - fit.sensitivity[r], 1))
        like0 *= np.where(said0, fit.specificity[r], np.where(said1, 1 - fit.specificity[r], 1))
    rated = (~np.isnan(m)).any(axis=1)
    expected = like1 / (like1 + like0)
    np.testing.assert_allclose(fit.posterior[rated], expected[rated], rtol=1e-6)
    assert np.isnan(fit.posterior[~rated]).all()
    np.testing.assert_array_equal(fit.labels[rated], (fit.posterior[rated] > 0.5).astype(float))


def test_dawid_skene_finds_an_adversarial_and_a_lenient_rater():
    rng = np.random.default_rng(5)
    truth = (rng.random(200) < 0.5).astype(float)
    honest = np.where(rng.random((200, 4)) < 0.9, truth[:, None], 1 - truth[:, None])
    # Rater 4 always says the opposite; rater 5 never flags anything.
    m = np.column_stack([honest, 1 - truth, np.zeros(200)])
    fit = A.dawid_skene(m, n_iter=30)
    assert fit.sensitivity[4] < 0.05 and fit.specificity[4] < 0.05
    assert fit.sensitivity[5] < 0.05 and fit.specificity[5] > 0.95
    assert (fit.sensitivity[:4] > 0.8).all() and (fit.specificity[:4] > 0.8).all()
    assert (fit.labels == truth).mean() > 0.98
    assert abs(fit.prior - truth.mean()) < 0.05


def test_dawid_skene_with_one_class_or_no_votes():
    m = np.array([[1, np.nan], [1, 1], [np.nan, np.nan]])
    fit = A.dawid_skene(m)
    np.testing.assert_array_equal(fit.posterior, [1, 1, np.nan])
    assert np.isnan(fit.sensitivity).all() and fit.prior == 1.0
    empty = A.dawid_skene(np.full((3, 2), np.nan))
    assert np.isnan(empty.posterior).all() and np.isnan(empty.prior)


# --- agreement ---------------------------------------------------------------------------


def test_pairwise_kappa_matches_sklearn_on_shared_items():
    m = _ratings(3, n_items=80, n_raters=4, missing=0.4)
    names = ["a", "b", "c", "d"]
    table = A.pairwise_kappa(m, names, min_overlap=20)
    expected = []
    for i, j in itertools.combinations(range(4), 2):
        both = ~np.isnan(m[:, i]) & ~np.isnan(m[:, j])
        if both.sum() >= 20:
            expected.append((names[i], names[j], cohen_kappa_score(m[both, i], m[both, j])))
    assert len(table) == len(expected) >= 1
    for (a, b, kappa), row in zip(expected, table.itertuples(), strict=True):
        assert (row.rater_a, row.rater_b) == (a, b)
        assert row.cohen_kappa == pytest.approx(kappa)
    assert A.pairwise_kappa(m, names, min_overlap=81).empty


def _fleiss_by_hand(counts):
    n, k = counts.sum(axis=1)[0], counts.shape[0]
    p_j = counts.sum(axis=0) / (k * n)
    p_i = ((counts**2).sum(axis=1) - n) / (n * (n - 1))
    return (p_i.mean() - (p_j**2).sum()) / (1 - (p_j**2).sum())


def test_fleiss_kappa_per_rating_count_matches_the_formula():
    m = _ratings(4, n_items=120, n_raters=4, missing=0.35)
    got = A.fleiss_by_count(m)
    n_rated = (~np.isnan(m)).sum(axis=1)
    assert [k for k, _, _ in got] == sorted(set(n_rated[n_rated >= 2]))
    for k, n_items, kappa in got:
        rows = m[n_rated == k]
        counts = np.column_stack([(rows == 0).sum(axis=1), (rows == 1).sum(axis=1)])
        assert n_items == len(rows)
        assert kappa == pytest.approx(_fleiss_by_hand(counts))
    (only,) = A.fleiss_by_count(np.ones((5, 3)))
    assert only[:2] == (3, 5) and np.isnan(only[2])


def _alpha_by_hand(m):
    """Nominal Krippendorff's alpha from the coincidence matrix."""
    o = np.zeros((2, 2))
    for row in m:
        vals = row[~np.isnan(row)].astype(int)
        if vals.size < 2:
            continue
        for a, b in itertools.permutations(range(vals.size), 2):
            o[vals[a], vals[b]] += 1 / (vals.size - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d_o = o[0, 1] + o[1, 0]
    d_e = 2 * n_c[0] * n_c[1] / (n - 1)
    return 1 - d_o / d_e


@pytest.mark.parametrize("seed", [0, 7])
def test_krippendorff_alpha_matches_the_coincidence_matrix(seed):
    m = _ratings(seed, n_items=90, n_raters=5, missing=0.5)
    assert A.krippendorff_alpha(m) == pytest.approx(_alpha_by_hand(m))


def test_krippendorff_alpha_is_nan_without_variation_or_pairs():
    assert np.isnan(A.krippendorff_alpha(np.ones((6, 3))))
    assert np.isnan(A.krippendorff_alpha(np.array([[1, 0], [np.nan, 1], [0, np.nan]])))


@pytest.mark.parametrize(
    ("module", "call"),
    [
        ("crowdkit.aggregation", lambda m: A.dawid_skene(m)),
        ("statsmodels.stats.inter_rater", lambda m: A.fleiss_by_count(m)),
        ("krippendorff", lambda m: A.krippendorff_alpha(m)),
    ],
)
def test_a_missing_package_names_the_extra(monkeypatch, module, call):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError, match="studies"):
        call(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]]))
