"""Dataset spec files: several named datasets from one TOML, globs, and clear errors."""

from __future__ import annotations

import json

import pytest

from realitycheck.cli import main
from realitycheck.datasets.spec_file import is_spec_file, load_spec
from realitycheck.errors import InvalidInputError
from realitycheck.store import RunStore

QA_ROWS = [
    {
        "id": "1",
        "knowledge": "Paris is in France.",
        "q": "Capital?",
        "right": "Paris",
        "bad": "Lyon",
    },
    {"id": "2", "knowledge": "The Nile is long.", "q": "River?", "right": "Nile", "bad": "Amazon"},
]
SPEC = """
[[datasets]]
name = "haluqa"
path = "qa.jsonl"
text = ""
columns = { example_id = "id", context = "knowledge", question = "q" }
constants = { task = "qa" }
answers = ["right:faithful", "bad:hallucinated"]

[[datasets]]
name = "raters"
path = "raters.csv"
text = "answer"
columns = { example_id = "id" }
annotators = ["ann1", "ann2", "ann3"]
positive = ["yes"]
negative = ["no"]
"""


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "qa.jsonl").write_text("\n".join(json.dumps(r) for r in QA_ROWS) + "\n")
    (tmp_path / "raters.csv").write_text(
        "id,answer,ann1,ann2,ann3\n1,Paris is big,yes,no,yes\n2,Lyon,no,no,yes\n"
    )
    (tmp_path / "mine.toml").write_text(SPEC)
    return tmp_path


def test_a_spec_file_gives_each_dataset_its_own_name(folder, capsys):
    built = load_spec(folder / "mine.toml")
    assert [d.run_name for d in built] == ["haluqa", "raters"]
    haluqa = built[0].load()
    assert len(haluqa.responses) == 4 and {e.task for e in haluqa.examples} == {"qa"}
    out = folder / "run"
    assert main(["-q", "ingest", "-d", str(folder / "mine.toml"), "--out", str(out)]) == 0
    responses = RunStore(out).frame("responses")
    assert sorted(responses["response_id"].str.split("/").str[0].unique()) == ["haluqa", "raters"]
    labels = RunStore(out).frame("labels")
    assert {"human:ann1", "human:ann2", "human:ann3", "human"} <= set(labels["labeler"])


def _per_model_files(folder):
    for model in ("gpt-4", "llama"):
        rows = [{"id": str(i), "answer": f"{model} answer {i}", "label": "no"} for i in range(3)]
        (folder / f"{model}.jsonl").write_text("\n".join(json.dumps(r) for r in rows))


GLOB_SPEC = (
    '[dataset]\nname = "sent"\npath = "*.jsonl"\ntext = "answer"\n'
    'columns = { example_id = "id" }\npositive = ["yes"]\nnegative = ["no"]\n'
)


def test_a_glob_makes_one_dataset_with_each_files_stem_as_the_model(tmp_path):
    _per_model_files(tmp_path)
    (tmp_path / "s.toml").write_text(GLOB_SPEC)
    (built,) = load_spec(tmp_path / "s.toml")
    bundle = built.load()
    assert built.run_name == "sent"
    assert len(bundle.examples) == 3  # one example per id, answered by both models
    by_model = {}
    for r in bundle.responses:
        by_model.setdefault(r.model, []).append(r.example_id)
    assert sorted(by_model) == ["gpt-4", "llama"] and by_model["gpt-4"] == by_model["llama"]
    assert [p.name for p in built.sources()] == ["gpt-4.jsonl", "llama.jsonl"]


def test_each_file_gives_one_dataset_per_file(tmp_path):
    _per_model_files(tmp_path)
    (tmp_path / "s.toml").write_text(GLOB_SPEC + "each_file = true\n")
    built = load_spec(tmp_path / "s.toml")
    assert [d.run_name for d in built] == ["sent/gpt-4", "sent/llama"]
    assert {r.model for r in built[1].load().responses} == {"llama"}


def test_a_list_of_paths_in_yaml_is_one_dataset(tmp_path):
    _per_model_files(tmp_path)
    (tmp_path / "s.yaml").write_text(
        "dataset:\n  name: sent\n  path: [gpt-4.jsonl, llama.jsonl]\n  text: answer\n"
        "  columns: {example_id: id}\n  positive: [yes]\n  negative: [no]\n"
    )
    (built,) = load_spec(tmp_path / "s.yaml")
    assert {r.model for r in built.load().responses} == {"gpt-4", "llama"}


def test_a_key_takes_several_paths_too(tmp_path):
    from realitycheck.datasets import datasets

    _per_model_files(tmp_path)
    ds = datasets.create_from_key(
        f"files[path={tmp_path}/gpt-4.jsonl+{tmp_path}/llama.jsonl,text=answer,"
        "columns=example_id:id,positive=yes,negative=no,name=both]"
    )
    assert ds.run_name == "both" and len(ds.load().responses) == 6


def test_only_toml_and_yaml_paths_are_spec_files():
    assert is_spec_file("data/mine.toml") and is_spec_file("mine.yaml") and is_spec_file("m.YML")
    assert not is_spec_file("files[path=x.toml]") and not is_spec_file("truthfulqa")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[dataset\n", "not valid TOML"),
        ("title = 'x'\n", "one \\[dataset\\] table or several \\[\\[datasets\\]\\] tables"),
        ("", "one \\[dataset\\] table"),
        ("datasets = 3\n", "'datasets' must be an array of tables"),
        ("datasets = [1]\n", "Dataset 1 must be a table of parameters"),
        ("[dataset]\nname = 'a'\n", "dataset 1 \\('a'\\) needs a 'path'"),
        ("[dataset]\npath = 'nothing-*.csv'\n", "no file matches 'nothing-\\*.csv'"),
        ("[dataset]\npath = 'raters.csv'\ntxt = 'answer'\n", "has no parameter 'txt'"),
        ("[dataset]\npath = 'missing.csv'\ntext = 'a'\n", "does not exist"),
        (
            "[dataset]\npath = 'raters.csv'\ntext = 'answer'\naggregate = 'mean'\n",
            "'aggregate' parameter of files",
        ),
    ],
)
def test_bad_spec_files_name_the_file_and_the_dataset(folder, text, match):
    (folder / "bad.toml").write_text(text)
    with pytest.raises(InvalidInputError, match=match) as err:
        datasets = load_spec(folder / "bad.toml")
        for ds in datasets:
            ds.load()
    assert "bad.toml" in str(err.value) or "missing.csv" in str(err.value)


def test_a_missing_spec_file_is_an_error_on_the_command_line(tmp_path, capsys):
    code = main(["ingest", "-d", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "r")])
    assert code == 2
    assert "nope.toml" in capsys.readouterr().err


def test_two_datasets_with_one_name_are_refused_before_anything_is_stored(folder, capsys):
    (folder / "twice.toml").write_text(SPEC.replace('name = "raters"', 'name = "haluqa"'))
    with pytest.raises(
        InvalidInputError,
        match=r"twice\.toml, line 11, field 'name': Datasets 1 at line 3 and 2 are both named "
        r"'haluqa'; .*rename one",
    ):
        load_spec(folder / "twice.toml")
    out = folder / "run"
    assert main(["-q", "ingest", "-d", str(folder / "twice.toml"), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "both named 'haluqa'" in err and "--replace-dataset" not in err
    assert not (out / "responses.parquet").exists() and not list(out.glob("**/*.parquet"))


def test_two_yaml_datasets_with_one_name_are_refused(folder):
    (folder / "twice.yaml").write_text(
        "datasets:\n"
        "  - {name: a, path: raters.csv, text: answer, label: ann1, positive: [yes]}\n"
        "  - {name: a, path: raters.csv, text: answer, label: ann2, positive: [yes]}\n"
    )
    with pytest.raises(InvalidInputError, match=r"line 3, field 'name': Datasets 1 at line 2"):
        load_spec(folder / "twice.yaml")
