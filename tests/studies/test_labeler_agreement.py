import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    cohen_kappa_score,
    f1_score,
    precision_score,
    recall_score,
)

from realitycheck import InvalidInputError
from realitycheck.analysis import Bootstrap, split_of
from realitycheck.metrics import bootstrap_ci, choose_threshold
from realitycheck.studies import studies
from realitycheck.studies.labeler_agreement import LabelerAgreement, similarity_of
from realitycheck.studies.labeler_agreement._errors import error_causes

METRICS = ["precision", "recall", "f1", "accuracy", "cohen_kappa", "f1_weighted"]


@pytest.fixture(scope="module")
def data(lexical_run):
    return lexical_run


@pytest.fixture(scope="module")
def result(data):
    return LabelerAgreement().run(data, bootstrap=Bootstrap(n_resamples=200))


def _pair(data, labeler):
    v = data.verdicts("truthfulqa")
    ok = v["human"].notna() & v[labeler].notna()
    return v.loc[ok, "human"].astype(int), v.loc[ok, labeler].astype(int)


def test_error_causes_follow_the_rules_by_hand():
    # items:            0     1     2     3     4     5     6     7
    truth = np.array([False, False, False, False, True, True, False, True])
    pred = np.array([True, True, True, True, False, False, False, True])
    words = pd.Series([50, 9, 5, 5, 4, 4, 4, 4])  # item 0 long by quantile cut 20
    reference = pd.Series([np.nan, 2, 3, 3, 3, 3, 3, 3])  # item 1 long by ratio (9 > 3 x 2)
    similarity = pd.Series([0.0, 0.0, 0.05, 0.05, 0.9, 0.2, 0.5, 0.0])
    embedding_correct = pd.Series([True, True, True, False, True, True, True, True])
    common = {"words": words, "truth": truth, "pred": pred, "similarity": similarity}
    options = {"long_cut": 20.0, "long_ratio": 3.0, "low_overlap": 0.1, "high_overlap": 0.5}
    table = error_causes(
        **common, reference_words=reference, embedding_correct=embedding_correct, **options
    ).set_index("cause")
    assert table["n"].to_dict() == {
        "long but correct": 2,
        "paraphrase with no overlap": 1,
        "other false positive": 1,
        "wrong answer with high overlap": 1,
        "other false negative": 1,
    }
    assert (table["n_errors"] == 6).all() and (table["n_items"] == 8).all()
    assert table.loc["long but correct", "share_of_errors"] == pytest.approx(2 / 6)
    without = error_causes(**common, reference_words=reference, embedding_correct=None, **options)
    assert without.set_index("cause").loc["paraphrase with no overlap", "n"] == 2


def test_agreement_metrics_equal_sklearn(data, result):
    table = result.table("agreement").query("dataset == 'truthfulqa' and labeler == 'rouge_l'")
    table = table.set_index("metric")
    y, p = _pair(data, "rouge_l")
    expected = {
        "precision": precision_score(y, p),
        "recall": recall_score(y, p),
        "f1": f1_score(y, p),
        "accuracy": accuracy_score(y, p),
        "cohen_kappa": cohen_kappa_score(y, p),
        "f1_weighted": f1_score(y, p, average="weighted"),
    }
    for metric, value in expected.items():
        assert table.loc[metric, "value"] == pytest.approx(value)
        assert table.loc[metric, "ci_low"] <= value <= table.loc[metric, "ci_high"]
    score = data.label_scores("truthfulqa").loc[y.index, "rouge_l"]
    assert table.loc["pr_auc", "value"] == pytest.approx(average_precision_score(y, score))
    assert (table["n"] == len(y)).all() and (table["n_positive"] == y.sum()).all()


def test_intervals_follow_the_run_bootstrap(data):
    result = LabelerAgreement().run(
        data, bootstrap=Bootstrap(n_resamples=50, confidence=0.8, seed=1)
    )
    table = result.table("agreement").query("dataset == 'truthfulqa' and labeler == 'rouge_l'")
    table = table.set_index("metric")
    y, p = _pair(data, "rouge_l")
    score = data.label_scores("truthfulqa").loc[y.index, "rouge_l"]
    for metric, values in (("accuracy", p.astype(float)), ("pr_auc", score)):
        direct = bootstrap_ci(metric, y, values, n_resamples=50, confidence=0.8, seed=1)
        row = table.loc[metric]
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((direct.ci_low, direct.ci_high))
    caption = next(t.caption for t in result.tables if t.name == "agreement")
    assert "80% bootstrap CIs (50 resamples, seed 1)" in caption


def test_binary_labeler_has_no_pr_auc(result):
    exact = result.table("agreement").query("labeler == 'exact_match'")
    assert set(exact["kind"]) == {"binary"} and "pr_auc" not in set(exact["metric"])


def test_threshold_is_chosen_on_calibration_and_scored_on_test(data, result):
    row = result.table("threshold").set_index("labeler").loc["token_f1"]
    frame = data.frame("truthfulqa")
    sim = 1 - data.label_scores("truthfulqa")["token_f1"]
    y = data.verdicts("truthfulqa")["human"]
    split = pd.Series(split_of(frame["example_id"].tolist()), index=frame.index)
    ok = sim.notna() & y.notna()
    cal, test = ok & (split == "calibration"), ok & (split == "test")
    t = choose_threshold(y[cal].astype(int), -sim[cal], objective="f1_weighted")
    assert row["best_threshold"] == pytest.approx(-t)
    assert row["n_calibration"] == cal.sum() and row["n_test"] == test.sum()
    predicted = (sim[test] <= -t).astype(int)
    assert row["f1_weighted_test"] == pytest.approx(
        f1_score(y[test].astype(int), predicted, average="weighted")
    )
    own = data.verdicts("truthfulqa").loc[test, "token_f1"].astype(int)
    assert row["f1_weighted_test_own"] == pytest.approx(
        f1_score(y[test].astype(int), own, average="weighted")
    )
    assert row["own_rule"] == "similarity < 0.5" and row["best_rule"].startswith("similarity <=")


def test_similarity_is_one_minus_the_score_of_similarity_labelers(data):
    labels = data.labels.set_index("response_id")
    for labeler in ("rouge_l", "bleu", "token_f1", "exact_match"):
        own = labels[labels["labeler"] == labeler]
        similarity = similarity_of(labeler, own["score"])
        # Label.raw prints the same similarity with four decimals.
        printed = own["raw"].str.split("=").str[1].astype(float)
        assert similarity.notna().sum() == printed.notna().sum() > 0
        np.testing.assert_allclose(similarity, printed, atol=5e-5 + 1e-12)
    # 1 - (1 - 0.1) is 0.09999999999999998 in floating point: read back as 0.1.
    assert similarity_of("token_f1", pd.Series([0.9, np.nan])).tolist()[0] == 0.1
    assert similarity_of("human", pd.Series([0.2])).isna().all()


def test_distribution_both_right_and_errors_count_every_item(data, result):
    dist = result.table("distribution").query("dataset == 'truthfulqa'").set_index("labeler")
    shares = dist[["share_hallucinated", "share_correct", "share_missing"]].sum(axis=1)
    np.testing.assert_allclose(shares, 1.0)
    v = data.verdicts("truthfulqa")
    assert dist.loc["bleu", "share_hallucinated"] == pytest.approx((v["bleu"] == 1).mean())
    pair = result.table("both_right").set_index(["labeler_a", "labeler_b"]).loc[("bleu", "rouge_l")]
    ok = v["human"].notna() & v["bleu"].notna() & v["rouge_l"].notna()
    right_a, right_b = v.loc[ok, "bleu"] == v.loc[ok, "human"], v.loc[ok, "rouge_l"] == v["human"]
    assert pair["n"] == ok.sum()
    assert pair["both_right"] == pytest.approx((right_a & right_b[ok]).mean())
    assert pair[["both_right", "only_a_right", "only_b_right", "both_wrong"]].sum() == (
        pytest.approx(1.0)
    )
    errors = result.table("errors").query("labeler == 'rouge_l'")
    y, p = _pair(data, "rouge_l")
    assert errors["n"].sum() == (y != p).sum() == errors["n_errors"].iloc[0]
    false_positives = errors.query("error == 'false positive'")["n"].sum()
    assert false_positives == ((p == 1) & (y == 0)).sum()


def test_finding_names_the_best_labeler_with_its_kappa(result):
    kappa = result.table("agreement").query("metric == 'cohen_kappa'")
    best = kappa.loc[kappa["value"].idxmax()]
    assert f"{best['labeler']} (" in result.finding
    assert f"kappa {best['value']:.2f}" in result.finding
    assert "halueval_general: no automatic labeler" in result.skipped
    assert [f.stem for f in result.figures] == ["kappa", "errors"]


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"calibration_fraction": 1.0}, "'calibration_fraction' parameter"),
        ({"long_quantile": 0.0}, r"'long_quantile' parameter .* float in \(0, 1\)"),
        ({"long_ratio": -1}, "'long_ratio' parameter"),
        ({"long_ratio": float("inf")}, r"'long_ratio' parameter .* float in \(0, inf\)"),
        ({"low_overlap": 1.5}, r"'low_overlap' parameter .* float in \[0, 1\]"),
        ({"high_overlap": "high"}, "'high_overlap' parameter"),
    ],
)
def test_bad_options_are_rejected(params, match):
    with pytest.raises(InvalidInputError, match=match):
        LabelerAgreement(**params)


def test_registered_under_its_name():
    assert studies.get("labeler_agreement") is LabelerAgreement
