"""Label-noise study: noise simulations, rater statistics and the real-data run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from realitycheck import (
    Bootstrap,
    InvalidInputError,
    RunStore,
    datasets,
    detect,
    detectors,
    ingest,
    label,
)
from realitycheck import labelers as labeler_registry
from realitycheck import metrics as M
from realitycheck.analysis import krippendorff_alpha
from realitycheck.store import RunData, save_result
from realitycheck.studies import studies
from realitycheck.studies.label_noise import LabelNoise
from realitycheck.studies.label_noise import _report as report
from realitycheck.studies.label_noise import _simulation as N

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
    got = N.measure_condition(y, {"d": s}, test, Bootstrap(n_resamples=50))["d"]
    ok = ~np.isnan(y) & ~np.isnan(s)
    assert got["auroc"] == pytest.approx(roc_auc_score(y[ok], s[ok]))
    assert got["auroc_ci_low"] <= got["auroc"] <= got["auroc_ci_high"]
    t = M.choose_threshold(y[ok & ~test], s[ok & ~test], objective="f1_macro")
    expected = M.balanced_accuracy(y[ok & test], (s[ok & test] >= t).astype(int))
    assert got["balanced_accuracy"] == pytest.approx(expected) and got["n"] == ok.sum()


def test_ranking_row_lists_reversed_pairs_clean_winner_first():
    names = ["p", "q", "r", "s", "t"]
    clean = pd.DataFrame({"auroc": [0.9, 0.7, 0.7, 0.5, 0.6]}, index=names)
    noisy = pd.DataFrame({"auroc": [0.8, 0.75, 0.6, 0.65, 0.4]}, index=names)
    cond = report.Condition("random_flip", "", "", np.zeros((1, 5)), 0.1, 0.1)
    row = report.ranking_row("ds", cond, noisy, clean)
    # s-t and r-s reverse; q-r is tied under the clean labels (not a reversal).
    assert row["swapped_pairs"] == "r > s; t > s" and row["n_swapped_pairs"] == 2
    assert row["kendall_tau"] == pytest.approx(kendalltau(clean["auroc"], noisy["auroc"])[0])
    assert row["n_pairs"] == 10


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"rate": 1.5}, r"'rate' parameter of label_noise must be a float in \[0, 1\]. Got 1.5"),
        ({"rates": (0.1, -0.1)}, r"'rates' parameter of label_noise .* Item 1 is -0.1"),
        ({"rates": ()}, "'rates' parameter of label_noise must be a non-empty list"),
        ({"repetitions": 0}, "'repetitions' parameter of label_noise must be an int >= 1"),
        ({"weak_detectors": "yes"}, "'weak_detectors' parameter of label_noise must be a bool"),
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
    return store, data, LabelNoise(repetitions=3).run(data, bootstrap=Bootstrap(n_resamples=50))


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
    assert set(ranking["source_kind"][ranking["condition"] == "weak_supervision"]) == {"labeler"}
    he = ranking[ranking["dataset"] == "halueval_general"]
    assert set(he["condition"]) == {"random_flip"}  # no labeler: detectors are not weak labels
    n = int(data.verdicts("halueval_general")["human"].notna().sum())
    flip = he[he["condition"] == "random_flip"].iloc[0]
    assert flip["noise_rate"] == pytest.approx(round(0.15 * n) / n)
    assert any(line.startswith("halueval_general: dissenting worker") for line in result.skipped)


def test_detectors_as_weak_labels_only_on_request_and_never_in_the_finding(real):
    _, data, _ = real
    study = LabelNoise(repetitions=1, rates=(0.0,), weak_detectors=True)
    result = study.run(data, bootstrap=Bootstrap(n_resamples=20))
    ranking = result.table("ranking_change")
    weak = ranking[ranking["condition"] == "weak_supervision"]
    by_detector = weak[weak["source_kind"] == "detector"]
    assert {"length[unit=chars]", "source_overlap"} <= set(by_detector["source"])
    assert set(by_detector["source"]) <= set(data.detectors_of("faithbench")) | set(
        data.detectors_of("halueval_general")
    )
    for source in set(by_detector["source"]):
        assert f"{source}'s" not in result.finding


def test_real_clean_metrics_match_a_direct_computation(real):
    _, data, result = real
    effect = result.table("noise_effect")
    clean = effect[(effect["dataset"] == "faithbench") & (effect["condition"] == "clean")]
    clean = clean[clean["signal_kind"] == "detector"]
    y = data.verdicts("faithbench")["human"].to_numpy()
    for row in clean.itertuples():
        s = data.detector_scores("faithbench")[row.signal].to_numpy()
        ok = ~np.isnan(y) & ~np.isnan(s)
        assert row.auroc == pytest.approx(roc_auc_score(y[ok], s[ok]))
        assert row.n == ok.sum()
    curve = result.table("noise_curve")
    at_zero = curve[(curve["dataset"] == "faithbench") & (curve["rate"] == 0.0)]
    merged = at_zero.merge(clean, on="signal")
    np.testing.assert_allclose(merged["auroc_mean"], merged["auroc"])
    flips = effect[(effect["condition"] == "random_flip") & (effect["dataset"] == "faithbench")]
    both = flips.merge(clean, on="signal", suffixes=("", "_clean"))
    # Random flips pull every AUROC towards chance (0.5).
    assert ((both["auroc"] - 0.5).abs() <= (both["auroc_clean"] - 0.5).abs() + 0.01).all()


def test_real_annotator_statistics(real):
    store, data, result = real
    agreement = result.table("inter_rater_agreement")
    alpha = agreement[agreement["measure"] == "krippendorff_alpha"]["value"].iloc[0]
    matrix = data.verdicts("faithbench")[data.annotators_of("faithbench")].to_numpy()
    assert alpha == pytest.approx(krippendorff_alpha(matrix))
    assert 0.3 < alpha < 0.8
    reliability = result.table("rater_reliability").set_index("rater")
    assert len(reliability) == 14
    assert reliability["ds_reliability"].idxmin() == "human:new-user"
    aggregation = result.table("aggregation").set_index("comparison")
    assert aggregation.loc["dawid_skene vs majority_vote", "agreement"] > 0.9
    assert "Krippendorff's alpha" in result.finding and "faithbench" in result.finding
    assert {f.stem for f in result.figures} == {
        "noise_curve_faithbench", "noise_curve_halueval_general", "noise_ranks_faithbench",
    }  # fmt: skip
    save_result(store, result)
    pair = result.table("pairwise_kappa").iloc[0]
    a, b = data.verdicts("faithbench")[[pair["rater_a"], pair["rater_b"]]].to_numpy().T
    both = ~np.isnan(a) & ~np.isnan(b)
    assert pair["n_overlap"] == both.sum() >= 10
    assert pair["cohen_kappa"] == pytest.approx(cohen_kappa_score(a[both], b[both]))


def test_intervals_follow_the_run_bootstrap(real):
    _, data, result = real
    assert result.bootstrap == {"n_resamples": 50, "confidence": 0.95, "seed": 0}
    effect = result.table("noise_effect")
    row = effect[(effect["dataset"] == "faithbench") & (effect["condition"] == "clean")].iloc[0]
    assert row["signal_kind"] == "detector"
    y = data.verdicts("faithbench")["human"].to_numpy()
    s = data.detector_scores("faithbench")[row["signal"]].to_numpy()
    ok = ~np.isnan(y) & ~np.isnan(s)
    direct = M.bootstrap_ci("auroc", y[ok], s[ok], n_resamples=50, seed=0)
    assert (row["auroc_ci_low"], row["auroc_ci_high"]) == pytest.approx(
        (direct.ci_low, direct.ci_high)
    )


def test_the_run_seed_also_seeds_the_noise_draws():
    study = LabelNoise(repetitions=3)
    y = np.array([0.0, 1.0] * 50)
    first = study._flips(0, "ds", y, 0.2)
    np.testing.assert_array_equal(first, study._flips(0, "ds", y, 0.2))
    assert not np.array_equal(first, study._flips(1, "ds", y, 0.2))
