"""Hub MCQ sets read from small local files in the Hub datasets' own row formats (made up here)."""

from __future__ import annotations

import json

import pytest

from realitycheck.datasets import datasets
from realitycheck.errors import InvalidInputError, MissingDependencyError


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _load(name, path, **params):
    return datasets.create(name, path=str(path), **params).load()


def test_commonsense_qa_maps_the_answer_key_to_its_option(tmp_path):
    rows = [
        {
            "id": "q1",
            "question": "Where would you keep milk cold?",
            "question_concept": "milk",
            "choices": {
                "label": ["A", "B", "C", "D", "E"],
                "text": ["oven", "fridge", "shelf", "car", "desk"],
            },
            "answerKey": "B",
        },  # fmt: skip
    ]
    bundle = _load("commonsense_qa", _jsonl(tmp_path / "validation.jsonl", rows))
    (e,) = bundle.examples
    assert e.example_id == "commonsense_qa/q1" and e.task == "mcq"
    assert e.choices == ("oven", "fridge", "shelf", "car", "desk") and e.meta["gold"] == [1]
    assert e.references == ("fridge",)
    rows[0]["answerKey"] = "F"
    with pytest.raises(InvalidInputError, match=r"validation\.jsonl, line 1, field 'answerKey'"):
        _load("commonsense_qa", _jsonl(tmp_path / "validation.jsonl", rows))


def test_a_json_list_row_that_is_no_object_is_named(tmp_path):
    path = tmp_path / "validation.json"
    path.write_text(json.dumps(["row one", {"id": "q2"}]), encoding="utf-8")
    with pytest.raises(
        InvalidInputError, match=r"validation\.json, line 1: Each row must be an object\. Got str"
    ):
        _load("commonsense_qa", path)


def test_fever_asks_each_claim_once_and_leaves_out_unverifiable_ones(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {"id": 7, "label": "SUPPORTS", "claim": "Paris is in France.", "evidence_id": 1},
        {"id": 7, "label": "SUPPORTS", "claim": "Paris is in France.", "evidence_id": 2},
        {"id": 8, "label": "REFUTES", "claim": "The Moon is a planet.", "evidence_id": 3},
        {"id": 9, "label": "NOT ENOUGH INFO", "claim": "Zed likes tea.", "evidence_id": -1},
    ]
    path = tmp_path / "labelled_dev-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    bundle = _load("fever_mc", tmp_path)  # a folder: the files of the split
    assert [e.example_id for e in bundle.examples] == ["fever_mc/7", "fever_mc/8"]
    assert [e.meta["gold"] for e in bundle.examples] == [[0], [1]]
    assert bundle.examples[1].choices == ("true", "false")
    assert bundle.examples[1].question == "Claim: The Moon is a planet.\nThis claim is"
    assert any("2 row(s) left out" in n for n in bundle.notes)
    rows[0]["label"] = "MAYBE"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(InvalidInputError, match=r"line 1, field 'label'"):
        _load("fever_mc", tmp_path)


def test_true_false_reads_label_one_as_true(tmp_path):
    rows = [
        {"claim": "Water boils at 100 C at sea level.", "label": 1, "dataset": "elements",
         "qa_type": 0, "ind": 0},
        {"claim": "Lions are plants.", "label": 0, "dataset": "animals", "qa_type": 0, "ind": 1},
    ]  # fmt: skip
    bundle = _load("true_false", _jsonl(tmp_path / "train.jsonl", rows))
    assert [e.meta["gold"] for e in bundle.examples] == [[0], [1]]
    assert [e.references for e in bundle.examples] == [("true",), ("false",)]
    assert bundle.examples[1].meta["topic"] == "animals"
    rows[1]["label"] = 2
    with pytest.raises(InvalidInputError, match=r"train\.jsonl, line 2, field 'label'"):
        _load("true_false", _jsonl(tmp_path / "train.jsonl", rows))


def test_medhalt_fct_reads_options_as_text_or_object(tmp_path):
    options = {"0": "Aspirin", "1": "Insulin", "2": "Heparin", "3": "Warfarin",
               "correct answer": "Insulin"}  # fmt: skip
    rows = [
        {"id": "a1", "question": "Which treats type 1 diabetes?", "options": str(options),
         "correct_answer": "Insulin", "correct_index": 1, "student_answer": "Aspirin"},
        {"id": "a2", "question": "Which is an anticoagulant?", "options": options,
         "correct_answer": "Heparin", "correct_index": "2", "student_answer": "Heparin"},
    ]  # fmt: skip
    bundle = _load("medhalt_fct", _jsonl(tmp_path / "train.jsonl", rows))
    first, second = bundle.examples
    assert first.choices == ("Aspirin", "Insulin", "Heparin", "Warfarin") == second.choices
    assert (first.meta["gold"], second.meta["gold"]) == ([1], [2])
    assert first.meta["student_answer"] == "Aspirin"
    rows[0]["correct_index"] = 4
    with pytest.raises(InvalidInputError, match=r"train\.jsonl, line 1, field 'gold'"):
        _load("medhalt_fct", _jsonl(tmp_path / "train.jsonl", rows))
    rows[0]["options"] = {"0": "only one"}
    with pytest.raises(InvalidInputError, match=r"line 1, field 'choices'.*at least two"):
        _load("medhalt_fct", _jsonl(tmp_path / "train.jsonl", rows))


def test_without_a_path_the_hub_is_asked_through_datasets(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"realitycheck\[generation\]"):
        datasets.create("commonsense_qa").load()
