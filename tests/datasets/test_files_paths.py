"""The ``files`` dataset's paths: globs in any part, ``**``, and fields taken from the path."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from realitycheck.cli import main
from realitycheck.datasets.files import Files
from realitycheck.datasets.spec_file import load_spec
from realitycheck.errors import DataNotFoundError, InvalidInputError


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _answers(tag: str, n: int = 2, **extra) -> list[dict]:
    return [{"id": f"q{i}", "text": f"{tag} answer {i}", **extra} for i in range(n)]


def _per_model_folders(root: Path) -> None:
    """``data/<model>/data.json``, the shape of MIND's HELM folders, plus files to skip."""
    for model in ("llama", "gpt"):
        path = root / "data" / model / "data.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(_answers(model)), encoding="utf-8")
    hidden = root / "data" / ".ipynb_checkpoints" / "data.json"
    hidden.parent.mkdir()
    hidden.write_text(json.dumps(_answers("stale checkpoint")), encoding="utf-8")
    (root / "data" / "gpt" / "notes.json").write_text("[]", encoding="utf-8")


def test_a_glob_across_folders_reads_each_folder_sorted_and_skips_hidden_ones(tmp_path):
    _per_model_folders(tmp_path)
    ds = Files(path="data/*/data.json", data_dir=tmp_path, columns=("example_id:id",))
    assert [p.relative_to(tmp_path).as_posix() for p in ds.sources()] == [
        "data/gpt/data.json",
        "data/llama/data.json",
    ]
    bundle = ds.load()
    # the folder tells the files apart, so it is the model of rows that name none
    assert [r.model for r in bundle.responses] == ["gpt", "gpt", "llama", "llama"]
    assert not any("stale" in r.text for r in bundle.responses)
    assert len(bundle.examples) == 2  # q0 and q1, answered by both models
    assert any("as the model (gpt, llama)" in n for n in bundle.notes)
    assert {e.meta["file"] for e in bundle.examples} == {"gpt/data.json"}


def test_double_star_reaches_any_depth_in_tree_order(tmp_path):
    for where in ("runs/x.jsonl", "runs/b/x.jsonl", "runs/a/deep/er/x.jsonl", "runs/a/y.jsonl"):
        _jsonl(tmp_path / where, _answers(where, 1))
    ds = Files(path=str(tmp_path / "runs" / "**" / "x.jsonl"))
    assert [p.relative_to(tmp_path / "runs").as_posix() for p in ds.sources()] == [
        "a/deep/er/x.jsonl",
        "b/x.jsonl",
        "x.jsonl",
    ]
    assert [r.model for r in ds.load().responses] == ["a/deep/er/x", "b/x", "x"]


@pytest.mark.parametrize(
    ("pattern", "match"),
    [
        ("data/*/missing.json", r"No file matches the path pattern 'data/\*/missing\.json': "),
        ("nowhere/*/data.json", r"looked below '.*nowhere', which is not a folder"),
        ("data/{model}/data.jsonl", r"No file matches the path pattern 'data/\{model\}/data"),
    ],
)
def test_a_pattern_that_matches_nothing_names_the_pattern(tmp_path, pattern, match):
    _per_model_folders(tmp_path)
    with pytest.raises(DataNotFoundError, match=match):
        Files(path=pattern, data_dir=tmp_path).load()


def test_a_pattern_that_matches_nothing_fails_on_the_command_line_without_traceback(
    tmp_path, capsys
):
    _per_model_folders(tmp_path)
    key = f"files[path={tmp_path}/data/*/nothing.json]"
    code = main(["-q", "ingest", "-d", key, "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert "No file matches the path pattern" in err and "nothing.json" in err


def test_double_star_inside_a_part_is_refused(tmp_path):
    _per_model_folders(tmp_path)
    with pytest.raises(InvalidInputError, match=r"'\*\*' must be a whole part of the path"):
        Files(path="data/g**/data.json", data_dir=tmp_path).load()


def test_a_folder_with_brackets_in_its_name_is_read_as_written(tmp_path):
    _jsonl(tmp_path / "runs [v2]" / "a.jsonl", _answers("t", 1))
    _jsonl(tmp_path / "runs [v2]" / "b[1].jsonl", _answers("u", 1))
    assert len(Files(path=str(tmp_path / "runs [v2]" / "a.jsonl")).load().responses) == 1
    assert len(Files(path=str(tmp_path / "runs [v2]" / "b[1].jsonl")).load().responses) == 1
    both = Files(path=str(tmp_path / "runs [v2]" / "*.jsonl"))
    assert [p.name for p in both.sources()] == ["a.jsonl", "b[1].jsonl"]


def test_path_fields_become_columns_of_every_row(tmp_path):
    for org, model in (("meta", "llama-2"), ("openai", "gpt-4")):
        for subset in ("easy", "hard_long"):
            rows = _answers(f"{model} {subset}", 2)
            _jsonl(tmp_path / "evals" / org / model / f"{subset}_eval.txt", rows)
    ds = Files(
        path="evals/{org}/{model}/{subset}_eval.txt",
        format="jsonl",
        meta=("org", "subset"),
        columns=("example_id:id",),
        data_dir=tmp_path,
    )
    bundle = ds.load()
    assert len(bundle.responses) == 8
    seen = Counter(
        (r.model, r.meta["slice"]["org"], r.meta["slice"]["subset"]) for r in bundle.responses
    )
    assert seen == {
        ("gpt-4", "openai", "easy"): 2,
        ("gpt-4", "openai", "hard_long"): 2,
        ("llama-2", "meta", "easy"): 2,
        ("llama-2", "meta", "hard_long"): 2,
    }
    for r in bundle.responses:  # the text was written from the same path
        assert r.text.startswith(f"{r.model} {r.meta['slice']['subset']} answer")
    assert any(
        "From its path: org='meta', model='llama-2', subset='easy'" in n for n in bundle.notes
    )


def test_a_path_field_is_a_column_like_any_other_even_the_label(tmp_path):
    _jsonl(tmp_path / "by_verdict" / "hallucinated" / "a.jsonl", _answers("wrong", 2))
    _jsonl(tmp_path / "by_verdict" / "faithful" / "a.jsonl", _answers("right", 3))
    bundle = Files(
        path="by_verdict/{verdict}/a.jsonl",
        label="verdict",
        positive=("hallucinated",),
        negative=("faithful",),
        data_dir=tmp_path,
    ).load()
    by_id = {r.response_id: r.text for r in bundle.responses}
    verdicts = {by_id[lab.response_id].split()[0]: lab.hallucinated for lab in bundle.labels}
    assert verdicts == {"wrong": True, "right": False}
    assert sum(lab.hallucinated for lab in bundle.labels) == 2


def test_a_restricted_and_a_repeated_placeholder_match_only_what_they_say(tmp_path):
    for folder, name in (("llama-7b", "llama-7b"), ("llama-13b", "other"), ("gpt", "gpt")):
        _jsonl(tmp_path / folder / f"{name}.jsonl", _answers(folder, 1))
    only = Files(path="{model:llama*}/{file}.jsonl", data_dir=tmp_path)
    assert [r.model for r in only.load().responses] == ["llama-13b", "llama-7b"]
    same = Files(path="{model}/{model}.jsonl", data_dir=tmp_path)
    assert [r.model for r in same.load().responses] == ["gpt", "llama-7b"]


def test_placeholders_split_a_part_at_the_shortest_match(tmp_path):
    _jsonl(tmp_path / "x_y_z.jsonl", _answers("t", 1))
    bundle = Files(path="{a}_{b}.jsonl", meta=("a", "b"), data_dir=tmp_path).load()
    assert bundle.responses[0].meta["slice"] == {"a": "x", "b": "y_z"}


def test_a_path_field_that_agrees_with_the_rows_column_loads(tmp_path):
    _jsonl(tmp_path / "gpt" / "out.jsonl", _answers("gpt", 2, model="gpt"))
    _jsonl(tmp_path / "llama" / "out.jsonl", [{"id": "q0", "text": "t", "model": ""}])
    bundle = Files(path="{model}/out.jsonl", data_dir=tmp_path).load()
    assert [r.model for r in bundle.responses] == ["gpt", "gpt", "llama"]  # empty takes the path's


def test_a_path_field_that_contradicts_the_rows_column_is_an_error(tmp_path, capsys):
    _jsonl(
        tmp_path / "gpt" / "out.jsonl",
        [*_answers("gpt", 2, model="gpt"), {"text": "x", "model": "llama"}],
    )
    with pytest.raises(
        InvalidInputError,
        match=r"gpt/out\.jsonl, line 3, field 'model': The row's 'model' is 'llama' but the path "
        r"'gpt/out\.jsonl' gives \{model\} = 'gpt'; a value given twice must agree\. Rename the "
        r"placeholder \(e\.g\. \{model_dir\}\) or the column\.",
    ):
        Files(path="{model}/out.jsonl", data_dir=tmp_path).load()
    key = f"files[path={tmp_path}/{{model}}/out.jsonl]"
    assert main(["-q", "ingest", "-d", key, "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err
    assert "line 3, field 'model'" in err and "Traceback" not in err


def test_a_bad_value_from_the_path_says_it_came_from_the_path(tmp_path):
    _jsonl(tmp_path / "qa" / "a.jsonl", _answers("t", 1))
    _jsonl(tmp_path / "quiz" / "a.jsonl", _answers("t", 1))
    with pytest.raises(
        InvalidInputError,
        match=r"quiz/a\.jsonl, field 'task': The task must be one of .* Got 'quiz' instead\. "
        r"\(The value comes from \{task\} of the path 'quiz/a\.jsonl', for line 1",
    ):
        Files(path="{task}/a.jsonl", data_dir=tmp_path).load()


def test_a_file_named_twice_is_refused(tmp_path):
    _jsonl(tmp_path / "a.jsonl", _answers("t", 1))
    with pytest.raises(InvalidInputError, match=r"is named twice in 'path'.*read twice"):
        Files(path=("a.jsonl", "*.jsonl"), data_dir=tmp_path).load()


def test_spec_file_patterns_keep_their_fields_and_each_file_pins_one_file(tmp_path):
    folder = tmp_path / "runs [v2]"  # a bracket in the spec's folder is not a glob
    for model in ("gpt", "llama"):
        for subset in ("easy", "hard"):
            _jsonl(folder / model / f"{subset}.jsonl", _answers(f"{model} {subset}", 2))
    spec = folder / "s.toml"
    spec.write_text(
        '[dataset]\nname = "runs"\npath = "{model}/{subset}.jsonl"\nmeta = ["subset"]\n'
        'columns = { example_id = "id" }\n',
        encoding="utf-8",
    )
    (whole,) = load_spec(spec)
    assert whole.run_name == "runs"
    bundle = whole.load()
    assert Counter((r.model, r.meta["slice"]["subset"]) for r in bundle.responses) == {
        ("gpt", "easy"): 2,
        ("gpt", "hard"): 2,
        ("llama", "easy"): 2,
        ("llama", "hard"): 2,
    }
    spec.write_text(spec.read_text() + "each_file = true\n", encoding="utf-8")
    each = load_spec(spec)
    assert [d.run_name for d in each] == [
        "runs/gpt/easy",
        "runs/gpt/hard",
        "runs/llama/easy",
        "runs/llama/hard",
    ]
    last = each[-1].load()
    assert [(r.model, r.meta["slice"]["subset"]) for r in last.responses] == [("llama", "hard")] * 2
    assert [p.name for p in each[-1].sources()] == ["hard.jsonl"]


def test_each_file_over_a_folder_glob_names_datasets_by_folder(tmp_path):
    _per_model_folders(tmp_path)
    (tmp_path / "s.toml").write_text(
        '[dataset]\nname = "helm"\npath = "data/*/data.json"\neach_file = true\n',
        encoding="utf-8",
    )
    built = load_spec(tmp_path / "s.toml")
    assert [d.run_name for d in built] == ["helm/gpt", "helm/llama"]
    assert {r.model for r in built[1].load().responses} == {"llama"}


# Real data: BEGIN's files are named begin_<split>_<source>.tsv, and each row
# carries its source in the data_source column.


def test_begin_split_and_source_from_the_path_match_the_files(data_dir):
    bundle = Files(
        path="begin/begin_{split}_{data_source}.tsv",
        text="response",
        columns=("model:model_name",),
        meta=("split", "data_source"),
        data_dir=data_dir,
    ).load()
    counts = Counter(
        (r.meta["slice"]["split"], r.meta["slice"]["data_source"]) for r in bundle.responses
    )
    assert counts == {("test", "wow"): 3607, ("dev", "wow"): 430, ("dev", "cmu"): 416}
    assert {r.model for r in bundle.responses} == {"ctrl", "doha", "gpt2", "t5"}


def test_begin_a_path_field_that_names_another_column_is_refused(data_dir):
    with pytest.raises(
        InvalidInputError,
        match=r"begin_dev_cmu\.tsv, line 2, field 'model_name': The row's 'model_name' is 'gpt2' "
        r"but the path 'begin_dev_cmu\.tsv' gives \{model_name\} = 'cmu'",
    ):
        Files(path="begin/begin_dev_{model_name}.tsv", text="response", data_dir=data_dir).load()


def test_begin_a_folder_glob_over_the_real_data(data_dir):
    ds = Files(path="*/begin_dev_*.tsv", text="response", data_dir=data_dir)
    assert [p.relative_to(data_dir).as_posix() for p in ds.sources()] == [
        "begin/begin_dev_cmu.tsv",
        "begin/begin_dev_wow.tsv",
    ]
    bundle = ds.load()
    assert Counter(r.model for r in bundle.responses) == {
        "begin_dev_cmu": 416,
        "begin_dev_wow": 430,
    }
