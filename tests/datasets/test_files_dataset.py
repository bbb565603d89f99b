import csv
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from realitycheck.datasets import datasets
from realitycheck.datasets.files import Files
from realitycheck.errors import DataNotFoundError, InvalidInputError

ROWS = [
    {
        "qid": "q1",
        "prompt": "Capital of France?",
        "passage": "Paris is the capital.",
        "gold": "Paris;City of Paris",
        "llm": "m1",
        "answer": "Paris",
        "is_wrong": "no",
        "hhem": 0.9,
        "risk": 0.1,
        "note": "a",
    },
    {
        "qid": "q1",
        "prompt": "Capital of France?",
        "passage": "Paris is the capital.",
        "gold": "Paris;City of Paris",
        "llm": "m2",
        "answer": "Lyon",
        "is_wrong": "YES",
        "hhem": 0.2,
        "risk": 0.7,
        "note": "b",
    },
    {
        "qid": "q2",
        "prompt": "2+2?",
        "passage": "",
        "gold": "4",
        "llm": "m1",
        "answer": "4",
        "is_wrong": "",
        "hhem": None,
        "risk": 0.3,
        "note": "c",
    },
]
HEADER = list(ROWS[0])


def _write(path: Path, rows=ROWS) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=HEADER)
            writer.writeheader()
            writer.writerows([{k: "" if v is None else v for k, v in r.items()} for r in rows])
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _files(path: Path, **extra) -> Files:
    params = {
        "path": str(path),
        "title": "mine",
        "text": "answer",
        "label": "is_wrong",
        "scores": ("hhem", "risk"),
        "flip": ("hhem",),
        "columns": {
            "example_id": "qid",
            "question": "prompt",
            "context": "passage",
            "references": "gold",
            "model": "llm",
        },
    }
    return Files(**{**params, **extra})


def _summary(bundle):
    return (
        [(e.example_id, e.question, e.context, e.references, e.task) for e in bundle.examples],
        [(r.response_id, r.example_id, r.model, r.text, r.meta["extra"]) for r in bundle.responses],
        [(lab.response_id, lab.hallucinated, lab.error) for lab in bundle.labels],
        [
            (s.response_id, s.detector, None if s.value is None else round(s.value, 9), s.error)
            for s in bundle.scores
        ],
    )


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_three_formats_give_the_same_records(tmp_path, suffix):
    bundle = _files(_write(tmp_path / f"mine{suffix}")).load()
    examples, responses, labels, scores = _summary(bundle)
    assert examples == [
        (
            "mine/q1",
            "Capital of France?",
            "Paris is the capital.",
            ("Paris", "City of Paris"),
            "open",
        ),
        ("mine/q2", "2+2?", "", ("4",), "open"),
    ]
    assert [r[:4] for r in responses] == [
        ("mine/q1/m1", "mine/q1", "m1", "Paris"),
        ("mine/q1/m2", "mine/q1", "m2", "Lyon"),
        ("mine/q2/m1", "mine/q2", "m1", "4"),
    ]
    assert responses[0][4] == {"note": "a"}
    assert labels == [
        ("mine/q1/m1", False, ""),
        ("mine/q1/m2", True, ""),
        ("mine/q2/m1", None, "empty label cell"),
    ]
    assert scores == [
        ("mine/q1/m1", "recorded:hhem", 0.1, ""),
        ("mine/q1/m1", "recorded:risk", 0.1, ""),
        ("mine/q1/m2", "recorded:hhem", 0.8, ""),
        ("mine/q1/m2", "recorded:risk", 0.7, ""),
        ("mine/q2/m1", "recorded:hhem", None, "empty score cell"),
        ("mine/q2/m1", "recorded:risk", 0.3, ""),
    ]


def test_built_from_a_key_with_conventional_columns(tmp_path):
    rows = [
        {"question": "Q?", "text": "A.", "label": 1, "model": "x"},
        {"question": "Q?", "text": "B.", "label": 0, "model": "x"},
        {"question": "R?", "text": "C.", "label": True, "model": "x"},
    ]
    path = _write(tmp_path / "own.jsonl", rows)
    ds = datasets.create_from_key(f"files[path={path},positive=1+true,negative=0+false,name=own]")
    assert ds.positive == ("1", "true")
    assert ds.run_name == "own"
    bundle = ds.load()
    assert [lab.hallucinated for lab in bundle.labels] == [True, False, True]
    qh, rh = (hashlib.sha256(json.dumps([t, ""]).encode()).hexdigest()[:12] for t in ("Q?", "R?"))
    assert [r.response_id for r in bundle.responses] == [
        f"own/{qh}/x",
        f"own/{qh}/x#2",
        f"own/{rh}/x",
    ]
    assert {e.dataset for e in bundle.examples} == {"own"}
    assert datasets.create_from_key(ds.key).params() == ds.params()


def test_columns_from_a_key_and_from_a_table_agree(tmp_path):
    path = _write(tmp_path / "mine.csv")
    from_key = datasets.create_from_key(
        f"files[path={path},text=answer,label=is_wrong,columns=question:prompt+model:llm]"
    )
    from_table = datasets.create(
        "files",
        path=str(path),
        text="answer",
        label="is_wrong",
        columns={"model": "llm", "question": "prompt"},
    )
    assert from_key.columns == from_table.columns == ("question:prompt", "model:llm")
    assert _summary(from_key.load()) == _summary(from_table.load())


def test_relative_path_is_read_under_data_dir(tmp_path):
    _write(tmp_path / "mine.jsonl")
    bundle = _files(Path("mine.jsonl"), data_dir=tmp_path).load()
    assert len(bundle.responses) == 3


def test_missing_column_lists_the_available_ones(tmp_path):
    path = _write(tmp_path / "mine.csv")
    with pytest.raises(
        InvalidInputError,
        match=r"mine\.csv, field 'anser'.*Did you mean 'answer'\?"
        r" Available: qid, prompt",
    ):
        _files(path, text="anser").load()


def test_missing_text_column(tmp_path):
    path = _write(tmp_path / "mine.jsonl")
    with pytest.raises(InvalidInputError, match="no 'text' column"):
        Files(path=str(path)).load()


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_label_neither_positive_nor_negative(tmp_path, suffix):
    rows = [dict(r) for r in ROWS]
    rows[1]["is_wrong"] = "maybe"
    path = _write(tmp_path / f"mine{suffix}", rows)
    line = 2 if suffix == ".parquet" else 3 if suffix == ".csv" else 2
    with pytest.raises(
        InvalidInputError, match=rf"mine\{suffix}, line {line}, field 'is_wrong': The label 'maybe'"
    ):
        _files(path).load()


def test_empty_text(tmp_path):
    rows = [dict(r) for r in ROWS]
    rows[2]["answer"] = "  "
    path = _write(tmp_path / "mine.csv", rows)
    with pytest.raises(
        InvalidInputError, match=r"line 4, field 'answer': The response text is empty"
    ):
        _files(path).load()


def test_duplicate_response_ids_name_both_lines(tmp_path):
    rows = [dict(r, rid=f"r{i}") for i, r in enumerate(ROWS)]
    rows[2]["rid"] = "r0"
    path = _write(tmp_path / "mine.jsonl", rows)
    with pytest.raises(InvalidInputError, match=r"line 3, field 'rid': .*'r0' repeats .* line 1"):
        _files(path, columns={"response_id": "rid"}).load()


def test_example_id_with_two_questions(tmp_path):
    rows = [dict(r) for r in ROWS]
    rows[1]["prompt"] = "Another?"
    path = _write(tmp_path / "mine.jsonl", rows)
    with pytest.raises(InvalidInputError, match=r"line 2, field 'qid': .*'mine/q1'.* line 1"):
        _files(path).load()


def test_non_numeric_score(tmp_path):
    rows = [dict(r) for r in ROWS]
    rows[0]["risk"] = "high"
    path = _write(tmp_path / "mine.jsonl", rows)
    with pytest.raises(InvalidInputError, match=r"line 1, field 'risk': The score must be"):
        _files(path).load()


def test_bad_json_line(tmp_path):
    path = _write(tmp_path / "mine.jsonl")
    text = path.read_text().split("\n")
    text[1] = text[1][:-1]
    path.write_text("\n".join(text))
    with pytest.raises(InvalidInputError, match=r"mine\.jsonl, line 2: .*invalid JSON"):
        _files(path).load()


def test_missing_file(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        Files(path=str(tmp_path / "nope.csv")).load()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"path": ""}, "'path' parameter"),
        ({"path": "x.xlsx"}, "'path' parameter of files must be a path ending in one of"),
        (
            {"path": "x.csv", "positive": ("yes",), "negative": ("YES",)},
            r"'negative' parameter of files must be values other than those of 'positive'. "
            r"Got \('yes',\) instead. \['yes'\] are in both.",
        ),
        ({"path": "x.csv", "scores": ("a",), "flip": ("b",)}, "'flip' parameter"),
        ({"path": "x.csv", "columns": ("question",)}, "field:column"),
        ({"path": "x.csv", "columns": {"questoin": "q"}}, "Did you mean 'question' for 'questoin'"),
        ({"path": "x.csv", "columns": {"text": "q"}}, "own parameters"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(InvalidInputError, match=match):
        datasets.create("files", **params)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_two_columns_with_one_name_are_refused(tmp_path, suffix):
    path = tmp_path / f"dup{suffix}"
    if suffix == ".csv":
        path.write_text("q,answer,answer\nQ?,a,b\n")
    else:
        table = pa.Table.from_arrays(
            [pa.array(["Q?"]), pa.array(["a"]), pa.array(["b"])], ["q", "answer", "answer"]
        )
        pq.write_table(table, path)
    with pytest.raises(
        InvalidInputError,
        match=r"field 'answer': The header has two columns named 'answer' \(columns 2 and 3\)",
    ):
        Files(path=str(path), text="answer").load()


def test_a_header_only_file_is_an_error(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("question,text\n")
    with pytest.raises(
        InvalidInputError, match=r"empty.csv: The file has a header \(question, text\) but no rows"
    ):
        Files(path=str(path)).load()
