"""Label-noise study: noise simulations, rater statistics and the real-data run."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from realitycheck import (
    InvalidInputError,
    MissingDependencyError,
    RunStore,
    datasets,
    detect,
    detectors,
    ingest,
    label,
)
from realitycheck import labelers as labeler_registry
from realitycheck import metrics as M
from realitycheck.store import RunData, save_result
from realitycheck.studies import _agreement_stats as A
from realitycheck.studies import _label_noise_sim as N
from realitycheck.studies import studies
from realitycheck.studies.label_noise import LabelNoise


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


# --- rankings ----------------------------------------------------------------------------


def test_auroc_many_matches_sklearn_with_ties_and_one_class():
    rng = np.random.default_rng(11)
    labels = (rng.random((6, 150)) < 0.3).astype(float)
    labels[5] = 0.0
    scores = np.round(rng.random((3, 150)) + labels[0] * 0.3, 1)  # many ties
    got = A.auroc_many(labels, scores)
    for i, j in itertools.product(range(5), range(3)):
        assert got[i, j] == pytest.approx(roc_auc_score(labels[i], scores[j]))
    assert np.isnan(got[5]).all()


def test_kendall_tau_and_swapped_pairs():
    a, b = [0.9, 0.7, 0.7, 0.5, 0.6], [0.8, 0.75, 0.6, 0.65, 0.4]
    assert A.kendall_tau(a, b) == pytest.approx(kendalltau(a, b).statistic)
    assert np.isnan(A.kendall_tau([0.5, 0.5], [0.1, 0.2])) and np.isnan(A.kendall_tau([1], [1]))
    names = ["p", "q", "r", "s", "t"]
    # s-t reverses; q-r is tied under a (not a swap); r-s reverses.
    assert A.swapped_pairs(names, a, b) == [("r", "s"), ("t", "s")]


# --- noise -------------------------------------------------------------------------------


def test_random_flips_change_exactly_the_rate_of_labelled_items():
    y = np.array([1, 0, np.nan, 1, 0, 0, 1, np.nan, 0, 1] * 10, dtype=float)
    draws = N.random_flips(y, 0.15, 4, seed=3)
    labelled = ~np.isnan(y)
    assert ((draws != y) & labelled).sum(axis=1).tolist() == [12] * 4  # round(0.15 * 80)
    assert np.isnan(draws[:, ~labelled]).all()
    assert len({row.tobytes() for row in draws}) == 4
    np.testing.assert_array_equal(draws, N.random_flips(y, 0.15, 4, seed=3))
    np.testing.assert_array_equal(N.random_flips(y, 0.0, 2, seed=3), np.tile(y, (2, 1)))


def test_dissenting_label_takes_the_minority_and_breaks_ties_against_the_reference():
    y = np.array([1, 0, 1, 0, np.nan])
    ratings = np.array([[1, 1, 0], [1, 0, np.nan], [1, 1, 1], [0, 1, 1], [1, 0, np.nan]])
    np.testing.assert_array_equal(
        N.dissenting_label_proposal(y, ratings), [0, 1, np.nan, 0, np.nan]
    )


def test_apply_proposal_caps_the_changes():
    y = np.array([0.0] * 20 + [np.nan] * 5)
    proposal = np.r_[np.ones(10), np.full(10, np.nan), np.ones(5)]
    capped = N.apply_proposal(y, proposal, cap=0.2, seed=0)
    assert capped.natural_rate == pytest.approx(0.5) and capped.rate == pytest.approx(0.2)
    assert np.nansum(capped.labels) == 4 and np.isnan(capped.labels[20:]).all()
    free = N.apply_proposal(y, proposal, cap=None, seed=0)
    assert free.rate == pytest.approx(0.5) and np.nansum(free.labels) == 10


def test_measure_condition_matches_direct_metrics():
    rng = np.random.default_rng(2)
    y = (rng.random(200) < 0.4).astype(float)
    y[:10] = np.nan
    s = y * 0.5 + rng.random(200)
    s[15:20] = np.nan
    test = rng.random(200) < 0.5
    got = N.measure_condition(y, {"d": s}, test, N.Bootstrap(50, 0))["d"]
    ok = ~np.isnan(y) & ~np.isnan(s)
    assert got["auroc"] == pytest.approx(roc_auc_score(y[ok], s[ok]))
    assert got["auroc_ci_low"] <= got["auroc"] <= got["auroc_ci_high"]
    t = M.choose_threshold(y[ok & ~test], s[ok & ~test], objective="f1_macro")
    expected = M.balanced_accuracy(y[ok & test], (s[ok & test] >= t).astype(int))
    assert got["balanced_accuracy"] == pytest.approx(expected) and got["n"] == ok.sum()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"rate": 1.5}, "'rate' parameter of label-noise must be a number in \\[0, 1\\]"),
        ({"rates": (0.1, -0.1)}, "'rates' parameter"),
        ({"rates": ()}, "must hold at least one rate"),
        ({"repetitions": 0}, "'repetitions' parameter of label-noise must be an int >= 1"),
        ({"n_resamples": 2.5}, "'n_resamples' parameter"),
        ({"weak_detectors": "yes"}, "'weak_detectors' parameter of label-noise must be a bool"),
    ],
)
def test_bad_options_are_refused(options, match):
    with pytest.raises(InvalidInputError, match=match):
        LabelNoise(**options)


def test_a_single_rate_from_the_command_line_becomes_a_tuple():
    study = studies.create_from_key("label_noise[rates=0.2,repetitions=2]")
    assert study.rates == (0.2,) and study.key == "label_noise[rates=0.2,repetitions=2]"
    assert studies.create_from_key(study.key) == study


# --- real data ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(tmp_path_factory, data_dir):
    store = RunStore(tmp_path_factory.mktemp("label_noise"))
    for name in ("faithbench", "halueval_general"):
        ingest(store, datasets.create(name, data_dir=data_dir))
    label(store, [labeler_registry.create("knowledge_f1")])
    detect(store, [detectors.create_from_key(k) for k in ("length[unit=chars]", "source_overlap")])
    data = RunData(store)
    return store, data, LabelNoise(repetitions=3, n_resamples=50).run(data)


def test_real_run_covers_every_noise_source(real):
    _, data, result = real
    ranking = result.table("ranking_change")
    fb = ranking[ranking["dataset"] == "faithbench"]
    assert set(fb["condition"]) == {
        "random_flip", "dissenting_label", "dissenting_worker", "weak_supervision",
    }  # fmt: skip
    assert set(fb.loc[fb["condition"] == "dissenting_worker", "source"]) == set(
        data.annotators_of("faithbench")
    )
    assert (fb.loc[fb["condition"] != "weak_supervision", "noise_rate"] <= 0.15 + 1e-9).all()
    weak = fb[fb["condition"] == "weak_supervision"]
    assert {"knowledge_f1", "recorded:gpt_4o"} <= set(weak["source"])
    he = ranking[ranking["dataset"] == "halueval_general"]
    assert set(he["condition"]) == {"random_flip", "weak_supervision"}
    n = int(data.verdicts("halueval_general")["human"].notna().sum())
    flip = he[he["condition"] == "random_flip"].iloc[0]
    assert flip["noise_rate"] == pytest.approx(round(0.15 * n) / n)
    assert any(line.startswith("halueval_general: dissenting worker") for line in result.skipped)


def test_real_clean_metrics_match_a_direct_computation(real):
    _, data, result = real
    effect = result.table("noise_effect")
    clean = effect[(effect["dataset"] == "faithbench") & (effect["condition"] == "clean")]
    y = data.verdicts("faithbench")["human"].to_numpy()
    for row in clean.itertuples():
        s = data.detector_scores("faithbench")[row.detector].to_numpy()
        ok = ~np.isnan(y) & ~np.isnan(s)
        assert row.auroc == pytest.approx(roc_auc_score(y[ok], s[ok]))
        assert row.n == ok.sum()
    curve = result.table("noise_curve")
    at_zero = curve[(curve["dataset"] == "faithbench") & (curve["rate"] == 0.0)]
    merged = at_zero.merge(clean, on="detector")
    np.testing.assert_allclose(merged["auroc_mean"], merged["auroc"])
    flips = effect[(effect["condition"] == "random_flip") & (effect["dataset"] == "faithbench")]
    both = flips.merge(clean, on="detector", suffixes=("", "_clean"))
    # Random flips pull every AUROC towards chance (0.5).
    assert ((both["auroc"] - 0.5).abs() <= (both["auroc_clean"] - 0.5).abs() + 0.01).all()


def test_real_annotator_statistics(real):
    store, data, result = real
    agreement = result.table("inter_rater_agreement")
    alpha = agreement[agreement["measure"] == "krippendorff_alpha"]["value"].iloc[0]
    matrix = data.verdicts("faithbench")[data.annotators_of("faithbench")].to_numpy()
    assert alpha == pytest.approx(_alpha_by_hand(matrix))
    assert 0.3 < alpha < 0.8
    reliability = result.table("rater_reliability").set_index("rater")
    assert len(reliability) == 14
    assert reliability["ds_reliability"].idxmin() == "human:new-user"
    aggregation = result.table("aggregation").set_index("comparison")
    assert aggregation.loc["dawid_skene vs majority_vote", "agreement"] > 0.9
    assert "Krippendorff's alpha" in result.finding and "faithbench" in result.finding
    assert {f.stem for f in result.figures} == {
        "noise_curve_faithbench", "noise_curve_halueval_general",
    }  # fmt: skip
    save_result(store, result)
    pair = result.table("pairwise_kappa").iloc[0]
    a, b = data.verdicts("faithbench")[[pair["rater_a"], pair["rater_b"]]].to_numpy().T
    both = ~np.isnan(a) & ~np.isnan(b)
    assert pair["n_overlap"] == both.sum() >= 10
    assert pair["cohen_kappa"] == pytest.approx(cohen_kappa_score(a[both], b[both]))


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
