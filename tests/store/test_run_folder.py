"""A damaged or busy run folder: read errors that name the file, `check`, `--repair`, the lock."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _runs import user_run

from realitycheck.cli import main
from realitycheck.errors import RunFolderError
from realitycheck.records import Label, Response, Score
from realitycheck.store import LOCK_NAME, RunLock, RunStore, check_run


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_a_truncated_part_names_the_file_and_the_check(tmp_path, capsys):
    run, args = user_run(tmp_path, capsys)
    _truncate(run / "scores.parquet")
    with pytest.raises(RunFolderError, match=r"scores.parquet: This part of the run cannot be"):
        RunStore(run).frame("scores")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err
    assert "scores.parquet: This part of the run cannot be read" in err
    assert f"realitycheck check --run {run}" in err


def test_garbage_in_a_part_and_in_the_manifest(tmp_path, capsys):
    run, _ = user_run(tmp_path, capsys)
    (run / "labels.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    with pytest.raises(RunFolderError, match=r"labels.parquet: .*realitycheck check --run"):
        RunStore(run).keys("labels", ["response_id"])
    (run / "manifest.json").write_text("{not json")
    with pytest.raises(RunFolderError, match=r"manifest.json, line 1: .*realitycheck check"):
        RunStore(run)


def test_check_finds_each_problem_and_repair_recomputes(tmp_path, capsys):
    run, args = user_run(tmp_path, capsys)
    before = RunStore(run).frame("scores").set_index("response_id")["value"].sort_index()
    assert main(["check", "--run", str(run)]) == 0
    assert "0 problems" in capsys.readouterr().out
    _truncate(run / "scores.parquet")
    (run / ".labels.parquet.x.tmp").write_bytes(b"half")
    store = RunStore(run)
    store.append([Response(response_id="ghost", example_id="nowhere", model="m", text="t")])
    assert main(["check", "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert "scores.parquet: unreadable" in err
    assert ".labels.parquet.x.tmp: temporary file" in err
    assert "1 responses have no stored example" in err
    assert main(["check", "--run", str(run), "--repair"]) == 2  # the orphan is not repairable
    out = capsys.readouterr().out
    assert "quarantine" in out and "scores are computed again" in out
    assert (run / "quarantine").is_dir() and not (run / "scores.parquet").exists()
    assert not (run / ".labels.parquet.x.tmp").exists()
    assert main(args) == 0
    after = RunStore(run).frame("scores").set_index("response_id")["value"].sort_index()
    assert after.loc[before.index].equals(before)


def test_check_finds_missing_columns_repeated_ids_and_changed_sources(tmp_path, capsys):
    run, _ = user_run(tmp_path, capsys)
    parts = run / "labels.parts"
    parts.mkdir(exist_ok=True)
    pq.write_table(pa.table({"response_id": ["a"]}), parts / "000-bad.parquet")
    rows = [Score(response_id="x", detector="d", value=1.0)] * 2
    RunStore(run).append(rows)
    (tmp_path / "data.jsonl").write_text('{"qid": "q0", "answer": "changed", "label": 1}\n')
    report = check_run(run)
    problems = {(f.path.name, f.repair): f.problem for f in report.findings}
    assert (
        "missing the columns ['labeler', 'hallucinated']"
        in problems[("000-bad.parquet", "quarantine")]
    )
    assert any("1 rows repeat a response_id/detector" in p for p in problems.values())
    changed = [p for (name, _), p in problems.items() if name == "data.jsonl"]
    assert changed and "--replace-dataset mine" in changed[0]
    assert not report.ok


def test_repair_of_lost_examples_reloads_the_dataset(tmp_path, capsys):
    run, args = user_run(tmp_path, capsys)
    _truncate(run / "examples.parquet")
    assert main(["check", "--run", str(run), "--repair"]) == 0
    assert "datasets loaded again by the next stage" in capsys.readouterr().out
    assert main(args) == 0
    assert len(RunStore(run).frame("examples")) == 8
    assert main(["check", "--run", str(run)]) == 0


def test_a_second_writer_is_told_who_holds_the_run(tmp_path, capsys):
    run, args = user_run(tmp_path, capsys)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        info = {"pid": other.pid, "host": socket.gethostname(), "command": "realitycheck label"}
        (run / LOCK_NAME).write_text(json.dumps({**info, "since": "2026-01-01T00:00:00+00:00"}))
        assert main(args) == 2
        err = capsys.readouterr().err
        assert f"Another process is writing this run: pid {other.pid} on host" in err
        assert "`realitycheck label` since 2026-01-01" in err
        assert "held by pid" in check_run(run).findings[0].problem
    finally:
        other.kill()
        other.wait()
    assert main(args) == 0  # the holder is dead now: its lock is stale
    assert "Took over a stale lock" in capsys.readouterr().err
    assert not (run / LOCK_NAME).exists()


def test_a_lock_from_another_host_is_never_taken_over(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": os.getpid(), "host": "elsewhere"}))
    with pytest.raises(RunFolderError, match=r"pid \d+ on host elsewhere.*delete"):
        RunLock(tmp_path, "x").acquire()


def test_the_lock_is_released_when_the_command_fails(tmp_path, capsys):
    run, _ = user_run(tmp_path, capsys)
    missing = f"files[path={tmp_path / 'gone.jsonl'},text=answer]"
    assert main(["-q", "detect", "-d", missing, "-D", "length", "--out", str(run)]) == 2
    assert "gone.jsonl' (path of dataset" in capsys.readouterr().err
    assert not (run / LOCK_NAME).exists()
    with RunLock(run, "first") as lock:
        assert json.loads(lock.path.read_text())["command"] == "first"
    assert not lock.path.exists()


def test_label_records_read_back_through_the_wrapped_reader(tmp_path):
    store = RunStore(tmp_path)
    store.append([Label(response_id="r", labeler="l", hallucinated=True)])
    assert store.keys("labels", ["response_id", "labeler"]) == {("r", "l")}


def test_a_damaged_generation_errors_table_names_itself(tmp_path):
    from realitycheck.pipeline import generation_errors

    RunStore(tmp_path).update_manifest(notes=["a generated run"])
    (tmp_path / "generation_errors.parquet").write_bytes(b"garbage")
    with pytest.raises(RunFolderError, match=r"generation_errors.parquet: .*realitycheck check"):
        generation_errors(RunStore(tmp_path))
    report = check_run(tmp_path, repair=True)
    assert [f.path.name for f in report.findings] == ["generation_errors.parquet"]
    assert report.ok and not (tmp_path / "generation_errors.parquet").exists()


def test_repair_of_a_garbage_manifest_sets_it_aside_and_the_next_stage_writes_it_anew(
    tmp_path, capsys
):
    run, args = user_run(tmp_path, capsys)
    (run / "manifest.json").write_text("{not json")
    report = check_run(run, repair=True)
    assert [f.name for f in report.findings if f.repair] == ["manifest.json"]
    ((source, dest),) = report.moved
    assert source == run / "manifest.json"
    assert dest.name == "manifest.json" and dest.parent.parent == run / "quarantine"
    assert any("written anew" in line for line in report.recompute)
    assert not (run / "manifest.json").exists()
    assert main(args) == 0, capsys.readouterr().err
    assert json.loads((run / "manifest.json").read_text())["datasets"]
    assert check_run(run).findings == []
