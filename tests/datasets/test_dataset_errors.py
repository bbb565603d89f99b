import json
import shutil

import pytest

from realitycheck.datasets import datasets
from realitycheck.datasets._base import DATA_ENV
from realitycheck.errors import DataNotFoundError, InvalidInputError


def _copy(data_dir, tmp_path, name):
    for rel in datasets.get(name).files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / rel, tmp_path / rel)
    return tmp_path


def _edit_line(path, index, edit):
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[index] = edit(lines[index])
    path.write_text("\n".join(lines), encoding="utf-8")


def _drop_key(key, inner=None):
    def edit(line):
        obj = json.loads(line)
        target = obj if inner is None else inner(obj)
        del target[key]
        return json.dumps(obj)

    return edit


def _set_key(key, value):
    def edit(line):
        obj = json.loads(line)
        obj[key] = value
        return json.dumps(obj)

    return edit


def _set_item(key, value, inner):
    def edit(line):
        obj = json.loads(line)
        inner(obj)[key] = value
        return json.dumps(obj)

    return edit


@pytest.mark.parametrize(
    ("name", "rel", "index", "edit", "match"),
    [
        (
            "ragtruth",
            "ragtruth/qa.jsonl",
            4,
            lambda s: s[:-5],
            r"ragtruth/qa\.jsonl, line 5: Each line must be a JSON object",
        ),
        (
            "ragtruth",
            "ragtruth/summary.jsonl",
            9,
            _drop_key("model", lambda o: o["responses"][2]),
            r"summary\.jsonl, line 10, field 'responses\[2\]\.model': The field is missing",
        ),
        (
            "ragtruth",
            "ragtruth/data2txt.jsonl",
            0,
            _set_key("responses", "none"),
            r"data2txt\.jsonl, line 1, field 'responses': The field must be a list\. Got str",
        ),
        (
            "ragtruth",
            "ragtruth/qa.jsonl",
            2,
            _drop_key(
                "label_type", lambda o: next(r for r in o["responses"] if r["labels"])["labels"][0]
            ),
            r"qa\.jsonl, line 3, field 'responses\[\d\]\.labels\[0\]\.label_type'",
        ),
        (
            "ragtruth",
            "ragtruth/summary.jsonl",
            9,
            _set_item(1, "text", lambda o: o["responses"]),
            r"summary\.jsonl, line 10, field 'responses\[1\]': Each response must be an object\. "
            "Got str instead",
        ),
        (
            "ragtruth",
            "ragtruth/qa.jsonl",
            2,
            _set_item(0, 7, lambda o: next(r for r in o["responses"] if r["labels"])["labels"]),
            r"qa\.jsonl, line 3, field 'responses\[\d\]\.labels\[0\]': Each span must be an "
            r"object\. Got int instead",
        ),
        (
            "halueval-general",
            "halueval/general_data.json",
            99,
            _set_key("hallucination", "maybe"),
            r"general_data\.json, line 100, field 'hallucination': The label must be 'yes' or 'no'",
        ),
        (
            "halueval-general",
            "halueval/general_data.json",
            7,
            _set_key("chatgpt_response", 3),
            r"general_data\.json, line 8, field 'chatgpt_response': The field must be a string",
        ),
        (
            "nq-open",
            "nq_open/NQ-open.dev.jsonl",
            11,
            _set_key("answer", []),
            r"NQ-open\.dev\.jsonl, line 12, field 'answer'",
        ),
        (
            "nq-open",
            "nq_open/NQ-open.dev.jsonl",
            3,
            lambda s: "[1, 2]",
            r"NQ-open\.dev\.jsonl, line 4: Each line must be a JSON object\. Got list",
        ),
    ],
)
def test_malformed_line_names_file_line_and_field(
    data_dir, tmp_path, name, rel, index, edit, match
):
    root = _copy(data_dir, tmp_path, name)
    _edit_line(root / rel, index, edit)
    with pytest.raises(InvalidInputError, match=match) as info:
        datasets.create(name, data_dir=root).load()
    assert info.value.path == str(root / rel)
    assert info.value.line == index + 1


def test_broken_faithbench_json_names_the_line(data_dir, tmp_path):
    root = _copy(data_dir, tmp_path, "faithbench")
    path = root / "faithbench/release/batch_5.json"
    path.write_text(path.read_text(encoding="utf-8")[:-10], encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"batch_5\.json, line \d+: The file must be valid"):
        datasets.create("faithbench", data_dir=root).load()


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda batch: batch["samples"].__setitem__(3, ["not", "an", "object"]),
            r"batch_5\.json, field 'samples\[3\]': Each sample must be an object\. Got list",
        ),
        (
            lambda batch: batch["samples"][2]["annotations"].insert(0, "note"),
            r"batch_5\.json, field 'samples\[2\]\.annotations\[0\]': Each annotation must be "
            r"an object\. Got str",
        ),
    ],
)
def test_a_faithbench_sample_or_annotation_that_is_no_object_is_named(
    data_dir, tmp_path, edit, match
):
    root = _copy(data_dir, tmp_path, "faithbench")
    path = root / "faithbench/release/batch_5.json"
    batch = json.loads(path.read_text(encoding="utf-8"))
    edit(batch)
    path.write_text(json.dumps(batch), encoding="utf-8")
    with pytest.raises(InvalidInputError, match=match):
        datasets.create("faithbench", data_dir=root).load()


def test_non_utf8_file_is_named(data_dir, tmp_path):
    root = _copy(data_dir, tmp_path, "nq-open")
    path = root / "nq_open/NQ-open.dev.jsonl"
    path.write_bytes(path.read_bytes()[:100] + b"\xff\xfe" + path.read_bytes()[100:])
    with pytest.raises(InvalidInputError, match=r"NQ-open\.dev\.jsonl: The file must be UTF-8"):
        datasets.create("nq-open", data_dir=root).load()


@pytest.mark.parametrize("name", ["ragtruth", "faithbench", "truthfulqa", "begin"])
def test_missing_data_says_how_to_fetch(tmp_path, monkeypatch, name):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nowhere"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataNotFoundError, match=rf"`realitycheck datasets fetch {name}`"):
        datasets.create(name, data_dir=tmp_path / "empty").load()
