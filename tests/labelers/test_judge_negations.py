"""Issue 23's done-when check: negated replies never become the verdict they negate.

The three replies of the issue, given by the ``mock`` backend, through the
Python API and through ``realitycheck label``: none is read as *correct*;
each is an unreadable reply (category ``invalid``, no value, counted, its
reason kept). A reply the length limit cut off is read only where its
conclusion was complete.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from realitycheck.backends.mock import MockBackend
from realitycheck.cli import main
from realitycheck.labelers.qa_judge import QAJudge
from realitycheck.records import Example, Response

NEGATIONS = (
    "The proposed answer is not correct.",
    "This is not correct; the reference says 1972.",
    "I cannot say whether it is correct.",
)
QA = Example(example_id="q", dataset="t", task="qa", question="When?", references=("1972",))


def _response(text: str = "1969") -> Response:
    return Response(response_id="r", example_id="q", model="m", text=text)


@pytest.mark.parametrize("reply", NEGATIONS)
@pytest.mark.parametrize("structured", [True, False])
def test_a_negated_verdict_is_never_that_verdict(reply, structured):
    judge = QAJudge(judge=MockBackend(reply=reply), structured=structured)
    (label,) = judge.label([_response()], {"q": QA})
    assert label.category == "invalid" != "correct"
    assert label.hallucinated is None and label.score is None
    assert label.unreadable == 1 and not label.failed
    raw = json.loads(label.raw)
    assert raw["replies"] == [reply] and raw["reasons"] == ["negated"]
    assert label.error.startswith("no verdict in the judge's reply (negated)")


@pytest.mark.parametrize(
    ("reply", "max_tokens", "category"),
    [
        ("Verdict: correct because the dates agree", 3, "invalid"),  # "…correct because" cut
        ("The response mentions consistent facts and the year", 6, "invalid"),
        ("Verdict: incorrect\nbecause the reference says 1972", 3, "incorrect"),
        ('{"verdict": "incorrect", "reason": "the reference says 1972"}', 3, "incorrect"),
    ],
)
def test_a_reply_cut_off_by_the_length_limit_is_read_only_where_complete(
    reply, max_tokens, category
):
    judge = QAJudge(judge=MockBackend(reply=reply), max_tokens=max_tokens, structured=False)
    (label,) = judge.label([_response()], {"q": QA})
    raw = json.loads(label.raw)
    assert raw["truncated"] == [True]
    assert label.category == category
    if category == "invalid":
        assert raw["reasons"] == ["truncated"] and label.unreadable == 1


def test_the_issue_negations_through_realitycheck_label(tmp_path, capsys):
    rows = [
        {"qid": f"q{i}", "task": "qa", "question": f"Year {i}?", "answer": f"answer {i}",
         "references": "1972"}
        for i in range(3)
    ]  # fmt: skip
    path = tmp_path / "years.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    dataset = f"files[path={path},text=answer,columns=example_id:qid,name=years]"
    rules = "+".join(f'"answer {i}=>{text}"' for i, text in enumerate(NEGATIONS))
    judge = f"qa_judge[judge=mock[reply=correct,replies={rules}]]"
    out = ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "run")]
    assert main(["-q", "label", "-d", dataset, "-l", judge, *out]) == 0
    capsys.readouterr()
    labels = pd.read_parquet(tmp_path / "run" / "labels.parquet")
    mine = labels[labels["labeler"].str.startswith("qa_judge")]
    assert len(mine) == 3
    assert (mine["category"] == "invalid").all() and mine["hallucinated"].isna().all()
    assert mine["unreadable"].tolist() == [1, 1, 1]
    replies = sorted(json.loads(raw)["replies"][0] for raw in mine["raw"])
    assert replies == sorted(NEGATIONS)


def test_a_panel_counts_its_members_unreadable_replies():
    from realitycheck.labelers.panel import Panel

    members = (
        QAJudge(judge=MockBackend(reply=NEGATIONS[0])),
        QAJudge(judge=MockBackend(reply="Verdict: incorrect")),
        QAJudge(judge=MockBackend(reply="Final answer: incorrect.")),
    )
    (label,) = Panel(members=members).label([_response()], {"q": QA})
    assert label.hallucinated is True and label.category == "2/2"
    assert label.unreadable == 1 and not label.failed
    votes = json.loads(label.raw)["votes"]
    assert [v["unreadable"] for v in votes] == [1, 0, 0]
