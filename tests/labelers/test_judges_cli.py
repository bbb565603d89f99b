"""The judges end to end on the command line: label, resume from the cache, evaluate."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from realitycheck.cli import main

JUDGE = r'qa_judge[judge=mock[reply=correct,replies="sparkles=>incorrect"+"fruit 1\\?=>refuse"]]'


@pytest.fixture
def dataset(tmp_path):
    rows = []
    for i in range(12):
        wrong = i % 3 == 0
        rows.append(
            {
                "qid": f"q{i}",
                "task": "qa",
                "question": f"What colour is fruit {i}?",
                "answer": "It is bright purple with sparkles" if wrong else "Red",
                "references": "Red;A red one",
                "is_wrong": "yes" if wrong else "no",
            }
        )
    path = tmp_path / "fruit.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return (
        f"files[path={path},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid,name=fruit]"
    )


def test_label_with_a_judge_resumes_then_evaluate_shows_it_as_a_labeler(tmp_path, dataset, capsys):
    run, cache = tmp_path / "run", tmp_path / "cache"
    common = ["--cache-dir", str(cache), "--out", str(run)]
    assert main(["-q", "label", "-d", dataset, "-l", JUDGE, *common]) == 0
    assert ": 12 computed, 0 already stored" in capsys.readouterr().out
    labels = pd.read_parquet(run / "labels.parquet")
    mine = labels[labels["labeler"].str.startswith("qa_judge")].set_index("response_id")
    assert mine.loc["fruit/q0/unknown", "category"] == "incorrect"  # sparkles
    assert mine.loc["fruit/q1/unknown", "category"] == "refuse"
    assert mine.loc["fruit/q2/unknown", "category"] == "correct"
    assert mine["hallucinated"].sum() == 5  # four wrong answers and the refusal
    spec = json.loads(mine["spec"].iloc[0])
    assert spec["params"]["judge"]["name"] == "mock" and len(spec["params"]["prompt_sha256"]) == 64

    args = ["-q", "evaluate", "-d", dataset, "-l", JUDGE, "-D", "length", "--n-resamples", "50"]
    assert main([*args, *common]) == 0
    assert ": 0 computed, 12 already stored" in capsys.readouterr().out
    agreement = pd.read_csv(run / "agreement.csv")
    judged = agreement[agreement["labeler"].str.startswith("qa_judge")]
    accuracy = judged.query("reference == 'human' and metric == 'accuracy' and slice == 'all'")
    assert accuracy["value"].tolist() == [pytest.approx(11 / 12)]  # only the refusal disagrees
    metrics = pd.read_csv(run / "metrics.csv")  # the judge is also a reference for detectors
    assert metrics["labeler"].str.startswith("qa_judge").any()


def test_refusal_excluded_leaves_it_out_of_the_metrics(tmp_path, dataset, capsys):
    judge = JUDGE[:-1] + ",refusal_as=excluded]"
    run = tmp_path / "run"
    args = ["-q", "evaluate", "-d", dataset, "-l", judge, "-D", "length", "--n-resamples", "50"]
    assert main([*args, "--cache-dir", str(tmp_path / "c"), "--out", str(run)]) == 0
    capsys.readouterr()
    agreement = pd.read_csv(run / "agreement.csv")
    row = agreement[
        agreement["labeler"].str.startswith("qa_judge")
        & (agreement["reference"] == "human")
        & (agreement["metric"] == "accuracy")
        & (agreement["slice"] == "all")
    ]
    assert row["value"].tolist() == [1.0] and row["n_excluded"].tolist() == [1]
