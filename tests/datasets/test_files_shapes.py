"""The files dataset reads data as it comes: JSON, sniffed delimiters, constants, samples,
slice columns and several answers per row (HaluEval QA and PHD shapes, made up here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realitycheck.datasets import datasets
from realitycheck.datasets.files import Files
from realitycheck.errors import InvalidInputError

SHAPES = Path(__file__).parent / "shapes"

ROWS = [
    {"q": "Capital of France?", "answer": "Paris", "wrong": "no", "domain": "geo"},
    {"q": "Capital of Peru?", "answer": "Quito", "wrong": "yes", "domain": "geo"},
    {"q": "2+2?", "answer": "5", "wrong": "yes", "domain": "maths"},
]
BASE = {"text": "answer", "label": "wrong", "columns": "question:q"}


def _load(**params):
    return Files(**{**BASE, **params}).load()


def _summary(bundle):
    by_id = {lab.response_id: lab.hallucinated for lab in bundle.labels}
    return [(r.text, by_id.get(r.response_id)) for r in bundle.responses]


EXPECTED = [("Paris", False), ("Quito", True), ("5", True)]


def _delimited(rows, sep):
    header = list(rows[0])
    lines = [sep.join(header), *(sep.join(str(r[h]) for h in header) for r in rows)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("name", "content", "params"),
    [
        ("list.json", json.dumps(ROWS), {}),
        ("object.json", json.dumps({"meta": {"v": 1}, "rows": ROWS}), {}),
        ("nested.json", json.dumps({"data": {"items": ROWS, "n": 3}}), {"records": "data.items"}),
        ("tabs.tsv", _delimited(ROWS, "\t"), {}),
        ("tabs.csv", _delimited(ROWS, "\t"), {}),
        ("semicolons.csv", _delimited(ROWS, ";"), {}),
        ("commas.csv", _delimited(ROWS, ","), {}),
        ("pipes.txt", _delimited(ROWS, "|"), {"format": "csv", "delimiter": "|"}),
        ("rows.data", "".join(json.dumps(r) + "\n" for r in ROWS), {"format": "jsonl"}),
        ("list.txt", json.dumps(ROWS), {"format": "json"}),
    ],
)
def test_each_format_loads_the_same_rows(tmp_path, name, content, params):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert _summary(_load(path=str(path), **params)) == EXPECTED


def test_a_sniffed_csv_keeps_commas_inside_tab_separated_cells(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("q\tanswer\twrong\nA, B or C?\tB, surely\tno\nD?\tE, F\tyes\n")
    bundle = _load(path=str(path))
    assert [r.text for r in bundle.responses] == ["B, surely", "E, F"]


def test_a_wrong_delimiter_names_the_one_tried_and_offers_delimiter(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("q;answer;wrong\nA?;B;no\nC?;D;yes;extra\n")
    with pytest.raises(
        InvalidInputError,
        match=r"line 3: .*delimiter tried was ';' \(sniffed from the header.*set delimiter=",
    ):
        _load(path=str(path))
    with pytest.raises(InvalidInputError, match=r"read as one column.*Set delimiter="):
        _load(path=str(path), delimiter=",")


def test_strata_go_into_a_column_and_samples_into_responses():
    bundle = Files(
        path=str(SHAPES / "phd_samples.json"),
        records="*",
        text="AI",
        label="label",
        positive="non-factual",
        negative="factual",
        samples="samples",
        meta=("domain", "stratum"),
        columns="question:entity",
        constants=("task:open", "model:chatgpt", "split:test"),
        title="phd",
    ).load()
    assert [r.meta["slice"]["stratum"] for r in bundle.responses] == ["phd_low"] * 2 + [
        "phd_high"
    ] * 2
    assert [len(r.samples) for r in bundle.responses] == [2, 2, 3, 2]
    assert bundle.responses[2].samples[1] == "Kel Amberly is a sprinter."
    assert [lab.hallucinated for lab in bundle.labels] == [False, True, True, False]
    assert {r.model for r in bundle.responses} == {"chatgpt"}
    assert {r.meta["split"] for r in bundle.responses} == {"test"}
    assert {e.task for e in bundle.examples} == {"open"}
    assert "stratum" not in bundle.responses[0].meta["extra"]


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ('["a b", "c"]', ("a b", "c")),
        ("first sample\nsecond sample\n", ("first sample", "second sample")),
        ("", ()),
    ],
)
def test_a_sample_cell_is_a_json_list_or_one_sample_per_line(tmp_path, cell, expected):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"text": "an answer", "samples": cell}) + "\n")
    bundle = Files(path=str(path), samples="samples").load()
    assert bundle.responses[0].samples == expected


def test_several_sample_columns_skip_empty_cells(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("text,s1,s2,s3\nanswer,one,,three\n")
    bundle = Files(path=str(path), samples=("s1", "s2", "s3")).load()
    assert bundle.responses[0].samples == ("one", "three")
    assert bundle.responses[0].meta["extra"] == {}


def test_halueval_qa_rows_become_two_responses_with_fixed_labels():
    bundle = datasets.create_from_key(
        f"files[path={SHAPES / 'halueval_qa.jsonl'},"
        "answers=right_answer:faithful+hallucinated_answer:hallucinated,"
        "columns=context:knowledge,constants=task:qa,name=halueval_qa]"
    ).load()
    assert len(bundle.examples) == 3 and len(bundle.responses) == 6
    assert [lab.hallucinated for lab in bundle.labels] == [False, True] * 3
    first, second = bundle.responses[:2]
    assert first.example_id == second.example_id
    assert first.response_id.endswith("/right_answer")
    assert second.response_id.endswith("/hallucinated_answer")
    assert second.text == "The Lirra Bridge crosses the Danube near Vienna."
    assert {e.task for e in bundle.examples} == {"qa"}
    assert bundle.examples[0].context.startswith("The Lirra Bridge")
    assert any("2 responses, one per answer column" in n for n in bundle.notes)


def test_answer_columns_can_share_a_label_column(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("q,a1,a2,verdict\nQ1?,x,y,yes\nQ2?,z,w,no\n")
    bundle = Files(
        path=str(path), answers=("a1", "a2"), label="verdict", columns="question:q"
    ).load()
    assert _summary(bundle) == [("x", True), ("y", True), ("z", False), ("w", False)]


def test_a_model_constant_beats_a_model_column_of_the_same_name(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("text,model,task\nan answer,gpt-x,open\n")
    bundle = Files(path=str(path), constants={"model": "mine", "task": "summary"}).load()
    assert bundle.responses[0].model == "mine"
    assert bundle.examples[0].task == "summary"
    assert bundle.responses[0].meta["extra"] == {"model": "gpt-x", "task": "open"}


def test_a_quoted_path_with_a_comma_loads_end_to_end(tmp_path):
    path = tmp_path / "a,b.csv"
    path.write_text("q,answer,wrong\nA?,B,no\n")
    component = datasets.create_from_key(
        f'files[path="{path}",text=answer,label=wrong,constants="task:qa",name="x,y"]'
    )
    bundle = component.load()
    assert component.path == str(path) and component.run_name == "x,y"
    assert _summary(bundle) == [("B", False)]
    assert bundle.responses[0].response_id.startswith("x,y/")


def test_the_docstring_shows_a_worked_example_of_each_feature():
    doc = Files.__doc__ or ""
    for snippet in (
        "records=data.items",
        "records=*",
        "delimiter=",
        "format=json",
        "constants=task:qa+model:gpt-4",
        "samples=s1+s2+s3",
        "meta=domain+category",
        "--slice-by domain",
        "answers=right_answer:faithful+hallucinated_answer:hallucinated",
        "realitycheck ingest",
    ):
        assert snippet in doc, snippet
    for task in ("qa", "rag_qa", "summary", "data2text", "dialogue", "mcq", "open"):
        assert task in doc
