import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from realitycheck import InvalidInputError, RunStore, datasets, detect, detectors, ingest
from realitycheck.analysis import Bootstrap
from realitycheck.metrics import paired_auroc_bootstrap
from realitycheck.records.model_info import ModelInfo
from realitycheck.runner import record_models
from realitycheck.store import RunData
from realitycheck.studies import studies
from realitycheck.studies.significance import Significance, group_of_models


@pytest.fixture(scope="module")
def data(tmp_path_factory, data_dir):
    store = RunStore(tmp_path_factory.mktemp("significance") / "run")
    for name in ("faithbench", "halueval_general", "ragtruth"):
        ingest(store, datasets.create(name, data_dir=data_dir))
    detect(store, [detectors.create_from_key("length[unit=chars]")])
    return RunData(store)


@pytest.fixture(scope="module")
def default(data):
    return Significance().run(data, bootstrap=Bootstrap(n_resamples=200))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"value": ""}, "'value' parameter of significance"),
        ({"value": "hallucinated:"}, "'value' parameter of significance"),
        ({"group": "size"}, "'group' parameter of significance must be one of .* or 'meta:<key>'"),
        ({"group": "params"}, "'group' parameter of significance must be one of .*'family'"),
        ({"group": "meta:"}, "'group' parameter"),
        ({"paired": "maybe"}, "'paired' parameter of significance must be one of"),
        ({"alpha": 1.5}, r"'alpha' parameter of significance must be a float in \(0, 1\)"),
        ({"alpha": True}, "'alpha' parameter"),
        ({"compare": ["a vs b vs c"]}, "'compare' parameter of significance must be detector"),
        ({"compare": [("a",)]}, "'compare' parameter"),
    ],
)
def test_bad_options_are_rejected(params, match):
    with pytest.raises(InvalidInputError, match=match):
        Significance(**params)


def test_compare_pairs_are_normalised_and_round_trip_through_the_key():
    study = Significance(compare=[("recorded:a", "recorded:b"), "x vs  y"])
    assert study.compare == ("recorded:a vs recorded:b", "x vs y")
    rebuilt = studies.create_from_key(study.key)
    assert rebuilt.compare == study.compare


INFO = {
    "llama-2-13b-chat": ModelInfo(model="llama-2-13b-chat", family="llama-2", size=13e9,
                                  instruction_tuned=True),
    "base-small": ModelInfo(model="base-small", family="toy", size=2.999e9,
                            instruction_tuned=False),
    "edge-3b": ModelInfo(model="edge-3b", size=3e9),
    "edge-30b": ModelInfo(model="edge-30b", size=30e9),
}  # fmt: skip


@pytest.mark.parametrize(
    ("model", "family", "size_bin", "tuned"),
    [
        ("llama-2-13b-chat", "llama-2", "10-30B", "tuned"),
        ("base-small", "toy", "<3B", "base"),
        ("edge-3b", None, "3-10B", None),
        ("edge-30b", None, ">=30B", None),
        # no metadata: unknown, whatever the name says (the old name regex read 70B / tuned)
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", None, None, None),
        ("google/gemma-2-2b-it", None, None, None),
    ],
)
def test_model_factors_come_from_the_metadata_never_from_the_name(model, family, size_bin, tuned):
    models = pd.Series([model])
    assert group_of_models(models, "family", INFO).iloc[0] == family
    assert group_of_models(models, "size_bin", INFO).iloc[0] == size_bin
    assert group_of_models(models, "instruction_tuned", INFO).iloc[0] == tuned


def test_faithbench_hallucination_rate_by_summarizer_is_a_friedman_test(data, default):
    result = default
    tests = result.table("tests").set_index("dataset")
    fb = tests.loc["faithbench"]
    frame = data.frame("faithbench").assign(h=data.verdicts("faithbench")["human"])
    table = frame.pivot_table(index="example_id", columns="model", values="h").dropna()
    ref = stats.friedmanchisquare(*table.to_numpy().T)
    assert fb["test"].startswith("Friedman") and fb["design"] == "matched"
    assert fb["n_groups"] == 10 and fb["n_blocks"] == len(table) == 23
    assert fb["p_value"] == pytest.approx(ref.pvalue) and "0/1 values" in fb["why"]
    groups = result.table("groups").query("dataset == 'faithbench'").set_index("group")
    rates = frame.groupby("model")["h"].mean()
    np.testing.assert_allclose(groups.loc[rates.index, "mean"], rates)
    assert (groups["ci_low"] <= groups["mean"]).all() and (
        groups["mean"] <= groups["ci_high"]
    ).all()
    posthoc = result.table("posthoc").query("dataset == 'faithbench'")
    assert len(posthoc) == 45 and set(posthoc["method"]) == {"Nemenyi"}
    assert tests.loc["halueval_general", "test"] == "not applicable"
    assert "only 1 group (chatgpt)" in tests.loc["halueval_general", "why"]
    assert any(s.startswith("halueval_general: group test not applicable") for s in result.skipped)
    assert {f.stem for f in result.figures} == {"groups_faithbench", "groups_ragtruth"}
    assert all(f.png.startswith(b"\x89PNG") for f in result.figures)
    assert "faithbench" in result.finding and "Friedman" in result.finding


def test_detector_comparison_pits_the_best_against_each_other(data, default):
    det = default.table("detectors").query("dataset == 'faithbench'")
    y = data.verdicts("faithbench")["human"]
    scores = data.detector_scores("faithbench")
    ok = y.notna()
    areas = {d: roc_auc_score(y[ok], scores.loc[ok, d]) for d in data.detectors_of("faithbench")}
    best = max(areas, key=areas.get)
    assert set(det["detector_a"]) == {best} and len(det) == len(areas) - 1
    for row in det.itertuples():
        assert row.auroc_b == pytest.approx(areas[row.detector_b])
        assert row.auroc_a >= row.auroc_b and 0 <= row.delong_p <= 1 and 0 <= row.bootstrap_p <= 1
        assert row.bootstrap_ci_low <= row.difference <= row.bootstrap_ci_high
    assert (det["delong_p_bonferroni"] >= det["delong_p"]).all()
    first = det.iloc[0]
    ok = y.notna() & scores[first.detector_a].notna() & scores[first.detector_b].notna()
    direct = paired_auroc_bootstrap(
        y[ok], scores.loc[ok, first.detector_a], scores.loc[ok, first.detector_b], n_resamples=200
    )
    assert (first.bootstrap_ci_low, first.bootstrap_ci_high) == pytest.approx(
        (direct.ci_low, direct.ci_high)
    )
    assert first.n_resamples == direct.n_resamples <= 200


SIZES = {
    "mistralai/Mistral-7B-Instruct-v0.3": 7.2e9,
    "Qwen/Qwen2.5-7B-Instruct": 7.6e9,
    "meta-llama/Meta-Llama-3.1-8B-Instruct": 8e9,
    "meta-llama/Meta-Llama-3.1-70B-Instruct": 70e9,
}


def test_requested_pairs_and_derived_groups(data):
    pair = "recorded:hhem-2.1 vs recorded:trueteacher"
    study = Significance(group="size_bin", compare=[pair])
    bare = study.run(data, bootstrap=Bootstrap(n_resamples=20)).table("tests")
    # Without metadata every summarizer is unknown: no groups, and no size guessed from names.
    assert bare.set_index("dataset").loc["faithbench", "why"] == (
        "not applicable: no item has both a value and a group"
    )
    record_models(
        data.store,
        {m: ModelInfo(model=m, size=s, instruction_tuned=True) for m, s in SIZES.items()},
    )
    with_info = RunData(data.store)
    result = study.run(with_info, bootstrap=Bootstrap(n_resamples=100))
    det = result.table("detectors")
    assert det[["detector_a", "detector_b"]].values.tolist() == [
        ["recorded:hhem-2.1", "recorded:trueteacher"]
    ]
    assert "ragtruth: detector comparison: 1 detector(s), 2 needed" in result.skipped
    tests = result.table("tests").set_index("dataset")
    # Metadata gives a size for 4 of the 10 summarizers: 7.2B, 7.6B, 8B -> 3-10B; 70B -> >=30B.
    assert tests.loc["faithbench", "n_groups"] == 2
    assert tests.loc["faithbench", "n_no_group"] == 6 * 75
    rule = tests.loc["faithbench", "group_rule"]
    assert "binned" in rule and "never from the model's name" in rule
    assert "unknown (not in the metadata), so left out: Anthropic/claude-3-5-sonnet" in rule
    assert rule.endswith("and 1 more")
    assert tests.loc["halueval_general", "why"].startswith("not applicable: no item")
    tuned = Significance(group="instruction_tuned").run(
        with_info, bootstrap=Bootstrap(n_resamples=20)
    )
    assert (
        "only 1 group (tuned)" in tuned.table("tests").set_index("dataset").loc["faithbench", "why"]
    )


def test_a_detector_value_across_groups_and_a_missing_value(data):
    study = Significance(value="length[unit=chars]", group="meta:batch")
    result = study.run(data, bootstrap=Bootstrap(n_resamples=50))
    tests = result.table("tests").set_index("dataset")
    assert tests.loc["faithbench", "grouping"] == "meta:batch"
    assert tests.loc["faithbench", "test"] in ("Kruskal-Wallis", "one-way ANOVA")
    missing = Significance(value="hallucinated:nobody").run(
        data, bootstrap=Bootstrap(n_resamples=50)
    )
    assert missing.table("tests").empty
    assert "faithbench: no 'nobody' labels" in missing.skipped
