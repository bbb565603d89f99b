"""The pair-classifier components end to end through the CLI on a slice of real data.

The slices are the first RAGTruth QA sources (10 responses with human span
labels) and the first 40 judged TruthfulQA answers, copied into a temporary
data folder (never into the repository). The classifier is the tiny random
NLI model, so the values mean nothing; what is checked is that the verbs run
end to end, store one score or label per response, measure the detectors
against the human labels, and that a rerun in a new run folder sharing the
call cache sends no pair to the model.
"""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from realitycheck.cli import main
from realitycheck.detectors import detectors as registry
from realitycheck.labelers import labelers

RAGTRUTH_SOURCES = 2
TRUTHFULQA_ANSWERS = 40


@pytest.fixture(scope="module")
def data_slice(data_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("data-slice")
    (root / "ragtruth").mkdir()
    lines = (data_dir / "ragtruth" / "qa.jsonl").read_text().splitlines(keepends=True)
    (root / "ragtruth" / "qa.jsonl").write_text("".join(lines[:RAGTRUTH_SOURCES]))
    for unused in ("summary.jsonl", "data2txt.jsonl"):  # tasks=qa reads only qa.jsonl
        (root / "ragtruth" / unused).write_text("")
    (root / "truthfulqa").mkdir()
    shutil.copy(data_dir / "truthfulqa" / "TruthfulQA.csv", root / "truthfulqa")
    for name in ("finetune_truth.jsonl", "finetune_info.jsonl"):
        lines = (data_dir / "truthfulqa" / name).read_text().splitlines(keepends=True)
        (root / "truthfulqa" / name).write_text("".join(lines[:TRUTHFULQA_ANSWERS]))
    return root


def _detectors(model):
    """Return the keys as typed and as stored (sorted, without settings such as batch_size)."""
    hf = f"hf[model={model},device=cpu,batch_size=64]"
    typed = [
        f"nli_grounding[judge={hf}]",
        f"cross_encoder[judge={hf},window=64,stride=48]",
        f"claim_check[judge={hf},window=64,stride=48]",
    ]
    return typed, [registry.create_from_key(k).key for k in typed]


def test_detect_and_evaluate_on_ragtruth_then_a_rerun_scores_no_pair(
    tmp_path, data_slice, tiny_nli_dir, pairs_scored, capsys
):
    typed, detectors = _detectors(tiny_nli_dir)
    common = ["--data-dir", str(data_slice), "--cache-dir", str(tmp_path / "cache")]
    dataset = ["-d", "ragtruth[tasks=qa]"]
    run = tmp_path / "run"
    args = ["-q", "evaluate", *dataset, *common, "-D", ",".join(typed)]
    assert main([*args, "--n-resamples", "20", "--no-report", "--out", str(run)]) == 0
    first = sum(pairs_scored)
    assert first > 100
    scores = pd.read_parquet(run / "scores.parquet")
    for key in detectors:
        mine = scores[scores["detector"] == key]
        assert len(mine) == 10 and mine["value"].notna().all(), key
        assert mine["value"].between(0, 1).all()
    metrics = pd.read_csv(run / "metrics.csv")
    auroc = metrics.query("labeler == 'human' and metric == 'auroc' and slice == 'all'")
    assert set(detectors) <= set(auroc["detector"])
    assert (auroc["n"] == 10).all()
    capsys.readouterr()

    again = tmp_path / "again"
    detect = ["-q", "detect", *dataset, *common, "-D", ",".join(typed), "--out", str(again)]
    assert main(detect) == 0
    assert sum(pairs_scored) == first  # a new run folder, the same cache: no pair scored again
    rescored = pd.read_parquet(again / "scores.parquet").set_index(["response_id", "detector"])
    stored = scores.set_index(["response_id", "detector"]).loc[rescored.index]
    assert rescored["value"].tolist() == pytest.approx(stored["value"].tolist())


def test_label_truthfulqa_with_nli_then_a_rerun_scores_no_pair(
    tmp_path, data_slice, tiny_nli_dir, pairs_scored, capsys
):
    typed = f"nli[judge=hf[model={tiny_nli_dir},device=cpu],premise=both]"
    key = labelers.create_from_key(typed).key
    common = ["-d", "truthfulqa", "--data-dir", str(data_slice), "-l", typed]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["label", *common, *cache, "--out", str(tmp_path / "run")]) == 0
    assert f"{key}: {TRUTHFULQA_ANSWERS} computed, 0 already stored" in capsys.readouterr().out
    first = sum(pairs_scored)
    assert first > TRUTHFULQA_ANSWERS  # both directions, several references per question
    labels = pd.read_parquet(tmp_path / "run" / "labels.parquet")
    mine = labels[labels["labeler"] == key]
    assert len(mine) == TRUTHFULQA_ANSWERS and mine["hallucinated"].notna().all()
    assert mine["score"].between(0, 1).all()

    assert main(["label", *common, *cache, "--out", str(tmp_path / "again")]) == 0
    assert sum(pairs_scored) == first
    assert main(["label", *common, *cache, "--out", str(tmp_path / "run")]) == 0
    assert f"{key}: 0 computed, {TRUTHFULQA_ANSWERS} already stored" in capsys.readouterr().out
