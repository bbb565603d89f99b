import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from realitycheck import Example, InvalidInputError, Label, Response, RunStore, Score
from realitycheck.analysis import Bootstrap
from realitycheck.metrics import bootstrap_ci, wilson_interval
from realitycheck.store import RunData
from realitycheck.studies.length import LengthBias


@pytest.fixture(scope="module")
def data(lexical_run):
    return lexical_run


@pytest.fixture(scope="module")
def result(data):
    return LengthBias().run(data, bootstrap=Bootstrap(n_resamples=200))


def _store_with_samples(tmp_path):
    rng = np.random.default_rng(3)
    store = RunStore(tmp_path)
    store.append([Example(example_id=f"e{i}", dataset="toy", task="qa") for i in range(12)])
    responses, labels, scores = [], [], []
    for i in range(12):
        hallucinated = i % 3 == 0
        samples = tuple(" ".join(["w"] * int(rng.integers(1, 9))) for _ in range(4 if i else 1))
        text = " ".join(["w"] * int(rng.integers(1, 12)))
        rid = f"r{i}"
        responses.append(
            Response(response_id=rid, example_id=f"e{i}", model="m", text=text, samples=samples)
        )
        labels.append(Label(response_id=rid, labeler="human", hallucinated=hallucinated))
        scores.append(Score(response_id=rid, detector="flat", value=0.5))
    store.append(responses)
    store.append(labels)
    store.append(scores)
    return store, responses, labels


def test_length_baselines_over_samples_by_hand(tmp_path):
    store, responses, labels = _store_with_samples(tmp_path)
    result = LengthBias().run(RunData(store), bootstrap=Bootstrap(n_resamples=50))
    ranking = result.table("ranking").set_index("name")
    y = [int(lab.hallucinated) for lab in labels]
    counts = [[len(s.split()) for s in r.samples] for r in responses]
    expected = {
        "Len": [len(r.text.split()) for r in responses],
        "Mean-Len": [np.mean(c) for c in counts],
        "Std-Len": [np.std(c) for c in counts],
    }
    for name, values in expected.items():
        ok = ~np.isnan(values) if name != "Std-Len" else np.array([len(c) >= 2 for c in counts])
        assert ranking.loc[name, "kind"] == "baseline"
        assert ranking.loc[name, "n"] == ok.sum()
        assert ranking.loc[name, "auroc"] == pytest.approx(
            roc_auc_score(np.array(y)[ok], np.array(values)[ok])
        )
    assert ranking.loc["flat", "auroc"] == 0.5
    assert sorted(ranking["rank"]) == sorted(ranking["auroc"].rank(ascending=False, method="min"))
    corr = result.table("correlation").set_index("name")
    assert np.isnan(corr.loc["flat", "pearson_r"]) and "constant" in corr.loc["flat", "note"]
    assert not any("samples" in s for s in result.skipped)


def test_correlations_equal_scipy_on_real_data(data, result):
    corr = result.table("correlation").set_index(["dataset", "name"])
    frame = data.frame("truthfulqa")
    score = data.label_scores("truthfulqa")["rouge_l"]
    ok = score.notna()
    row = corr.loc[("truthfulqa", "rouge_l")]
    assert row["signal"] == "score" and row["n"] == ok.sum()
    x, v = frame.loc[ok, "length_words"], score[ok]
    assert row["pearson_r"] == pytest.approx(stats.pearsonr(x, v).statistic)
    assert row["spearman_rho"] == pytest.approx(stats.spearmanr(x, v).statistic)
    assert row["spearman_p"] == pytest.approx(stats.spearmanr(x, v).pvalue, rel=1e-6)
    assert corr.loc[("truthfulqa", "human"), "signal"] == "verdict"
    assert corr.loc[("halueval_general", "length"), "pearson_r"] == pytest.approx(1.0)


def test_distribution_and_accuracy_by_length_on_real_data(data, result):
    frame, y = data.frame("truthfulqa"), data.verdicts("truthfulqa")["human"]
    dist = result.table("distribution").set_index(["dataset", "label"])
    hall = frame.loc[y == 1, "length_words"]
    row = dist.loc[("truthfulqa", "hallucinated")]
    assert row["n"] == len(hall) and row["median"] == np.quantile(hall, 0.5)
    assert row["q90"] == pytest.approx(np.quantile(hall, 0.9))
    acc = result.table("accuracy_by_length").query("dataset == 'truthfulqa'")
    bins = pd.qcut(frame["length_words"], 5, duplicates="drop")
    verdict = data.verdicts("truthfulqa")["token_f1"]
    for number, interval in enumerate(bins.cat.categories, start=1):
        in_bin = (bins == interval) & verdict.notna()
        got = acc[(acc["labeler"] == "token_f1") & (acc["bin"] == number)].iloc[0]
        assert got["n"] == in_bin.sum()
        assert got["accuracy"] == pytest.approx((verdict[in_bin] == y[in_bin]).mean())
        assert got["ci_low"] <= got["accuracy"] <= got["ci_high"]
    assert (
        acc.query("labeler == 'rouge_l'")["n"].sum()
        == data.verdicts("truthfulqa")["rouge_l"].notna().sum()
    )


def test_finding_and_skips_on_real_data(result):
    ranking = result.table("ranking").query("dataset == 'truthfulqa' and name == 'Len'").iloc[0]
    assert f"Len alone reaches AUROC {ranking['auroc']:.3f}" in result.finding
    assert (
        "truthfulqa: no response has samples; Mean-Len and Std-Len not computed" in result.skipped
    )
    assert "halueval_general: no automatic labeler; no accuracy by length" in result.skipped
    stems = [f.stem for f in result.figures]
    assert stems == ["lengths-halueval_general", "lengths-truthfulqa", "accuracy-by-length"]


def test_intervals_follow_the_run_bootstrap(data):
    boot = Bootstrap(n_resamples=40, confidence=0.8, seed=2)
    result = LengthBias().run(data, bootstrap=boot)
    ranking = result.table("ranking").query("dataset == 'truthfulqa' and name == 'Len'").iloc[0]
    frame, y = data.frame("truthfulqa"), data.verdicts("truthfulqa")["human"]
    ok = y.notna()
    direct = bootstrap_ci(
        "auroc", y[ok], frame.loc[ok, "length_words"], n_resamples=40, confidence=0.8, seed=2
    )
    assert (ranking["ci_low"], ranking["ci_high"]) == pytest.approx((direct.ci_low, direct.ci_high))
    acc = result.table("accuracy_by_length").iloc[0]
    right = round(acc["accuracy"] * acc["n"])
    assert (acc["ci_low"], acc["ci_high"]) == pytest.approx(
        wilson_interval(right, acc["n"], confidence=0.8)
    )
    ranking_caption = next(t.caption for t in result.tables if t.name == "ranking")
    assert "80% bootstrap CIs (40 resamples, seed 2)" in ranking_caption


def test_chars_unit_measures_characters(data):
    result = LengthBias(unit="chars").run(data, bootstrap=Bootstrap(n_resamples=20))
    corr = result.table("correlation").set_index(["dataset", "name"])
    assert corr.loc[("truthfulqa", "length[unit=chars]"), "pearson_r"] == pytest.approx(1.0)
    assert set(result.table("distribution")["unit"]) == {"chars"}


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"unit": "tokens"}, r"'unit' parameter of length must be one of \('words', 'chars'\)"),
        ({"n_bins": 0}, "'n_bins' parameter of length must be an int >= 1"),
        ({"n_bins": 2.5}, "'n_bins' parameter of length must be an int >= 1. Got 2.5 instead."),
    ],
)
def test_bad_options_are_rejected(params, match):
    with pytest.raises(InvalidInputError, match=match):
        LengthBias(**params)
