"""NQ-Open end to end with judges: generate, judge through the cache, labeler shift (paper 000).

The answers come from the mock backend; the judges run on the mock backend
too, so the verdicts are known: every "I think it was 1990" answer is wrong.
ROUGE-L is the reference, as in the paper's comparison of ROUGE with an LLM
judge, and labeler shift shows each detector under both judges.
"""

from __future__ import annotations

import pandas as pd
import pytest

from realitycheck.cli import main
from realitycheck.store import RunStore, load_results

GENERATOR = 'mock[reply="I think it was 1990",replies="moon=>December 1972"+"eagles=>2017"]'
QA_JUDGE = 'qa_judge[judge=mock[reply=correct,replies="1990=>incorrect"]]'
FACTUALITY_JUDGE = 'factuality_judge[judge=mock[reply="(C)",replies="1990=>(D)"]]'


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("nq")
    out, cache = root / "run", root / "cache"
    common = ["--out", str(out), "--cache-dir", str(cache)]
    generate = ["-q", "generate", "-d", "nq_open", "-b", GENERATOR, "--plan", "greedy"]
    assert main([*generate, "--limit", "12", *common]) == 0
    labelers = ["-l", "rouge_l", "-l", QA_JUDGE, "-l", FACTUALITY_JUDGE]
    assert main(["-q", "label", "-d", "nq_open", *labelers, *common]) == 0
    assert main(["-q", "detect", "-d", "nq_open", "-D", "length", *common]) == 0
    return out, cache, labelers


def test_the_judges_label_every_generated_answer(run):
    out, _, _ = run
    labels = RunStore(out).frame("labels")
    for judge, wrong in (("qa_judge", "incorrect"), ("factuality_judge", "D")):
        mine = labels[labels["labeler"].str.startswith(judge)]
        assert len(mine) == 12 and (mine["error"] == "").all()
        assert (mine["hallucinated"] == (mine["category"] == wrong)).all()
        assert mine["hallucinated"].sum() == 10  # all but the moon and the eagles questions


def test_a_rerun_reads_every_verdict_from_the_cache(run, tmp_path, capsys, sent):
    out, cache, labelers = run
    fresh = tmp_path / "again"  # a new run folder: only the call cache can answer
    generate = ["-q", "generate", "-d", "nq_open", "-b", GENERATOR, "--plan", "greedy"]
    common = ["--out", str(fresh), "--cache-dir", str(cache)]
    assert main([*generate, "--limit", "12", *common]) == 0
    capsys.readouterr()
    assert main(["label", "-d", "nq_open", *labelers, *common]) == 0
    assert sum(sent) == 0  # neither the answers nor the verdicts were asked for again
    printed = capsys.readouterr().out
    assert printed.count("12 computed") == 3
    calls = pd.read_parquet(fresh / "labels.parquet")
    judged = calls[calls["labeler"].str.contains("judge")]
    original = RunStore(out).frame("labels")
    original = original[original["labeler"].str.contains("judge")]
    key = ["labeler", "response_id"]
    merged = judged.merge(original, on=key, suffixes=("", "_first"))
    assert len(merged) == 24 and (merged["category"] == merged["category_first"]).all()


def test_labeler_shift_puts_the_judges_beside_rouge(run):
    out, _, _ = run
    study = ["-q", "study", "labeler_shift[reference=rouge_l]", "--run", str(out), "--no-report"]
    assert main(study) == 0
    (result,) = load_results(RunStore(out))
    shift = result.table("shift")
    judges = {k for k in shift["labeler"] if "judge" in k}
    assert {k.split("[")[0] for k in judges} == {"qa_judge", "factuality_judge"}
    assert set(shift["detector"]) == {"length"}
