"""`mcq_file`: a user's own multiple-choice set from a table file."""

from __future__ import annotations

import json

import pytest

from realitycheck.datasets import datasets
from realitycheck.errors import InvalidInputError

CSV = """id,prompt,options,answer,topic
q1,The capital of Italy is,Rome;Oslo;Lima,Rome,geo
q2,Two plus two is,three;four,1,maths
"""


def test_a_csv_with_named_columns_and_gold_by_text_or_index(tmp_path):
    path = tmp_path / "quiz.csv"
    path.write_text(CSV, encoding="utf-8")
    ds = datasets.create(
        "mcq_file", path=str(path), question="prompt", choices="options", gold="answer"
    )
    bundle = ds.load()
    first, second = bundle.examples
    assert (first.example_id, first.dataset, ds.run_name) == ("quiz/q1", "quiz", "quiz")
    assert first.choices == ("Rome", "Oslo", "Lima") and first.meta["gold"] == [0]
    assert second.meta["gold"] == [1] and second.references == ("four",)
    assert first.meta["topic"] == "geo" and first.task == "mcq"


def test_jsonl_lists_and_several_true_options(tmp_path):
    path = tmp_path / "own.jsonl"
    row = {"question": "Which are prime?", "choices": ["2", "4", "5"], "gold": [0, 2]}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (e,) = datasets.create("mcq_file", path=str(path), name_as="primes").load().examples
    assert e.example_id == "primes/1" and e.meta["gold"] == [0, 2]


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ("q3,Pick,only,only,x\n", r"quiz\.csv, line 4, field 'choices'.*at least two"),
        ("q3,Pick,a;b,7,x\n", r"quiz\.csv, line 4, field 'gold'.*among the 2 options"),
        ("q3,Pick,a;b,c,x\n", r"line 4, field 'answer'.*neither an option index"),
    ],
)
def test_a_bad_row_is_named(tmp_path, row, match):
    path = tmp_path / "quiz.csv"
    path.write_text(CSV + row, encoding="utf-8")
    ds = datasets.create(
        "mcq_file", path=str(path), question="prompt", choices="options", gold="answer"
    )
    with pytest.raises(InvalidInputError, match=match):
        ds.load()


def test_a_missing_column_is_named(tmp_path):
    path = tmp_path / "quiz.csv"
    path.write_text(CSV, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"field 'question'.*lacks the column"):
        datasets.create("mcq_file", path=str(path)).load()
