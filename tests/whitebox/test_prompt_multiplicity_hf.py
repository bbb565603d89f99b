"""The prompt multiplicity study on a real `choose` run: a tiny Llama, FACTOR and TruthfulQA-MC.

Three variants (the default prompt and two option shuffles) over a few
questions of each dataset from the shared data; the study's numbers are
recomputed here from the stored choices and gold labels.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from realitycheck import detect, detectors
from realitycheck.cli import main
from realitycheck.records import Label, Response
from realitycheck.store import RunData, RunStore, load_results

pytest.importorskip("torch")

VARIANTS = ("default", "shuffle_options[seed=1]", "shuffle_options[seed=2]")


def test_study_on_a_tiny_llama_choose_run(tiny_lm_dir, data_dir, tmp_path):
    run = tmp_path / "run"
    args = [
        "-q", "choose", "-d", "factor", "-d", "truthfulqa_mc", "--data-dir", str(data_dir),
        "-b", f"hf[model={tiny_lm_dir},device=cpu]", "--limit", "3",
        *itertools.chain.from_iterable(("--variant", v) for v in VARIANTS),
        "--out", str(run),
    ]  # fmt: skip
    assert main(args) == 0
    store = RunStore(run)
    detect(store, [detectors.create_from_key("length")])
    assert main(["-q", "study", "prompt_multiplicity", "--run", str(run), "--no-report"]) == 0
    (result,) = [r for r in load_results(store) if r.study == "prompt_multiplicity"]
    wrong = {lab.response_id: lab.hallucinated for lab in store.read(Label)}
    data = RunData(store)
    summary = result.table("multiplicity").set_index("dataset")
    assert sorted(summary.index) == sorted(data.datasets) and len(summary) == 2
    for ds in data.datasets:
        chosen: dict[str, dict[str, int]] = {}
        right: dict[str, dict[str, bool]] = {}
        for r in store.read(Response):
            if r.example_id in set(data.frame(ds)["example_id"]):
                chosen.setdefault(r.example_id, {})[r.prompt_variant] = r.meta["chosen"]
                right.setdefault(r.example_id, {})[r.prompt_variant] = not wrong[r.response_id]
        row = summary.loc[ds]
        assert row["questions"] == len(chosen) == 3 and row["variants"] == 3
        accuracy = [np.mean([right[q][v] for q in right]) for v in VARIANTS]
        assert row["accuracy_mean"] == pytest.approx(np.mean(accuracy))
        assert row["accuracy_std"] == pytest.approx(np.std(accuracy))
        assert row["ambiguity"] == pytest.approx(
            np.mean([len(set(c.values())) > 1 for c in chosen.values()])
        )
        agree = {
            q: np.mean([a == b for a, b in itertools.permutations(c.values(), 2)])
            for q, c in chosen.items()
        }
        questions = result.table("questions").query("dataset == @ds").set_index("example_id")
        assert questions["self_consistency"].to_dict() == pytest.approx(agree)
        randomness = np.mean([agree[q] < 0.8 for q in chosen])
        assert row["randomness"] == pytest.approx(randomness)
    tests = result.table("detector_tests")
    assert set(tests["detector"]) == {"length"} and tests["p_value"].isna().all()
    assert [f.stem for f in result.figures][:2] == ["taxonomy_factor", "accuracy_factor"]
