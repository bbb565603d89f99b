"""A rerun notices an edited input file; --replace-dataset reloads it and keeps what still holds."""

from __future__ import annotations

import hashlib
import json

import pytest

from realitycheck.cli import main
from realitycheck.datasets import datasets
from realitycheck.errors import InvalidInputError
from realitycheck.pipeline import ingest
from realitycheck.records import Example
from realitycheck.store import RunStore, digest, fingerprint
from realitycheck.store import _fingerprint as fp_module


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _rows(n=6, flip=False):
    return [
        {
            "qid": f"q{i}",
            "answer": f"answer {i} " + "x" * i,
            "label": "yes" if (i % 2) ^ flip else "no",
        }
        for i in range(n)
    ]


def _key(path, name="mine"):
    options = "text=answer,columns=example_id:qid,positive=yes,negative=no"
    return f"files[path={path},{options},name={name}]"


def test_an_edited_file_stops_the_rerun_naming_it(tmp_path):
    path = _write(tmp_path / "data.jsonl", _rows())
    store = RunStore(tmp_path / "run")
    assert ingest(store, datasets.create_from_key(_key(path))).computed
    entry = store.read_manifest()["datasets"][datasets.create_from_key(_key(path)).key]
    assert entry["fingerprint"][str(path)]["size"] == path.stat().st_size
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert entry["fingerprint"][str(path)]["sha256"] == sha
    stamps = {e.meta["source_sha256"] for e in store.read(Example)}
    assert stamps == {digest(entry["fingerprint"])}
    assert ingest(store, datasets.create_from_key(_key(path))).reused  # unchanged: reused
    _write(path, _rows(flip=True))
    with pytest.raises(InvalidInputError, match=r"data.jsonl.*changed.*--replace-dataset mine"):
        ingest(store, datasets.create_from_key(_key(path)))


def test_replace_keeps_labels_and_scores_of_unchanged_responses(tmp_path, capsys):
    path = _write(tmp_path / "data.jsonl", _rows())
    run = tmp_path / "run"
    args = ["-q", "detect", "-d", _key(path), "-D", "length[unit=chars]", "--out", str(run)]
    assert main(args) == 0
    rows = _rows(flip=True)
    rows[2]["answer"] = "a new answer"
    _write(path, rows)
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "data.jsonl" in err and "--replace-dataset mine" in err
    assert main([*args, "--replace-dataset", "mine"]) == 0
    captured = capsys.readouterr()
    assert "5 responses unchanged kept" in captured.err
    assert "length[unit=chars]: 1 computed, 5 already stored" in captured.out
    store = RunStore(run)
    human = store.frame("labels").query("labeler == 'human'").set_index("response_id")
    assert human.loc["mine/q1/unknown", "hallucinated"] == False  # noqa: E712 (the flip took effect)
    scores = (
        RunStore(run)
        .frame("scores")
        .query("detector == 'length[unit=chars]'")
        .set_index("response_id")
    )
    assert scores.loc["mine/q2/unknown", "value"] == len("a new answer")


def test_replace_recomputes_the_responses_of_a_changed_example(tmp_path, capsys):
    rows = [{**row, "question": f"question {i}"} for i, row in enumerate(_rows())]
    path = _write(tmp_path / "data.jsonl", rows)
    run = tmp_path / "run"
    args = ["-q", "detect", "-d", _key(path), "-D", "length[unit=chars]", "--out", str(run)]
    assert main(args) == 0
    rows[3]["question"] = "another question"  # the answer stays the same
    _write(path, rows)
    capsys.readouterr()
    assert main([*args, "--replace-dataset", "mine"]) == 0
    captured = capsys.readouterr()
    assert "5 responses unchanged kept" in captured.err
    assert "1 changed or removed lost theirs" in captured.err
    assert "length[unit=chars]: 1 computed, 5 already stored" in captured.out


def test_a_header_only_file_loads_nothing_and_does_not_stick(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_text("qid,answer,label\n")
    run = tmp_path / "run"
    args = ["-q", "detect", "-d", _key(path), "-D", "length[unit=chars]", "--out", str(run)]
    assert main(args) == 2
    assert (
        "data.csv: The file has a header (qid, answer, label) but no rows"
        in capsys.readouterr().err
    )
    path.write_text("qid,answer,label\nq1,hello,yes\n")
    assert main(args) == 0
    assert "length[unit=chars]: 1 computed" in capsys.readouterr().out


def test_same_file_name_in_two_folders_never_collides(tmp_path, capsys):
    a = _write(tmp_path / "a" / "x.jsonl", [{"qid": "q1", "answer": "short"}])
    b = _write(tmp_path / "b" / "x.jsonl", [{"qid": "q1", "answer": "a much longer answer"}])
    run = tmp_path / "run"
    keys = [
        f"files[path={a},columns=example_id:qid,text=answer]",
        f"files[path={b},columns=example_id:qid,text=answer]",
    ]
    assert main(["-q", "detect", "-d", keys[0], "-D", "length[unit=chars]", "--out", str(run)]) == 0
    assert main(["-q", "detect", "-d", keys[1], "-D", "length[unit=chars]", "--out", str(run)]) == 0
    store = RunStore(run)
    responses = store.frame("responses").merge(store.frame("scores"), on="response_id")
    assert len(responses) == 2
    assert (responses["text"].str.len() == responses["value"]).all()
    assert set(store.frame("examples")["dataset"]) == {f"files:{a}", f"files:{b}"}


def test_name_parameter_and_two_files_in_one_command(tmp_path, capsys):
    a = _write(tmp_path / "a" / "x.jsonl", [{"answer": "one"}])
    b = _write(tmp_path / "b" / "x.jsonl", [{"answer": "two two"}])
    run = tmp_path / "run"
    args = ["-q", "detect", "-D", "length[unit=chars]", "--out", str(run)]
    args += ["-d", f"files[path={a},text=answer,name=phd]", "-d", f"files[path={b},text=answer]"]
    assert main(args) == 0, capsys.readouterr().err
    names = set(RunStore(run).frame("examples")["dataset"])
    assert names == {"phd", f"files:{b}"}


def test_other_settings_under_the_same_name_are_refused(tmp_path):
    path = _write(tmp_path / "data.jsonl", _rows())
    store = RunStore(tmp_path / "run")
    ingest(store, datasets.create_from_key(_key(path)))
    other = datasets.create_from_key(
        _key(path).replace("positive=yes,negative=no", "positive=no,negative=yes")
    )
    with pytest.raises(
        InvalidInputError, match=r"already holds the dataset 'mine'.*--replace-dataset mine"
    ):
        ingest(store, other)
    ingest(store, other, replace=True)
    entries = store.read_manifest()["datasets"]
    assert list(entries) == [other.key]
    assert store.frame("labels")["hallucinated"].tolist() == [True, False] * 3


def test_unknown_replace_name_gets_did_you_mean(tmp_path, capsys):
    path = _write(tmp_path / "data.jsonl", _rows())
    args = [
        "-q",
        "detect",
        "-d",
        _key(path),
        "-D",
        "length[unit=chars]",
        "--out",
        str(tmp_path / "r"),
    ]
    assert main([*args, "--replace-dataset", "mime"]) == 2
    assert "Did you mean 'mine'?" in capsys.readouterr().err


def test_the_fingerprint_is_not_recomputed_for_an_untouched_file(tmp_path, monkeypatch):
    path = _write(tmp_path / "data.jsonl", _rows())
    first = fingerprint([path])
    calls = []
    monkeypatch.setattr(fp_module, "_sha256", lambda p: calls.append(p) or "x")
    assert fingerprint([path], first) == first
    assert calls == []
    path.write_text("changed\n")
    assert fingerprint([path], first)[str(path)]["sha256"] == "x"
    assert calls == [path]


def test_builtin_datasets_fingerprint_the_files_they_read(data_dir):
    ds = datasets.create("halueval_general", data_dir=data_dir)
    prints = fingerprint(ds.sources())
    assert [p.endswith("halueval/general_data.json") for p in prints] == [True]


def test_a_run_config_takes_replace_dataset(tmp_path, capsys):
    path = _write(tmp_path / "data.jsonl", _rows())
    config = tmp_path / "study.toml"
    config.write_text(
        'detectors = ["length"]\n\n[run]\nout = "run"\nreport = false\n\n[[datasets]]\n'
        f'name = "files"\nparams = {{ path = "{path}", text = "answer", '
        'columns = ["example_id:qid"], positive = ["yes"], negative = ["no"], name = "mine" }\n'
    )
    assert main(["-q", "run", str(config)]) == 0, capsys.readouterr().err
    _write(path, _rows(flip=True))
    capsys.readouterr()
    assert main(["-q", "run", str(config)]) == 2
    assert "--replace-dataset mine" in capsys.readouterr().err
    assert main(["-q", "run", str(config), "--replace-dataset", "mine"]) == 0
    assert "6 responses unchanged kept" in capsys.readouterr().err


def test_a_run_moved_away_from_its_sources_is_reused_with_a_note(tmp_path):
    path = _write(tmp_path / "data.jsonl", _rows())
    store = RunStore(tmp_path / "run")
    ingest(store, datasets.create_from_key(_key(path)))
    path.unlink()
    report = ingest(store, datasets.create_from_key(_key(path)))
    assert report.reused and "were not found; its stored records are used" in report.notes[0]
    with pytest.raises(InvalidInputError, match="does not exist"):
        ingest(store, datasets.create_from_key(_key(path)), replace=True)
