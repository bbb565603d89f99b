"""TruthfulQA's 22,434 human-judged answers with both judges on the mock backend, end to end.

The mock judges call an answer wrong when it starts with "No" (a scripted
rule, not a real verdict): what is checked is that every answer is judged
once, through the call cache, and that labeler shift reports each detector
under human labels, ROUGE-L and both judges side by side.
"""

from __future__ import annotations

import pytest

from realitycheck.cli import main
from realitycheck.store import RunStore, load_results

QA_JUDGE = 'qa_judge[judge=mock[reply=correct,replies="answer to grade: .No=>incorrect"]]'
FACTUALITY_JUDGE = 'factuality_judge[judge=mock[reply="(A)",replies="submitted answer: .No=>(D)"]]'


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("truthfulqa")
    out = root / "run"
    common = ["--out", str(out), "--cache-dir", str(root / "cache")]
    labelers = ["-l", "rouge_l", "-l", QA_JUDGE, "-l", FACTUALITY_JUDGE]
    assert main(["-q", "label", "-d", "truthfulqa", *labelers, *common]) == 0
    assert main(["-q", "detect", "-d", "truthfulqa", "-D", "length", *common]) == 0
    study = ["-q", "study", "labeler_shift", "--run", str(out), "--n-resamples", "20"]
    study += ["--no-report"]
    assert main(study) == 0
    return out


def test_both_judges_label_every_answer_with_references(run):
    labels = RunStore(run).frame("labels")
    for judge, wrong in (("qa_judge", "incorrect"), ("factuality_judge", "D")):
        mine = labels[labels["labeler"].str.startswith(judge)]
        judged = mine[mine["error"] == ""]
        # 26 answers have no references (qa_judge skips them; factuality_judge says why)
        # and 67 answers in finetune_truth.jsonl are empty
        assert len(mine) == {"qa_judge": 22_408, "factuality_judge": 22_434}[judge]
        assert set(mine.loc[mine["error"] != "", "error"]) <= {
            "the response is empty",
            "no reference answers or knowledge passage to compare with",
        }
        assert len(judged) == 22_341
        assert (judged["hallucinated"] == (judged["category"] == wrong)).all()
        assert 0 < judged["hallucinated"].sum() < len(judged)


def test_labeler_shift_shows_the_judge_columns(run):
    (result,) = load_results(RunStore(run))
    shift = result.table("shift")
    assert set(shift["reference"]) == {"human"}
    by = {k.split("[")[0] for k in shift["labeler"]}
    assert by == {"rouge_l", "qa_judge", "factuality_judge"}
    judged = shift[shift["labeler"].str.startswith("qa_judge")].set_index("metric")
    assert judged.loc["auroc", "n"] == 22_341
