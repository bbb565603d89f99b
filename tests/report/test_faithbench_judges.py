"""The report shows FaithBench's recorded GPT judges as labelers beside the detectors."""

import pandas as pd
import pytest

from realitycheck import EvaluationConfig, RunStore, datasets, evaluate, ingest
from realitycheck.analysis import Bootstrap
from realitycheck.report import write_report
from realitycheck.report._markdown import escape_md

JUDGES = ("recorded:gpt-3.5-turbo", "recorded:gpt-4-turbo", "recorded:gpt_4o")
# human is human[protocol=majority] (evaluate shows a twin once, under human).
PROTOCOLS = ("human", "human[protocol=worst]")


@pytest.fixture(scope="module")
def faithbench(tmp_path_factory, data_dir):
    store = RunStore(tmp_path_factory.mktemp("faithbench"))
    ingest(store, datasets.create("faithbench", data_dir=data_dir))
    evaluation = evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=50)))
    files = write_report(store, store.path / "report")
    return store, evaluation, files


def test_every_judge_is_measured_against_both_protocols(faithbench):
    store, evaluation, _ = faithbench
    agreement = evaluation.agreement.query("slice == 'all'")
    assert "human[protocol=majority]" not in set(agreement["reference"])
    labels = store.frame("labels")
    for judge in JUDGES:
        for truth in PROTOCOLS:
            rows = agreement[(agreement["labeler"] == judge) & (agreement["reference"] == truth)]
            by = rows.set_index("metric")
            assert {"balanced_accuracy", "f1_macro", "cohen_kappa"} <= set(by.index)
            y = labels[labels["labeler"] == truth].set_index("response_id")["hallucinated"]
            p = labels[labels["labeler"] == judge].set_index("response_id")["hallucinated"]
            both = pd.concat([y, p], axis=1, keys=["y", "p"]).dropna()
            # majority leaves Benign / Questionable majorities undecided: 134 of 750
            assert by.loc["cohen_kappa", "n"] == len(both) == (616 if "worst" not in truth else 750)
            for metric in ("balanced_accuracy", "cohen_kappa"):
                row = by.loc[metric]
                assert row["ci_low"] <= row["value"] <= row["ci_high"]


def test_the_report_puts_the_judges_beside_the_detectors(faithbench):
    store, evaluation, files = faithbench
    markdown = files.markdown.read_text()
    metrics = markdown.split("## Detector metrics", 1)[1].split("## ROC", 1)[0]
    for protocol in PROTOCOLS:
        caption = escape_md(f"against {protocol} labels, beside the detectors")
        assert caption in metrics
        table = metrics.split(caption, 1)[1].split("\n\n")[1]  # the table after its caption
        assert table.startswith("| labeler | Bal. accuracy | F1-macro | Cohen's kappa |")
        for judge in JUDGES:
            assert f"| {escape_md(judge)} |" in table
    assert "| recorded:hhem-2.1 |" in metrics and "| recorded:gpt\\_4o |" in metrics
