"""``realitycheck detect --backend hf[...]`` on TruthfulQA's human-judged answers.

A TruthfulQA folder with the first questions of the real files (their CSV
rows and every judged answer to them) is scored with perplexity and eRank
through the tiny Llama of ``conftest.py``: the answers carry no features,
so the proxy reads them; a rerun reads nothing again; a backend that cannot
read fixed answers is refused before the dataset is loaded.
"""

from __future__ import annotations

import csv
import importlib
import json

import pytest

from realitycheck.cli import main
from realitycheck.store import RunStore

N_QUESTIONS = 3


@pytest.fixture(scope="module")
def small_truthfulqa(data_dir, tmp_path_factory):
    """A data folder whose TruthfulQA holds the first questions and all their answers."""
    source = data_dir / "truthfulqa"
    root = tmp_path_factory.mktemp("data")
    folder = root / "truthfulqa"
    folder.mkdir()
    with open(source / "TruthfulQA.csv", newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        rows = [row for _, row in zip(range(N_QUESTIONS), reader, strict=False)]
        fields = reader.fieldnames
    with open(folder / "TruthfulQA.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    asked = {f"Q: {row['Question']}\n" for row in rows}
    for name in ("finetune_truth.jsonl", "finetune_info.jsonl"):
        lines = (source / name).read_text(encoding="utf-8").splitlines()
        kept = [
            line for line in lines if any(json.loads(line)["prompt"].startswith(q) for q in asked)
        ]
        (folder / name).write_text("\n".join(kept) + "\n", encoding="utf-8")
    return root


def test_detect_with_a_proxy_backend_on_truthfulqa_then_rerun(
    tiny_lm_dir, small_truthfulqa, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "run"
    command = ["-q", "detect", "-d", "truthfulqa", "--data-dir", str(small_truthfulqa)]
    command += ["-D", "perplexity,erank", "-b", f'hf[model="{tiny_lm_dir}",device=cpu]']
    command += ["--out", str(out)]
    assert main(command) == 0
    printed = capsys.readouterr()
    store = RunStore(out)
    n = store.arrow("responses").num_rows
    assert n > 20
    assert f"perplexity: {n} computed, 0 already stored" in printed.out
    assert f"{n} responses measured" in printed.err and "teacher-forced" in printed.err
    scores = store.arrow("scores").to_pandas()
    assert len(scores) == 2 * n and scores["value"].notna().all()
    specs = [json.loads(s) for s in scores["spec"]]
    assert {s["proxy"]["model"] for s in specs} == {str(tiny_lm_dir)}
    prompts = {s["proxy"]["prompt"] for s in specs}
    assert prompts == {
        "generation plan[decoding=greedy,n_samples=0], the response's variant or zero_shot"
    }

    forward = importlib.import_module("realitycheck.backends.hf._forward")
    calls: list[int] = []
    original = forward.forward_features
    monkeypatch.setattr(
        forward, "forward_features", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    assert main(command) == 0
    assert f"perplexity: 0 computed, {n} already stored" in capsys.readouterr().out
    command[command.index("perplexity,erank")] = "mean_token_entropy"
    assert main(command) == 0
    assert calls == []
    assert f"mean_token_entropy: {n} computed" in capsys.readouterr().out


def test_detect_with_a_backend_that_cannot_read_answers_is_refused(
    small_truthfulqa, tmp_path, capsys
):
    out = tmp_path / "run"
    command = ["-q", "detect", "-d", "truthfulqa", "--data-dir", str(small_truthfulqa)]
    command += ["-D", "perplexity", "-b", "mock", "--out", str(out)]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "perplexity (through the proxy mock) needs token log-probabilities" in err
    assert "cannot read fixed answers (teacher forcing). Backends that can: hf" in err
    assert not (out / "responses.parquet").exists()
