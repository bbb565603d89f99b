"""Every malformed shape is an InvalidInputError naming the file, line or row, and the field."""

from __future__ import annotations

import json

import pytest

from realitycheck.datasets.files import Files
from realitycheck.errors import InvalidInputError

QA = {"q": "Q?", "a1": "yes", "a2": "no", "verdict": "yes"}


def _jsonl(*rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


CASES = [
    # (file name, content, params, message) -- the message is a regex
    (
        "x.json",
        json.dumps({"data": {"items": [{"text": "a"}]}}),
        {"records": "data.itmes"},
        r"x\.json, field 'records': The records path 'data\.itmes' does not exist: 'data' has "
        r"no key 'itmes'\. Did you mean 'items'\?",
    ),
    (
        "x.json",
        json.dumps({"data": {"n": 3}}),
        {"records": "data.n"},
        r"x\.json, field 'records': The records at 'data\.n' must be a list of objects or an "
        r"object of objects keyed by id\. Got a number instead\.",
    ),
    (
        "x.json",
        json.dumps({"data": {"n": 3}}),
        {"records": "data.n.rows"},
        r"field 'records': The records path 'data\.n\.rows' goes through 'data\.n', which holds "
        r"a number",
    ),
    (
        "x.json",
        json.dumps({"train": [{"text": "a"}], "test": [{"text": "b"}]}),
        {},
        r"x\.json, field 'records': The JSON object holds 2 lists \(train, test\), not one; "
        r"name the list of records with records=KEY",
    ),
    ("x.json", json.dumps("text"), {}, r"x\.json: The file must hold a list of records"),
    (
        "x.json",
        json.dumps([{"text": "a"}, 7]),
        {},
        r"x\.json, line 2: Each record must be an object\. Got a number",
    ),
    (
        "x.json",
        json.dumps({"low": [{"text": "a"}], "high": 3}),
        {"records": "*"},
        r"x\.json, field 'records': The records at 'high' must be a list of objects",
    ),
    (
        "x.json",
        json.dumps({"low": [{"text": "a", "stratum": "s"}]}),
        {"records": "*"},
        r"x\.json, line 1, field 'stratum': The record has its own 'stratum' key",
    ),
    (
        "x.json",
        json.dumps([{"text": "a"}]),
        {"records": "data.*"},
        r"field 'records': The records path 'data\.\*' goes through 'the top level', which "
        r"holds a list",
    ),
    ("x.json", '[{"text": "a"},\n', {}, r"x\.json, line 2: The file must be valid JSON"),
    (
        "x.jsonl",
        _jsonl({"text": "a", "samples": 5}),
        {"samples": "samples"},
        r"x\.jsonl, line 1, field 'samples': The samples cell must be a list of strings.*"
        r"Got int instead",
    ),
    (
        "x.jsonl",
        _jsonl({"text": "a", "samples": "[broken"}),
        {"samples": "samples"},
        r"x\.jsonl, line 1, field 'samples': The samples cell starts with '\[' but is not a "
        r"JSON list",
    ),
    (
        "x.jsonl",
        _jsonl({"text": "a", "samples": ["fine", 3]}),
        {"samples": "samples"},
        r"line 1, field 'samples': Every sample must be non-empty text\. Item 1 is 3\.",
    ),
    (
        "x.csv",
        "text,s1\na,\nb,ok\n",
        {"samples": ("s1", "s2")},
        r"x\.csv, field 's2': The column 's2' \(for sample:s2\) is not in the file\. "
        r"Available: text, s1\.",
    ),
    (
        "x.csv",
        "text,domain\na,bio\n",
        {"meta": ("domian",)},
        r"x\.csv, field 'domian': The column 'domian' \(for meta:domian\) is not in the file\. "
        r"Did you mean 'domain'\?",
    ),
    (
        "x.jsonl",
        _jsonl({"text": "a", "domain": ["bio", "chem"]}),
        {"meta": ("domain",)},
        r"x\.jsonl, line 1, field 'domain': The cell must be text\. Got list instead\.",
    ),
    (
        "x.csv",
        "q,a1,a2\nQ?,yes,\n",
        {"answers": ("a1:faithful", "a2:hallucinated")},
        r"x\.csv, line 2, field 'a2': The response text is empty\.",
    ),
    (
        "x.csv",
        "q,a1,a2\nQ?,yes,no\n",
        {"answers": ("a1", "a2")},
        r"x\.csv, field 'answers': The answers have no label: write column:faithful",
    ),
    (
        "x.csv",
        "q,a1,b2\nQ?,yes,no\n",
        {"answers": ("a1:faithful", "a2:hallucinated")},
        r"x\.csv, field 'a2': The column 'a2' \(for answer:a2\) is not in the file\. "
        r"Available: q, a1, b2\.",
    ),
    (
        "x.csv",
        "q;text;label\nQ?;a;yes\nQ?;b;no;x\n",
        {},
        r"x\.csv, line 3: Each row must have 3 fields like the header\. Got 4 instead\. The "
        r"delimiter tried was ';'",
    ),
    (
        "x.csv",
        "q;text\nQ?;a\n",
        {"delimiter": ","},
        r"field 'text': The file has no 'text' column; name the response column with the "
        r"'text' parameter\. The header was read as one column: does the file use another "
        r"delimiter\? Set delimiter=",
    ),
]

PARAM_CASES = [
    (
        {"constants": "modle:x"},
        r"'constants' parameter.*'modle' is not a constant\. Did you mean 'model'\?",
    ),
    ({"constants": "task:qna"}, r"The task 'qna' is not one of .*Did you mean 'qa'\?"),
    ({"constants": ("task:qa", "task:open")}, r"\['task'\] are set twice\."),
    ({"constants": "model:"}, r"The constant 'model' has an empty value\."),
    ({"constants": "model"}, r"'model' is not name:value"),
    (
        {"answers": ("a1:faithful", "a2")},
        r"'answers' parameter.*\['a2'\] have no label; write column:faithful or "
        r"column:hallucinated for each\.",
    ),
    ({"answers": ("a1:faithfull", "a2:hallucinated")}, r"Did you mean 'faithful'\?"),
    ({"answers": "a1:faithful"}, r"One answer column is the 'text' parameter\."),
    ({"answers": ("a1", "a1")}, r"A column is named twice\."),
    ({"answers": ("a1", "a2"), "text": "a1"}, r"'answers' parameter of files must be empty when"),
    (
        {"answers": ("a1:faithful", "a2:hallucinated"), "label": "verdict"},
        r"'label' parameter of files must be empty when 'answers' fix the labels",
    ),
    ({"records": "data"}, r"'records' parameter of files must be empty unless the format is json"),
    ({"delimiter": ";", "path": "x.jsonl"}, r"'delimiter' parameter of files must be empty unless"),
    ({"delimiter": "::"}, r"'delimiter' parameter of files must be one of"),
    ({"format": "xlsx"}, r"'format' parameter of files must be one of .*'json'"),
    (
        {"path": "x.xlsx"},
        r"'path' parameter of files must be a path ending in one of .*'format' set",
    ),
    (
        {"constants": "model:m", "columns": "model:llm"},
        r"'constants' parameter of files must be fields that 'columns' does not map too",
    ),
]


@pytest.mark.parametrize(("name", "content", "params", "message"), CASES)
def test_malformed_data_names_file_line_and_field(tmp_path, name, content, params, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        Files(path=str(path), **params).load()


@pytest.mark.parametrize(("params", "message"), PARAM_CASES)
def test_malformed_shape_parameters_fail_before_reading(params, message):
    with pytest.raises(InvalidInputError, match=message):
        Files(**{"path": "x.csv", **params})


def test_there_are_at_least_fifteen_malformed_cases():
    assert len(CASES) + len(PARAM_CASES) >= 30
