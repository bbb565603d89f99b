"""JSON objects keyed by id (MIND's HELM files) and dotted text columns in the ``files`` dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realitycheck.cli import main
from realitycheck.datasets.files import Files
from realitycheck.errors import InvalidInputError

# The shape of MIND's HELM files (oneal2000/MIND, helm/data/<model>/data.json):
# an object keyed by prompt id; each value holds the generated passage split
# into sentences with a human label each (1 = hallucinated) and the prompt.
HELM = {
    "opt7b": {
        "428": {
            "sentences": [
                {
                    "sentence": "It was the first studio in the world to use a microphone.",
                    "label": 1,
                },
                {"sentence": "The studio was located in Kensington, Liverpool.", "label": 0},
            ],
            "prompt": "This is a Wikipedia passage about Phillips' Sound Recording Services.",
        },
        "432": {
            "sentences": [
                {
                    "sentence": "The Left Hand of Darkness is a novel by Ursula K. Le Guin.",
                    "label": 0,
                }
            ],
            "prompt": "This is a Wikipedia passage about The Left Hand of Darkness.",
        },
    },
    "falcon40b": {
        "432": {
            "sentences": [
                {"sentence": "It is a novel published in 1969.", "label": 0},
                # a generation that ran on, as some do in the real files
                {
                    "sentence": "It won the Hugo Award.\nlable: 1\n\nIt was filmed in 1970.",
                    "label": 1,
                },
            ],
            "prompt": "This is a Wikipedia passage about The Left Hand of Darkness.",
        },
        "428": {
            "sentences": [{"sentence": "It was a studio in Liverpool.", "label": 0}],
            "prompt": "This is a Wikipedia passage about Phillips' Sound Recording Services.",
        },
    },
}
HELM_KEY = dict(
    path="helm/data/{model}/data.json",
    text="sentences.sentence",
    sentences=("sentences.label",),
    columns=("example_id:id", "question:prompt"),
)


def _helm(root: Path) -> Path:
    for model, data in HELM.items():
        path = root / "helm" / "data" / model / "data.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(data, indent=4), encoding="utf-8")
    return root


def test_helm_files_load_keyed_by_prompt_id_one_folder_per_model(tmp_path):
    bundle = Files(**HELM_KEY, data_dir=_helm(tmp_path)).load()
    # one example per prompt id, answered by both models
    assert sorted(e.example_id.split("/")[-1] for e in bundle.examples) == ["428", "432"]
    assert {e.question for e in bundle.examples} == {d["prompt"] for d in HELM["opt7b"].values()}
    got = {(r.model, r.example_id.split("/")[-1]): r for r in bundle.responses}
    assert sorted(got) == [
        ("falcon40b", "428"),
        ("falcon40b", "432"),
        ("opt7b", "428"),
        ("opt7b", "432"),
    ]
    for (model, key), response in got.items():
        sentences = HELM[model][key]["sentences"]
        assert response.text == " ".join(s["sentence"].strip() for s in sentences)
    human = {lab.response_id: lab.hallucinated for lab in bundle.labels if lab.labeler == "human"}
    expected = {
        (model, key): any(s["label"] == 1 for s in data["sentences"])  # strictest sentence rule
        for model, by_id in HELM.items()
        for key, data in by_id.items()
    }
    assert {k: human[r.response_id] for k, r in got.items()} == expected
    # records are numbered in file order, so an error's line is the key's position
    assert [r.meta["line"] for r in bundle.responses if r.model == "falcon40b"] == [1, 2]


def test_a_keyed_object_puts_its_keys_in_the_key_column_it_is_told(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"a1": {"text": "x"}, "a2": {"text": "y", "rid": "a2"}}))
    bundle = Files(path=str(path), key_column="rid", columns=("response_id:rid",)).load()
    assert [r.response_id.split("/")[-1] for r in bundle.responses] == ["a1", "a2"]
    assert [r.meta["extra"] for r in bundle.responses] == [{}, {}]


def test_a_keyed_object_of_strata_loads_with_records_star(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"low": {"a": {"text": "x"}}, "high": [{"text": "y"}]}))
    bundle = Files(path=str(path), records="*", meta=("stratum",)).load()
    assert [r.meta["slice"] for r in bundle.responses] == [{"stratum": "low"}, {"stratum": "high"}]
    assert [r.meta["extra"] for r in bundle.responses] == [{"id": "a"}, {}]


@pytest.mark.parametrize(
    ("content", "params", "match"),
    [
        (
            {"a1": {"text": "x", "id": "b7"}},
            {},
            r"k\.json, line 1, field 'id': The record's own 'id' is 'b7' but its key in the "
            r"object is 'a1'; .*Set key_column= to another name",
        ),
        (
            {"a1": {"text": "x"}, "n": 3},
            {},
            r"k\.json, field 'records': The JSON object holds no list and is not an object of "
            r"records keyed by id \(its values are a number and an object\)",
        ),
        (
            {"data": {"a1": {"text": "x"}, "a2": "y"}},
            {"records": "data"},
            r"field 'records': The records at 'data' must be a list of objects or an object of "
            r"objects keyed by id\. Got an object \(its values are a string and an object\)",
        ),
        (
            {"a1": {"txt": "x"}},
            {},
            r"k\.json, field 'text': The file has no 'text' column.*Available: id, txt",
        ),
    ],
)
def test_bad_keyed_objects_name_file_line_and_field(tmp_path, content, params, match):
    path = tmp_path / "k.json"
    path.write_text(json.dumps(content))
    with pytest.raises(InvalidInputError, match=match):
        Files(path=str(path), **params).load()


def test_a_bad_keyed_object_fails_on_the_command_line_without_traceback(tmp_path, capsys):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"a1": {"text": "x", "id": "b7"}}))
    code = main(["-q", "ingest", "-d", f"files[path={path}]", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and "line 1, field 'id'" in err


@pytest.mark.parametrize(
    ("cell", "match"),
    [
        (
            "nope",
            r"line 1, field 'sentences\.sentence': The cell must be a list of objects with "
            r"the key 'sentence'\. Got str instead\.",
        ),
        (
            [{"sentence": "a"}, {"label": 1}],
            r"line 1, field 'sentences\.sentence': Item 1 of the "
            r"list must be an object with the key 'sentence'",
        ),
        (
            [{"sentence": 3}],
            r"line 1, field 'sentences\.sentence': Every item must be text\. "
            r"Item 0 is 3\.",
        ),
    ],
)
def test_a_bad_dotted_text_cell_names_the_line_and_the_item(tmp_path, cell, match):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"sentences": cell}) + "\n")
    with pytest.raises(InvalidInputError, match=match):
        Files(path=str(path), text="sentences.sentence").load()
