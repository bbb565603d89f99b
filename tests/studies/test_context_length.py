"""Context-length study: strata, thresholds, statistics table, and the real RAGTruth run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, precision_score, roc_auc_score

from realitycheck import Example, InvalidInputError, Label, Response, RunStore, Score
from realitycheck.analysis import Bootstrap, split_of
from realitycheck.metrics import bootstrap_ci
from realitycheck.store import RunData, save_result
from realitycheck.studies import studies
from realitycheck.studies.benchmark_audit import context_chars
from realitycheck.studies.context_length import ContextLength, stratum_names

LENGTHS = (400, 2500, 8000)


def _toy_store(path, seed=0):
    """Two generators, 40 sources per context length, a detector, a binary one and a labeler."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for length in LENGTHS:
        for i in range(40):
            eid = f"toy/{length}/{i}"
            domain = ["news", "law", "health"][i % 3]
            examples.append(
                Example(
                    example_id=eid, dataset="toy", task="rag_qa", context="x" * length,
                    meta={"domain": domain},
                )
            )  # fmt: skip
            for model in ("m1", "m2"):
                rid = f"{eid}/{model}"
                y = bool(rng.random() < 0.4)
                responses.append(Response(response_id=rid, example_id=eid, model=model, text="t"))
                labels.append(Label(response_id=rid, labeler="human", hallucinated=y))
                sep = 1.0 if length < 1000 else 0.2
                value = float(np.round(sep * y + rng.random(), 2))
                scores.append(Score(response_id=rid, detector="d", value=value))
                scores.append(Score(response_id=rid, detector="b", value=float(rng.random() < 0.5)))
                guess = bool(rng.random() < 0.5) if length > 5000 else y
                labels.append(
                    Label(response_id=rid, labeler="lab", hallucinated=guess, score=float(guess))
                )
    examples.append(Example(example_id="bare/0", dataset="bare", task="qa"))
    responses.append(Response(response_id="bare/0/m", example_id="bare/0", model="m", text="t"))
    labels.append(Label(response_id="bare/0/m", labeler="human", hallucinated=True))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    data = RunData(_toy_store(tmp_path_factory.mktemp("toy")))
    return data, ContextLength().run(data, bootstrap=Bootstrap(n_resamples=50))


def test_context_chars_are_each_responses_example_context_length(toy):
    data, _ = toy
    rows = data.frame("toy")
    want = [float(eid.split("/")[1]) for eid in rows["example_id"]]  # toy/<length>/<i>
    np.testing.assert_array_equal(context_chars(data, rows), want)
    # bare/0 has no context; the second example is not in the run.
    bare = pd.DataFrame({"example_id": ["bare/0", "not-in-the-run", "toy/400/1"]})
    np.testing.assert_array_equal(context_chars(data, bare), [0.0, np.nan, 400.0])


def _threshold_by_brute_force(y, s):
    best, chosen = -1.0, None
    for t in np.unique(s):  # increasing: the first best is the smallest
        value = f1_score(y, s >= t, average="macro", zero_division=0)
        if value > best + 1e-12:
            best, chosen = value, t
    return chosen


@pytest.mark.parametrize(
    ("edges", "names"),
    [
        ((1000, 5000), ["<1K", "1K-5K", ">5K"]),
        ((500,), ["<500", ">500"]),
        ((250, 1500, 20000), ["<250", "250-1.5K", "1.5K-20K", ">20K"]),
    ],
)
def test_stratum_names(edges, names):
    assert stratum_names(edges) == names


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"edges": (5000, 1000)}, "'edges' parameter of context_length must be strictly"),
        ({"edges": (1000, 1000)}, "'edges' parameter of context_length must be strictly"),
        ({"edges": ()}, "'edges' parameter of context_length must be a non-empty list"),
        ({"edges": (0, 10)}, "'edges' parameter .* Item 0 is 0"),
        ({"edges": (10, float("inf"))}, "'edges' parameter .* Item 1 is inf"),
        ({"threshold_objective": "auc"}, "'threshold_objective' parameter"),
        ({"calibration_fraction": 1.0}, "'calibration_fraction' parameter"),
    ],
)
def test_bad_options_are_refused(options, match):
    with pytest.raises(InvalidInputError, match=match):
        ContextLength(**options)


def test_edges_from_a_key_and_a_single_edge():
    study = studies.create_from_key("context_length[edges=2000]")
    assert study.edges == (2000,) and study.key == "context_length[edges=2000]"
    assert studies.create_from_key(study.key) == study
    two = studies.create_from_key("context_length[edges=500+3000]")
    assert two.edges == (500, 3000) and studies.create_from_key(two.key) == two


def test_toy_strata_and_counts(toy):
    data, result = toy
    strata = result.table("strata")
    assert strata["n_responses"].tolist() == [80, 80, 80]
    assert strata["stratum"].tolist() == ["<1K", "1K-5K", ">5K"]
    assert result.skipped == ("bare: no context (no stratum to measure)",)


def test_toy_detector_metrics_match_sklearn(toy):
    data, result = toy
    frame = data.frame("toy")
    y = data.verdicts("toy")["human"].to_numpy()
    s = data.detector_scores("toy")["d"].to_numpy()
    b = data.detector_scores("toy")["b"].to_numpy()
    ctx = frame.merge(data.examples, on="example_id", how="left")["context"].str.len()
    stratum = np.digitize(ctx, (1000, 5000))
    test = split_of(frame["example_id"].tolist()) == "test"
    t = _threshold_by_brute_force(y[~test], s[~test])
    m = result.table("stratum_metrics").set_index(["stratum", "name", "metric"])["value"]
    for k, name in enumerate(["<1K", "1K-5K", ">5K"]):
        inside = stratum == k
        assert m[(name, "d", "auroc")] == pytest.approx(roc_auc_score(y[inside], s[inside]))
        cut = inside & test
        assert m[(name, "d", "f1")] == pytest.approx(f1_score(y[cut], s[cut] >= t))
        assert m[(name, "b", "precision")] == pytest.approx(
            precision_score(y[cut], b[cut] >= 0.5, zero_division=np.nan)
        )
        lab = data.verdicts("toy")["lab"].to_numpy()
        assert m[(name, "lab", "f1")] == pytest.approx(f1_score(y[inside], lab[inside]))
    thresholds = result.table("stratum_metrics").query("name == 'd' and metric == 'f1'")
    assert thresholds["threshold"].tolist() == [t] * 3
    assert (thresholds["split"] == "test").all()


def test_toy_intervals_follow_the_run_bootstrap(toy):
    data, _ = toy
    boot = Bootstrap(n_resamples=40, confidence=0.8, seed=5)
    result = ContextLength().run(data, bootstrap=boot)
    frame = data.frame("toy")
    y = data.verdicts("toy")["human"].to_numpy()
    s = data.detector_scores("toy")["d"].to_numpy()
    ctx = frame.merge(data.examples, on="example_id", how="left")["context"].str.len()
    inside = np.digitize(ctx, (1000, 5000)) == 0
    row = result.table("stratum_metrics").query("stratum == '<1K' and name == 'd'")
    row = row.query("metric == 'auroc'").iloc[0]
    direct = bootstrap_ci("auroc", y[inside], s[inside], n_resamples=40, confidence=0.8, seed=5)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((direct.ci_low, direct.ci_high))


def test_toy_gain_and_statistics(toy):
    _, result = toy
    gain = result.table("long_context_gain").set_index(["name", "metric"])
    m = result.table("stratum_metrics").set_index(["stratum", "name", "metric"])["value"]
    assert gain.loc[("d", "auroc"), "gain"] == pytest.approx(
        m[(">5K", "d", "auroc")] - m[("<1K", "d", "auroc")]
    )
    assert gain.loc[("d", "auroc"), "gain"] < -0.2  # the toy detector is worse on long contexts
    assert gain.loc[("lab", "f1"), "gain"] < -0.2
    stats = result.table("benchmark_statistics").set_index("dataset")
    assert stats.loc["toy", "mean_context_chars"] == pytest.approx(np.mean(LENGTHS))
    assert stats.loc["toy", "max_context_chars"] == 8000
    assert stats.loc["toy", "n_generators"] == 2 and stats.loc["toy", "n_domains"] == 3
    assert stats.loc["toy", "domain"] == "example meta 'domain'"
    assert stats.loc["bare", "share_with_context"] == 0 and stats.loc["bare", "samples"] == 1
    assert "On toy" in result.finding and [f.stem for f in result.figures] == ["context_length_toy"]


# --- real data ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ragtruth(real_run):
    data = real_run(
        ingested=("ragtruth",),
        labelers=("knowledge_f1",),
        detectors=("length[unit=chars]", "source_overlap"),
    )
    return data.store, data, ContextLength().run(data, bootstrap=Bootstrap(n_resamples=100))


def test_ragtruth_strata_per_task_and_statistics(ragtruth):
    store, data, result = ragtruth
    strata = result.table("strata")
    overall = strata[strata["task"] == "all"]
    assert overall["n_responses"].sum() == 2617
    by_task = strata[strata["task"] != "all"].groupby("task")["n_responses"].sum()
    assert by_task.to_dict() == {"data2text": 900, "rag_qa": 817, "summary": 900}
    stats = result.table("benchmark_statistics").set_index("task")
    assert stats.loc["all", "samples"] == 2617 and stats.loc["all", "n_generators"] == 6
    assert stats.loc["all", "n_domains"] == 3 and stats.loc["rag_qa", "n_domains"] == 1
    qa = data.frame("ragtruth").query("task == 'rag_qa'")
    ctx = qa.merge(data.examples, on="example_id")["context"].str.len()
    assert stats.loc["rag_qa", "mean_context_chars"] == pytest.approx(ctx.mean())
    assert stats.loc["all", "hallucination_rate"] == pytest.approx((259 + 241 + 579) / 2617)
    save_result(store, result)


def test_ragtruth_stratum_auroc_matches_a_direct_computation(ragtruth):
    _, data, result = ragtruth
    rows = data.frame("ragtruth").merge(
        data.examples[["example_id", "context_chars"]], on="example_id", how="left"
    )
    long = (rows["context_chars"] >= 5000).to_numpy()
    y = data.verdicts("ragtruth")["human"].to_numpy()
    s = data.detector_scores("ragtruth")["source_overlap"].to_numpy()
    m = result.table("stratum_metrics").query(
        "task == 'all' and stratum == '>5K' and name == 'source_overlap' and metric == 'auroc'"
    )
    assert m["value"].iloc[0] == pytest.approx(roc_auc_score(y[long], s[long]))
    assert m["n"].iloc[0] == long.sum()
    assert m["ci_low"].iloc[0] < m["value"].iloc[0] < m["ci_high"].iloc[0]
    assert "ragtruth" in result.finding


def test_toy_finding_gives_each_rate_its_count(toy):
    _, result = toy
    strata = result.table("strata").set_index("stratum")
    for name in ("<1K", "1K-5K", ">5K"):
        row = strata.loc[name]
        assert (
            f"{name} 33% (n = {row['n_responses']:,}; hallucinated "
            f"{row['hallucination_rate']:.0%} of {row['n_labelled']:,} labelled)"
        ) in result.finding
