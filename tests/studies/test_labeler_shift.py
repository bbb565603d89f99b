import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from realitycheck import Example, InvalidInputError, Label, Response, RunStore, Score
from realitycheck.analysis import Bootstrap
from realitycheck.metrics import bootstrap_ci
from realitycheck.store import RunData
from realitycheck.studies import studies
from realitycheck.studies.labeler_shift import LabelerShift, relative_change

N_RESAMPLES = 200


@pytest.fixture(scope="module")
def data(real_run):
    return real_run(
        truthfulqa=60,
        ingested=("faithbench", "halueval_general"),
        labelers=("rouge_l", "token_f1", "knowledge_f1"),
        detectors=("length", "length[unit=chars]", "source_overlap"),
    )


@pytest.fixture(scope="module")
def result(data):
    return LabelerShift().run(data, bootstrap=Bootstrap(n_resamples=N_RESAMPLES))


@pytest.mark.parametrize(
    ("value", "reference", "expected"),
    [
        (0.6, 0.5, 20.0),
        (0.4, 0.5, -20.0),
        (0.5, 0.5, 0.0),
        (0.7, 0.0, np.nan),
        (np.nan, 0.5, np.nan),
    ],
)
def test_relative_change_by_hand(value, reference, expected):
    np.testing.assert_allclose(relative_change(value, reference), expected, equal_nan=True)


def test_shift_values_are_the_auroc_under_each_labeler(data, result):
    shift = result.table("shift")
    assert set(shift["labeler"]) == {
        "rouge_l", "token_f1", "knowledge_f1",
        "recorded:gpt-3.5-turbo", "recorded:gpt-4-turbo", "recorded:gpt_4o",
    }  # fmt: skip
    judges = shift[shift["labeler"].str.startswith("recorded:")]
    assert set(judges["dataset"]) == {"faithbench"}
    row = shift.query(
        "dataset == 'truthfulqa' and detector == 'length' and labeler == 'rouge_l' "
        "and metric == 'auroc'"
    ).iloc[0]
    verdicts, scores = data.verdicts("truthfulqa"), data.detector_scores("truthfulqa")
    for column, prefix in (("rouge_l", ""), ("human", "reference_")):
        ok = verdicts[column].notna() & scores["length"].notna()
        expected = roc_auc_score(verdicts.loc[ok, column], scores.loc[ok, "length"])
        assert row[f"{prefix}value"] == pytest.approx(expected)
        assert row[f"{prefix}n"] == ok.sum()
        assert row[f"{prefix}ci_low"] <= row[f"{prefix}value"] <= row[f"{prefix}ci_high"]
    assert row["delta_pct"] == pytest.approx(
        (row["value"] - row["reference_value"]) / row["reference_value"] * 100
    )


def test_intervals_and_caption_follow_the_run_bootstrap(data, result):
    assert result.bootstrap == {"n_resamples": N_RESAMPLES, "confidence": 0.95, "seed": 0}
    caption = next(t.caption for t in result.tables if t.name == "shift")
    assert f"95% bootstrap CIs ({N_RESAMPLES} resamples, seed 0)" in caption
    row = (
        result.table("shift")
        .query("dataset == 'truthfulqa' and detector == 'length' and labeler == 'rouge_l'")
        .query("metric == 'auroc'")
        .iloc[0]
    )
    verdicts, scores = data.verdicts("truthfulqa"), data.detector_scores("truthfulqa")
    ok = verdicts["rouge_l"].notna() & scores["length"].notna()
    direct = bootstrap_ci(
        "auroc", verdicts.loc[ok, "rouge_l"], scores.loc[ok, "length"], n_resamples=N_RESAMPLES
    )
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((direct.ci_low, direct.ci_high))


def test_correlation_is_pearson_across_detectors_and_datasets(result):
    shift = result.table("shift").query("labeler == 'knowledge_f1' and metric == 'auroc'")
    corr = result.table("correlation").set_index(["labeler", "metric"])
    row = corr.loc[("knowledge_f1", "auroc")]
    expected = stats.pearsonr(shift["reference_value"], shift["value"])
    assert row["n"] == len(shift) >= 3
    assert row["pearson_r"] == pytest.approx(expected.statistic)
    assert row["p_value"] == pytest.approx(expected.pvalue, rel=1e-6)


def test_correlation_is_nan_with_a_note_below_three_points(result):
    # TruthfulQA has no context: only the two length detectors are scored on it.
    row = result.table("correlation").set_index(["labeler", "metric"]).loc[("rouge_l", "auroc")]
    assert row["n"] == 2 and np.isnan(row["pearson_r"]) and "3 are needed" in row["note"]


def test_finding_states_the_largest_overstatement(result):
    auroc = result.table("shift").query("metric == 'auroc'")
    top = auroc.loc[auroc["delta_pct"].idxmax()]
    assert f"Under {top['labeler']}" in result.finding
    assert f"{top['delta_pct']:+.1f}%" in result.finding
    assert result.figures[0].png.startswith(b"\x89PNG")
    assert "halueval_general: no automatic labeler to compare with" in result.skipped


def test_labelers_option_restricts_the_comparison(data):
    result = LabelerShift(labelers=("token_f1",)).run(data, bootstrap=Bootstrap(n_resamples=20))
    assert set(result.table("shift")["labeler"]) == {"token_f1"}
    assert any(s.startswith("faithbench: none of token_f1") for s in result.skipped)


def test_no_reference_labels_gives_a_skip_line_and_an_empty_result(tmp_path):
    store = RunStore(tmp_path)
    store.append([Example(example_id="e1", dataset="toy", task="qa", references=("yes",))])
    store.append([Response(response_id="r1", example_id="e1", model="m", text="yes")])
    store.append([Label(response_id="r1", labeler="rouge_l", hallucinated=False, score=0.0)])
    store.append([Score(response_id="r1", detector="length", value=1.0)])
    result = LabelerShift().run(RunData(store), bootstrap=Bootstrap(n_resamples=10))
    assert result.skipped == ("toy: no 'human' labels",)
    assert result.table("shift").empty and result.figures == ()
    assert "no shift could be measured" in result.finding


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"labelers": [3]}, "'labelers' parameter of labeler_shift must be a list, each item"),
        ({"labelers": ["rouge_l", " "]}, "Item 1 is ' '"),
        ({"reference": ""}, "'reference' parameter of labeler_shift must be a non-empty str"),
    ],
)
def test_bad_options_are_rejected(params, match):
    with pytest.raises(InvalidInputError, match=match):
        LabelerShift(**params)


def test_built_from_its_key():
    study = studies.create_from_key("labeler_shift[labelers=rouge_l+bleu]")
    assert study.labelers == ("rouge_l", "bleu")
    assert studies.create_from_key(study.key) == study
    assert studies.create_from_key("labeler-shift") == LabelerShift()
