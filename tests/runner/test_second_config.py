"""A second config (or evaluate command) on a run adds its components to the run's tables."""

import textwrap

import pandas as pd
import pytest

from realitycheck.cli import main

CONFIG = """\
labelers = {labelers}
detectors = {detectors}
studies = []

[run]
out = "run"
report = false

[[datasets]]
name = "files"
params = {{ path = "{path}", text = "answer", label = "is_wrong", positive = "yes", \
negative = "no", columns = ["example_id:qid", "model:llm"] }}

[bootstrap]
n_resamples = 20
{evaluate}"""

A, B, C = "length", "length[unit=chars]", "length[unit=tokens]"


@pytest.fixture
def answers(tmp_path, fruit_answers):
    return fruit_answers(tmp_path / "mine.jsonl", 24)


def _run(tmp_path, answers, name, labelers, detectors, evaluate=""):
    path = tmp_path / f"{name}.toml"
    text = CONFIG.format(
        labelers=list(labelers),
        detectors=list(detectors),
        path=answers,
        evaluate=textwrap.dedent(evaluate),
    )
    path.write_text(text.replace("'", '"'))
    assert main(["-q", "run", str(path)]) == 0
    run = tmp_path / "run"
    return pd.read_csv(run / "metrics.csv"), pd.read_csv(run / "agreement.csv")


def test_two_configs_on_one_run_give_metrics_of_both(tmp_path, answers, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the tokens unit reads the packaged tokenizer
    _run(tmp_path, answers, "first", ["rouge_l"], [A, B])
    metrics, agreement = _run(tmp_path, answers, "second", ["token_f1"], [C])
    assert set(metrics["detector"]) == {A, B, C}
    assert set(agreement["labeler"]) == {"rouge_l", "token_f1"}
    assert set(agreement["reference"]) == {"human"}
    again, _ = _run(tmp_path, answers, "second", ["token_f1"], [C])
    pd.testing.assert_frame_equal(again, metrics)  # a rerun changes nothing
    only, agreement = _run(
        tmp_path, answers, "only", ["token_f1"], [C], evaluate="\n[evaluate]\nonly = true\n"
    )
    assert set(only["detector"]) == {C} and set(agreement["labeler"]) == {"token_f1"}
    key = ["dataset", "slice", "detector", "labeler", "metric"]
    pd.testing.assert_frame_equal(
        only.set_index(key).sort_index(),
        metrics[metrics["detector"] == C].set_index(key).sort_index(),
    )


def test_evaluate_measures_every_stored_detector_unless_only(tmp_path, answers):
    run = tmp_path / "run"
    dataset = (
        f"files[path={answers},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )
    common = ["-q", "evaluate", "-d", dataset, "--n-resamples", "20", "--no-report"]
    common += ["--out", str(run)]
    assert main([*common, "-D", A, "-l", "rouge_l"]) == 0
    assert main([*common, "-D", B]) == 0
    metrics, agreement = pd.read_csv(run / "metrics.csv"), pd.read_csv(run / "agreement.csv")
    assert set(metrics["detector"]) == {A, B} and set(agreement["labeler"]) == {"rouge_l"}
    assert main([*common, "-D", B, "--only"]) == 0
    assert set(pd.read_csv(run / "metrics.csv")["detector"]) == {B}
    assert set(pd.read_csv(run / "agreement.csv")["labeler"]) == {"rouge_l"}  # no -l: all


def test_the_help_of_evaluate_says_what_only_does(capsys):
    assert main(["evaluate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--only" in text and "every stored detector and labeler is measured" in text
