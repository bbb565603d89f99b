"""Labeler shift as Janiak et al.'s Tables 2-3: paired AUROCs and Δ% per model and prompt."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from realitycheck import Example, Label, Response, RunStore, Score
from realitycheck.analysis import Bootstrap
from realitycheck.metrics import bootstrap_ci, bootstrap_distribution
from realitycheck.report import write_report
from realitycheck.store import RunData, save_result
from realitycheck.studies.labeler_shift import LabelerShift

MODELS = ("llama", "mistral")
PROMPTS = ("few_shot", "zero_shot")
JUDGE = "recorded:judge"
B = 300


def _write_run(store, *, n_examples, models, prompts, seed, flip=0.25):
    """Questions answered by each model under each prompt; ROUGE-L and a judge; two detectors.

    The judge's verdict is the truth; ROUGE-L flips ``flip`` of them. Detector
    ``recorded:a`` tracks the truth, ``recorded:b`` tracks ROUGE-L and is missing
    on every seventh response.
    """
    rng = np.random.default_rng(seed)
    examples, responses, labels, scores = [], [], [], []
    for i in range(n_examples):
        eid = f"toy/{i}"
        examples.append(Example(example_id=eid, dataset="toy", task="qa", references=("x",)))
        for model in models:
            for prompt in prompts:
                rid = f"{eid}/{model}/{prompt}"
                kind = {"model": model, "prompt_variant": prompt}
                responses.append(Response(response_id=rid, example_id=eid, text="y", **kind))
                truth = bool(rng.random() < 0.4)
                rouge = truth != bool(rng.random() < flip)
                labels.append(Label(response_id=rid, labeler=JUDGE, hallucinated=truth))
                labels.append(Label(response_id=rid, labeler="rouge_l", hallucinated=rouge))
                a = float(truth) + rng.normal()
                b = None if len(scores) % 14 == 1 else float(rouge) * 1.5 + rng.normal()
                scores.append(Score(response_id=rid, detector="recorded:a", value=a))
                scores.append(Score(response_id=rid, detector="recorded:b", value=b))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return RunData(store)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("paired"))
    return _write_run(store, n_examples=60, models=MODELS, prompts=PROMPTS, seed=3)


@pytest.fixture(scope="module")
def result(data):
    study = LabelerShift(reference=JUDGE, labelers=("rouge_l",))
    return study.run(data, bootstrap=Bootstrap(n_resamples=B))


def _subset(data, model, prompt, detector):
    """Labels and scores of one cell, computed here from the run's records."""
    frame = data.frame("toy")
    keep = np.ones(len(frame), dtype=bool)
    if model != "all":
        keep &= (frame["model"] == model).to_numpy()
    if prompt != "all":
        keep &= (frame["prompt_variant"] == prompt).to_numpy()
    labels = data.labels.pivot(index="response_id", columns="labeler", values="hallucinated")
    values = data.scores.set_index(["detector", "response_id"])["value"].loc[detector]
    ids = frame.index[keep]
    s = values.reindex(ids).to_numpy(dtype=float)
    ok = ~np.isnan(s)
    return (
        labels.loc[ids, "rouge_l"].to_numpy(dtype=bool)[ok],
        labels.loc[ids, JUDGE].to_numpy(dtype=bool)[ok],
        s[ok],
    )


CELLS = [(m, p) for m in (*MODELS, "all") for p in (*PROMPTS, "all")]


def test_every_model_and_prompt_cell_and_the_pooled_ones_are_measured(result):
    paired = result.table("paired")
    assert set(zip(paired["model"], paired["prompt_variant"], strict=True)) == set(CELLS)
    assert set(paired["detector"]) == {"recorded:a", "recorded:b"}
    assert set(paired["labeler"]) == {"rouge_l"} and set(paired["reference"]) == {JUDGE}


@pytest.mark.parametrize(("model", "prompt"), CELLS)
@pytest.mark.parametrize("detector", ["recorded:a", "recorded:b"])
def test_aurocs_equal_sklearn_and_delta_follows_the_paper(data, result, model, prompt, detector):
    row = (
        result.table("paired")
        .set_index(["model", "prompt_variant", "detector"])
        .loc[(model, prompt, detector)]
    )
    y_rouge, y_judge, s = _subset(data, model, prompt, detector)
    assert row["n"] == len(s)
    assert row["labeler_auroc"] == pytest.approx(roc_auc_score(y_rouge, s), abs=1e-12)
    assert row["reference_auroc"] == pytest.approx(roc_auc_score(y_judge, s), abs=1e-12)
    assert row["labeler_positive_rate"] == pytest.approx(y_rouge.mean())
    # Janiak et al.: Δ% = (LLM - ROUGE) / ROUGE x 100, the judge as the LLM.
    expected = (row["reference_auroc"] - row["labeler_auroc"]) / row["labeler_auroc"] * 100
    assert row["delta_ref_pct"] == pytest.approx(expected)


@pytest.mark.parametrize(("model", "prompt"), [("llama", "zero_shot"), ("all", "all")])
def test_intervals_are_read_off_one_set_of_resamples(data, result, model, prompt):
    row = (
        result.table("paired")
        .set_index(["model", "prompt_variant", "detector"])
        .loc[(model, prompt, "recorded:b")]
    )
    y_rouge, y_judge, s = _subset(data, model, prompt, "recorded:b")
    for prefix, y in (("labeler", y_rouge), ("reference", y_judge)):
        direct = bootstrap_ci("auroc", y, s, n_resamples=B, seed=0)
        got = (row[f"{prefix}_auroc_ci_low"], row[f"{prefix}_auroc_ci_high"])
        assert got == pytest.approx((direct.ci_low, direct.ci_high))
    # The same seed and n give the same resamples: Δ% per resample, then its quantiles.
    rouge = bootstrap_distribution("auroc", y_rouge, s, n_resamples=B, seed=0)[0]
    judge = bootstrap_distribution("auroc", y_judge, s, n_resamples=B, seed=0)[0]
    delta = 100 * (judge - rouge) / rouge
    low, high = np.quantile(delta[np.isfinite(delta)], (0.025, 0.975))
    assert (row["delta_ref_pct_ci_low"], row["delta_ref_pct_ci_high"]) == pytest.approx((low, high))
    assert row["delta_ref_pct_ci_low"] <= row["delta_ref_pct"] <= row["delta_ref_pct_ci_high"]


def test_the_paired_interval_is_narrower_than_resampling_each_labeler_alone(tmp_path):
    # ROUGE-L disagrees with the judge on 5% of 400 responses: the two AUROCs move together.
    data = _write_run(
        RunStore(tmp_path), n_examples=400, models=("m",), prompts=("p",), seed=5, flip=0.05
    )
    result = LabelerShift(reference=JUDGE, labelers=("rouge_l",)).run(
        data, bootstrap=Bootstrap(n_resamples=500)
    )
    row = result.table("paired").set_index("detector").loc["recorded:a"]
    assert row["delta_ref_pct_ci_low"] <= row["delta_ref_pct"] <= row["delta_ref_pct_ci_high"]
    y_rouge, y_judge, s = _subset(data, "m", "p", "recorded:a")
    rouge = bootstrap_distribution("auroc", y_rouge, s, n_resamples=500, seed=0)[0]
    judge = bootstrap_distribution("auroc", y_judge, s, n_resamples=500, seed=1)[0]
    low, high = np.quantile(100 * (judge - rouge) / rouge, (0.025, 0.975))
    paired_width = row["delta_ref_pct_ci_high"] - row["delta_ref_pct_ci_low"]
    assert paired_width < 0.5 * (high - low)


def test_the_wide_table_has_the_papers_layout(result):
    paired = result.table("paired").set_index(["model", "prompt_variant", "detector"])
    wide = result.table("paired_wide")
    keys = ["dataset", "labeler", "reference", "model", "detector"]
    assert list(wide.columns[:5]) == keys
    groups = list(dict.fromkeys(c.split(": ")[0] for c in wide.columns[5:]))
    assert groups == ["few_shot", "zero_shot", "all"]
    assert list(wide.columns[5:15]) == [
        "few_shot: labeler AUROC",
        "few_shot: labeler AUROC_ci_low",
        "few_shot: labeler AUROC_ci_high",
        "few_shot: reference AUROC",
        "few_shot: reference AUROC_ci_low",
        "few_shot: reference AUROC_ci_high",
        "few_shot: Δ%",
        "few_shot: Δ%_ci_low",
        "few_shot: Δ%_ci_high",
        "few_shot: n",
    ]
    assert list(zip(wide["model"], wide["detector"], strict=True)) == [
        (m, d) for m in (*MODELS, "all") for d in ("recorded:a", "recorded:b")
    ]
    for _, row in wide.iterrows():
        for prompt in (*PROMPTS, "all"):
            cell = paired.loc[(row["model"], prompt, row["detector"])]
            assert row[f"{prompt}: labeler AUROC"] == cell["labeler_auroc"]
            assert row[f"{prompt}: reference AUROC_ci_high"] == cell["reference_auroc_ci_high"]
            assert row[f"{prompt}: Δ%"] == cell["delta_ref_pct"]
            assert row[f"{prompt}: n"] == cell["n"]


def test_the_finding_names_the_worst_cell_and_delta_per_prompt(result):
    paired = result.table("paired")
    cells = paired[(paired["model"] != "all") & (paired["prompt_variant"] != "all")]
    worst = cells.loc[cells["delta_ref_pct"].idxmin()]
    assert (
        f"rouge_l overstates {worst['detector']} most for {worst['model']} with "
        f"{worst['prompt_variant']} prompts on toy" in result.finding
    )
    assert f"Δ% = {worst['delta_ref_pct']:+.1f}%" in result.finding
    means = (
        paired[(paired["model"] == "all") & (paired["prompt_variant"] != "all")]
        .groupby("prompt_variant")["delta_ref_pct"]
        .mean()
    )
    assert (
        f"Δ% is {means['few_shot']:+.1f}% with few_shot prompts, "
        f"{means['zero_shot']:+.1f}% with zero_shot prompts." in result.finding
    )


def test_the_report_shows_the_wide_table_with_interval_headers(data, result, tmp_path):
    save_result(data.store, result)
    files = write_report(data.store, tmp_path / "report")
    markdown = files.markdown.read_text()  # Markdown escapes brackets and underscores
    headers = (
        "| dataset | labeler | reference | model | detector | few shot: labeler AUROC \\[CI\\] | "
        "few shot: reference AUROC \\[CI\\] | few shot: Δ% \\[CI\\] | few shot: n | "
    )
    assert headers in markdown
    row = result.table("paired_wide").iloc[0]
    shown = f"{row['all: Δ%']:.3f} \\[{row['all: Δ%_ci_low']:.3f}, {row['all: Δ%_ci_high']:.3f}\\]"
    assert shown in markdown
    assert "all: Δ% [CI]</th>" in files.html.read_text()


def test_one_model_and_one_prompt_give_one_cell_without_pooled_rows(tmp_path):
    data = _write_run(RunStore(tmp_path), n_examples=30, models=("m",), prompts=("p",), seed=1)
    result = LabelerShift(reference=JUDGE).run(data, bootstrap=Bootstrap(n_resamples=20))
    paired = result.table("paired")
    assert set(zip(paired["model"], paired["prompt_variant"], strict=True)) == {("m", "p")}
    assert [c.split(": ")[0] for c in result.table("paired_wide").columns[5:]] == ["p"] * 10
    assert "per model and prompt variant" not in result.finding
