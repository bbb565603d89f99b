"""The columnar load path (``Dataset.load_tables``) against the record path (``Dataset.load``).

Every registered dataset with local data and its own ``load_tables`` must give, through it,
the tables its records give through ``records_table``, row for row; a run
loaded by ``ingest`` must hold those tables. The record path is the reference.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest
from tests.conftest import DATA_DIR

from realitycheck.datasets import Dataset, TableBundle, datasets
from realitycheck.datasets._arrow_jsonl import read_jsonl_table
from realitycheck.datasets._io import read_jsonl
from realitycheck.datasets._table_bundle import columns_table
from realitycheck.datasets.truthfulqa import TruthfulQA
from realitycheck.errors import DataNotFoundError, InvalidInputError
from realitycheck.pipeline import ingest
from realitycheck.records import Label, Response
from realitycheck.store import RunStore, records_table


def _local_names() -> list[str]:
    """The registered datasets that read local files and find them in the shared data folder.

    The others need a user's file or come from the Hugging Face Hub; the
    count is checked below, so a dataset that stops finding its files fails.
    """
    names = []
    for name in datasets.names():
        try:
            component = datasets.create(name, data_dir=DATA_DIR)
        except InvalidInputError:
            continue  # needs parameters (a file of the user's)
        if not component.files:
            continue  # from the Hugging Face Hub
        try:
            component.sources()
        except DataNotFoundError:
            continue
        names.append(name)
    return names


LOCAL = _local_names()
# Those with their own columnar loader: for the others load_tables() is
# TableBundle.of(load()), the very reference it would be compared with.
OWN = [n for n in LOCAL if type(datasets.create(n)).load_tables is not Dataset.load_tables]


def test_every_dataset_with_shared_files_is_compared():
    assert len(LOCAL) >= 9, LOCAL
    assert {"truthfulqa", "ragtruth", "faithbench", "halueval_general"} <= set(LOCAL)
    assert "truthfulqa" in OWN


def _assert_same(got: TableBundle, expected: TableBundle) -> None:
    for name, table in expected.tables().items():
        other = got.tables()[name]
        assert other.schema == table.schema, name
        assert other.num_rows == table.num_rows, name
        for column in table.column_names:
            assert other.column(column).equals(table.column(column)), (name, column)
    assert got.notes == expected.notes


@pytest.mark.parametrize("name", OWN)
def test_load_tables_equals_the_record_path(name):
    component = datasets.create(name, data_dir=DATA_DIR)
    _assert_same(component.load_tables(), TableBundle.of(component.load()))


def test_ingest_stores_the_record_path_tables(tmp_path, data_dir):
    component = TruthfulQA(data_dir=data_dir)
    store = RunStore(tmp_path / "run")
    ingest(store, component)
    bundle = component.load()
    source = json.loads(store.arrow("examples").column("meta")[0].as_py())["source_sha256"]
    examples = [
        dataclasses.replace(e, meta={**e.meta, "source_sha256": source}) for e in bundle.examples
    ]
    assert len(source) == 64
    assert store.arrow("examples").equals(records_table(examples))
    assert store.arrow("responses").equals(records_table(bundle.responses))
    assert store.arrow("labels").equals(records_table(bundle.labels))
    entry = store.read_manifest()["datasets"]["truthfulqa"]
    assert (entry["responses"], entry["labels"], entry["scores"]) == (22434, 22434, 0)


@pytest.fixture
def tqa_copy(tmp_path, data_dir):
    shutil.copytree(data_dir / "truthfulqa", tmp_path / "truthfulqa")
    return tmp_path


def _edit(path, index, text):
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[index] = text
    path.write_text("\n".join(lines), encoding="utf-8")


def test_blank_lines_keep_their_line_numbers(tqa_copy):
    path = tqa_copy / "truthfulqa" / "finetune_truth.jsonl"
    lines = path.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join([lines[0], "", *lines[1:]]), encoding="utf-8")
    component = TruthfulQA(data_dir=tqa_copy)
    got = component.load_tables()
    _assert_same(got, TableBundle.of(component.load()))
    assert got.responses.column("response_id")[1].as_py().endswith("/3")


def test_a_bad_prompt_is_named_on_the_columnar_path(tqa_copy):
    path = tqa_copy / "truthfulqa" / "finetune_truth.jsonl"
    _edit(path, 6, '{"prompt": "What is this?", "completion": " yes"}')
    with pytest.raises(InvalidInputError, match=r"finetune_truth\.jsonl, line 7, field 'prompt'"):
        TruthfulQA(data_dir=tqa_copy).load_tables()


def test_a_bad_vote_is_named_on_the_columnar_path(tqa_copy):
    path = tqa_copy / "truthfulqa" / "finetune_info.jsonl"
    line = path.read_text(encoding="utf-8").split("\n")[2]
    _edit(path, 2, line.replace('"completion": " yes"', '"completion": " maybe"'))
    with pytest.raises(
        InvalidInputError, match=r"finetune_info\.jsonl, line 3, field 'completion'"
    ):
        TruthfulQA(data_dir=tqa_copy).load_tables()


def test_unmatched_error_is_named_on_the_columnar_path(data_dir):
    with pytest.raises(InvalidInputError, match=r"finetune_truth\.jsonl, line \d+, field 'prompt'"):
        TruthfulQA(data_dir=data_dir, unmatched="error").load_tables()


def test_prompts_that_only_almost_parse(tqa_copy):
    """Answers holding ``\\nA: `` or the suffix, and an empty answer, split as the regex does."""
    path = tqa_copy / "truthfulqa" / "finetune_truth.jsonl"
    tricky = [
        "Q: Is water wet?\nA: Yes.\nA: No.\nTrue:",
        "Q: Is water wet?\nA: \nTrue:",
        "Q: Is water wet?\nA: It is.\nTrue:\nTrue:",
        "Q: Is water wet?\nA: \nA: \nTrue:",
    ]
    for k, prompt in enumerate(tricky):
        _edit(path, 10 + k, json.dumps({"prompt": prompt, "completion": " no"}))
    component = TruthfulQA(data_dir=tqa_copy)
    got = component.load_tables()
    _assert_same(got, TableBundle.of(component.load()))
    texts = got.responses.column("text").to_pylist()[10:14]
    assert texts == ["Yes.\nA: No.", "", "It is.\nTrue:", "\nA: "]


def test_read_jsonl_table_matches_read_jsonl(tmp_path):
    path = tmp_path / "x.jsonl"
    rows = [{"a": "é\n", "b": "x", "c": [1]}, {"b": "y", "a": "z"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    table = read_jsonl_table(path, ["a", "b"])
    assert table is not None
    assert table.to_pylist() == [{"a": o["a"], "b": o["b"]} for _, o in read_jsonl(path)]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "x"}\n\n{"a": "y"}\n',  # a blank line: row numbers would shift
        '{"a": "x"}\n{"b": "y"}\n',  # a field missing
        '{"a": "x"}\n{"a": 3}\n',  # not a string
        '{"a": "x"}\n{"a": null}\n',  # null
        '{"a": "x", "a": "y"}\n',  # a key repeated (json.loads keeps the last)
        '{"a": "x"}\n["a"]\n',  # not an object
        '{"a": "x"}\n{"a": \n',  # not JSON
        '\ufeff{"a": "x"}\n',  # a byte-order mark (json.loads refuses it)
        '{"a": "x"} {"a": "y"}\n{"a": "z"}\n \n',  # two objects on a line, a blank line
        '{"a": "x"}\n  {"a": "y"}\n',  # a line opening with spaces (read line by line)
    ],
)
def test_read_jsonl_table_declines_files_that_are_not_plain(tmp_path, text):
    path = tmp_path / "x.jsonl"
    path.write_text(text, encoding="utf-8")
    assert read_jsonl_table(path, ["a"]) is None


def test_read_jsonl_table_declines_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": "x", "b": "\xff"}\n')  # in a field Arrow's parser skips
    assert read_jsonl_table(path, ["a"]) is None


def test_columns_table_equals_records_table():
    metas = [{}, {"b": [1, 2.5], "a": {"z": None, "y": True}}, {"line": 3, "x": "é"}]
    columns = {
        "response_id": ["r1", "r2", "r3"],
        "example_id": ["e1", "e1", "e2"],
        "model": ["m", "m", "n"],
        "text": ["one", "", "three"],
        "meta": metas,
        "samples": [(), ("s",), ("s", "t")],
    }
    records = [
        Response(**dict(zip(columns, row, strict=True)))
        for row in zip(*columns.values(), strict=True)
    ]
    assert columns_table(Response, columns).equals(records_table(records))
    labels = {"response_id": ["r1", "r2"], "labeler": ["human"] * 2, "hallucinated": [True, None]}
    arrow = {**labels, "response_id": pa.array(labels["response_id"])}
    expected = records_table(
        [Label(**dict(zip(labels, r, strict=True))) for r in zip(*labels.values(), strict=True)]
    )
    assert columns_table(Label, labels).equals(expected)
    assert columns_table(Label, arrow).equals(expected)


def test_columns_table_rejects_unknown_or_ragged_columns():
    with pytest.raises(ValueError, match="unknown"):
        columns_table(Label, {"response_id": ["r"], "labeler": ["h"], "verdict": [True]})
    with pytest.raises(ValueError, match="lengths"):
        columns_table(Label, {"response_id": ["r", "s"], "labeler": ["h"]})
    with pytest.raises(TypeError, match="not a bool"):
        columns_table(Label, {"response_id": ["r"], "labeler": ["h"], "hallucinated": ["yes"]})


def test_loading_truthfulqa_into_a_run_does_not_import_pandas_or_acero(tmp_path, data_dir):
    # Either import alone costs more than the whole columnar load (0.3-0.6 s).
    code = f"""
import sys
from realitycheck import RunStore
from realitycheck.datasets.truthfulqa import TruthfulQA
from realitycheck.pipeline import ingest
ingest(RunStore({str(tmp_path / "run")!r}), TruthfulQA(data_dir={str(data_dir)!r}))
print(*(m in sys.modules for m in ("pandas", "pyarrow.acero")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
