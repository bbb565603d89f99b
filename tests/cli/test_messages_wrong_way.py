"""Messages that send the user the right way: report and evaluate (issue 25).

``report --reference KEY`` refuses a key the run holds no labels of, as
evaluate does, and writes nothing. ``evaluate -l rouge_l`` on data without
reference answers measures the rest, says why rouge_l has nothing, exits 0
(a labeler undefined on the data is missing, not a failure) and writes the
report; a named key the data does not explain is still refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realitycheck import EvaluationConfig, Example, Label, Response, RunStore, Score, evaluate
from realitycheck.cli import main
from realitycheck.errors import InvalidInputError
from realitycheck.report import write_report

FAST = ["--n-resamples", "20"]


def _answers(path: Path, n: int = 12, *, references: bool = True) -> str:
    """A user's JSONL of ``n`` answers with human labels, with or without reference answers."""
    rows = []
    for i in range(n):
        wrong = i % 3 == 0
        row = {
            "qid": f"q{i}",
            "question": f"What colour is fruit {i}?",
            "answer": "It is bright purple with stripes and sparkles" if wrong else "Red",
            "is_wrong": "yes" if wrong else "no",
        }
        if references:
            row["references"] = "Red;A red one"
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    columns = "example_id:qid" + ("+references:references" if references else "")
    return (
        f"files[path={path},text=answer,label=is_wrong,positive=yes,negative=no,columns={columns}]"
    )


# -- report --reference ---------------------------------------------------------------------


@pytest.fixture
def evaluated(tmp_path):
    run = tmp_path / "run"
    dataset = _answers(tmp_path / "answers.jsonl")
    args = ["-q", "evaluate", "-d", dataset, "-l", "rouge_l", "-D", "length", *FAST]
    assert main([*args, "--no-report", "--out", str(run)]) == 0
    return run


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("humn", " Did you mean 'human'?"),
        ("bleu", ""),
        ("rouge_l[threshold=0.3]", ""),
    ],
)
def test_report_refuses_a_reference_without_labels_and_writes_nothing(
    evaluated, tmp_path, capsys, key, hint
):
    out = tmp_path / "report"
    capsys.readouterr()
    args = ["-q", "report", "--run", str(evaluated), "--reference", key]
    code = main([*args, "--report-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"field 'reference': The run holds no labeler {key!r}.{hint} Its labelers: " in err
    assert "human, rouge_l." in err
    assert not out.exists()
    assert main(["-q", "report", "--run", str(evaluated), "--reference", key]) == 2
    assert (
        not (evaluated / "report.html").exists() and not (evaluated / "leaderboard.html").exists()
    )


def test_report_takes_a_reference_the_run_holds(evaluated, tmp_path, capsys):
    out = tmp_path / "report"
    args = ["-q", "report", "--run", str(evaluated), "--reference", "rouge_l"]
    assert main([*args, "--report-dir", str(out)]) == 0
    assert (out / "report.html").is_file() and (out / "leaderboard.html").is_file()


def test_write_report_refuses_the_reference_as_evaluate_does(evaluated, tmp_path):
    store = RunStore(evaluated)
    message = (
        r"The run holds no labeler 'humn'\. Did you mean 'human'\? Its labelers: human, rouge_l\."
    )
    with pytest.raises(InvalidInputError, match=message):
        write_report(store, tmp_path / "out", reference="humn")
    with pytest.raises(InvalidInputError, match=message):
        evaluate(store, EvaluationConfig(reference="humn"))
    assert not (tmp_path / "out").exists()


# -- a component undefined on the data is missing, not a failure ---------------------------


def test_evaluate_measures_the_rest_says_why_rouge_l_has_nothing_and_writes_the_report(
    tmp_path, capsys
):
    run = tmp_path / "run"
    dataset = _answers(tmp_path / "plain.jsonl", references=False)
    args = ["-q", "evaluate", "-d", dataset, "-l", "rouge_l", "-D", "length", *FAST]
    assert main([*args, "--out", str(run)]) == 0
    printed = capsys.readouterr()
    assert "The run holds no labeler" not in printed.err
    name = f"files:{tmp_path / 'plain.jsonl'}"
    assert (
        f"note: rouge_l gave no verdict on any response of {name}: none has the reference "
        "answers it needs (12 responses)."
    ) in printed.err
    assert (run / "report.html").is_file() and (run / "metrics.csv").is_file()
    metrics = (run / "metrics.csv").read_text()
    assert "length" in metrics and "rouge_l" not in metrics
    notes = RunStore(run).read_manifest()["notes"]
    assert any("rouge_l gave no verdict" in n for n in notes)


def test_evaluate_with_nothing_to_measure_says_why_the_labeler_has_nothing(tmp_path, capsys):
    dataset = _answers(tmp_path / "plain.jsonl", references=False)
    args = ["-q", "evaluate", "-d", dataset, "-l", "rouge_l", *FAST, "--out", str(tmp_path / "r")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "The evaluation produced no metric rows." in err
    assert "rouge_l gave no verdict on any response of" in err
    assert "none has the reference answers it needs (12 responses)." in err


def _store(tmp_path: Path, n: int = 20) -> RunStore:
    """A run of ``n`` answers without references: human labels, a length score."""
    store = RunStore(tmp_path / "api-run")
    ids = [(f"d/{i}", f"d/{i}/m") for i in range(n)]
    store.append([Example(example_id=e, dataset="d", task="open", question="q?") for e, _ in ids])
    store.append(
        [
            Response(response_id=r, example_id=e, model="m", text="x" * (i + 1))
            for i, (e, r) in enumerate(ids)
        ]
    )
    store.append(
        [
            Label(response_id=r, labeler="human", hallucinated=i % 2 == 0)
            for i, (_, r) in enumerate(ids)
        ]
    )
    store.append(
        [Score(response_id=r, detector="length", value=float(i)) for i, (_, r) in enumerate(ids)]
    )
    return store


def test_a_labeler_whose_every_label_has_an_error_is_named_with_the_commonest(tmp_path):
    store = _store(tmp_path)
    ids = [f"d/{i}/m" for i in range(20)]
    store.append(
        [
            Label(response_id=rid, labeler="exact_match", hallucinated=None, error=error)
            for rid, error in zip(
                ids, ["no reference answer"] * 15 + ["empty text"] * 5, strict=True
            )
        ]
    )
    config = EvaluationConfig(labelers=("exact_match",), detectors=("length",))
    done = evaluate(store, config)
    assert (
        "exact_match gave no verdict on any response of d: no reference answer "
        "(15 of 20 responses)."
    ) in done.notes
    assert set(done.metrics["detector"]) == {"length"}


@pytest.mark.parametrize(
    ("named", "kind"),
    [
        (("rouge_ll",), "labeler"),  # misspelt: no such component
        (("factuality_judge",), "labeler"),  # needs nothing the data lacks: never run
    ],
)
def test_a_named_labeler_the_data_does_not_explain_is_still_refused(tmp_path, named, kind):
    store = _store(tmp_path)
    with pytest.raises(InvalidInputError, match=rf"The run holds no {kind} '{named[0]}'"):
        evaluate(store, EvaluationConfig(labelers=named))


def test_rouge_l_never_run_on_data_with_references_is_still_refused(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append(
        [Example(example_id="e", dataset="d", task="qa", question="q?", references=("a",))]
    )
    store.append([Response(response_id="r", example_id="e", model="m", text="a")])
    store.append([Label(response_id="r", labeler="human", hallucinated=False)])
    with pytest.raises(InvalidInputError, match="The run holds no labeler 'rouge_l'"):
        evaluate(store, EvaluationConfig(labelers=("rouge_l",)))
