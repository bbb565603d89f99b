"""What `check` used to miss: columns of the wrong type, a dead writer's lock, stale metrics."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from _runs import user_run

from realitycheck.cli import main
from realitycheck.store import LOCK_NAME, RunStore, check_run


def _retype(path, column, kind):
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    pq.write_table(table.set_column(index, column, table.column(column).cast(kind)), path)


def test_a_text_value_column_is_found_and_quarantined(tmp_path, capsys):
    run, args = user_run(tmp_path, capsys)
    assert check_run(run).findings == []  # what the store writes passes
    _retype(run / "scores.parquet", "value", pa.string())
    assert main(["check", "--run", str(run)]) == 2
    captured = capsys.readouterr()
    assert "scores.parquet: columns of the wrong type for scores" in captured.err
    assert "'value' holds string, not double" in captured.err
    assert "1 problems" in captured.out
    assert main(["check", "--run", str(run), "--repair"]) == 0
    assert "scores are computed again" in capsys.readouterr().out
    assert not (run / "scores.parquet").exists()
    assert main(args) == 0
    assert RunStore(run).frame("scores")["value"].dtype == "float64"
    assert main(["check", "--run", str(run)]) == 0


def test_each_table_and_part_is_checked_against_its_record_type(tmp_path, capsys):
    run, _ = user_run(tmp_path, capsys)
    _retype(run / "metrics.parquet", "n", pa.string())
    _retype(run / "labels.parquet", "hallucinated", pa.string())
    parts = run / "responses.parts"
    parts.mkdir(exist_ok=True)
    bad = pq.read_table(run / "responses.parquet").slice(0, 1)
    bad = bad.set_column(
        bad.schema.get_field_index("samples"), "samples", pa.array([1], pa.int64())
    )
    pq.write_table(bad, parts / "000-bad.parquet")
    found = {f.path.name: f.problem for f in check_run(run).findings}
    assert "'n' holds string, not int64" in found["metrics.parquet"]
    assert "'hallucinated' holds string, not bool" in found["labels.parquet"]
    assert "'samples' holds int64, not list<item: string>" in found["000-bad.parquet"]


def _dead_pid():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def _lock(run, pid, host):
    info = {"pid": pid, "host": host, "command": "realitycheck label", "since": "2026-01-01"}
    (run / LOCK_NAME).write_text(json.dumps(info))


def test_a_dead_writers_lock_is_stale_and_repair_removes_it(tmp_path, capsys):
    run, args = user_run(tmp_path, capsys)
    pid = _dead_pid()
    _lock(run, pid, socket.gethostname())
    assert main(["check", "--run", str(run)]) == 2
    captured = capsys.readouterr()
    assert f"run.lock: stale: left by pid {pid} on {socket.gethostname()}" in captured.err
    assert "which no longer runs on this host" in captured.err
    assert "1 of them can be repaired: rerun with --repair" in captured.out
    assert main(["check", "--run", str(run), "--repair"]) == 0
    assert f"repaired: removed the stale lock {run / LOCK_NAME}" in capsys.readouterr().out
    assert not (run / LOCK_NAME).exists()
    assert main(["check", "--run", str(run)]) == 0


def test_a_live_writers_lock_and_another_hosts_are_left_alone(tmp_path, capsys):
    run, _ = user_run(tmp_path, capsys)
    _lock(run, _dead_pid(), "elsewhere")
    assert main(["check", "--run", str(run), "--repair"]) == 2
    assert "run.lock: held by pid" in capsys.readouterr().err
    assert json.loads((run / LOCK_NAME).read_text())["host"] == "elsewhere"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _lock(run, live.pid, socket.gethostname())
        (run / ".labels.parquet.x.tmp").write_bytes(b"half")  # something to repair
        assert main(["check", "--run", str(run), "--repair"]) == 2
        assert f"pid {live.pid} on host" in capsys.readouterr().err  # refused: it is writing
        assert json.loads((run / LOCK_NAME).read_text())["pid"] == live.pid
        finding = next(f for f in check_run(run).findings if f.name == LOCK_NAME)
        assert finding.problem.startswith("held by pid") and finding.repair == ""
    finally:
        live.kill()
        live.wait()


def test_metrics_are_set_aside_with_the_labels_they_were_computed_from(tmp_path, capsys):
    run, args = user_run(tmp_path, capsys)
    assert main(["report", "--run", str(run), "--report-dir", str(tmp_path / "before")]) == 0
    assert "(run the evaluate stage)" not in (tmp_path / "before" / "report.md").read_text()
    (run / "labels.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    assert main(["check", "--run", str(run), "--repair"]) == 0
    out = capsys.readouterr().out
    for name in ("metrics.parquet", "metrics.csv", "agreement.csv"):
        assert f"moved: {run / name} -> {run / 'quarantine'}" in out
        assert not (run / name).exists()
    assert "agreement, metrics: set aside, as they were computed from the labels" in out
    assert "run evaluate again" in out
    assert RunStore(run).frame("metrics").empty
    assert main(["report", "--run", str(run), "--report-dir", str(tmp_path / "after")]) == 0
    text = (tmp_path / "after" / "report.md").read_text()
    assert "Not available: the run has no metrics table (run the evaluate stage)." in text
    assert main(args) == 0  # evaluate computes them again
    assert not RunStore(run).frame("metrics").empty


def test_metrics_stay_when_no_record_was_set_aside(tmp_path, capsys):
    run, _ = user_run(tmp_path, capsys)
    (run / ".labels.parquet.x.tmp").write_bytes(b"half")
    assert main(["check", "--run", str(run), "--repair"]) == 0
    assert "set aside" not in capsys.readouterr().out
    assert (run / "metrics.parquet").exists() and (run / "metrics.csv").exists()


def test_repair_on_a_file_uri_quarantines_a_damaged_part(tmp_path, capsys):
    run, _ = user_run(tmp_path, capsys)
    (run / "scores.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    report = check_run(f"file://{run}", repair=True)
    assert report.ok
    moved = [str(dest) for _, dest in report.moved]
    assert any(d.endswith("scores.parquet") for d in moved)
    assert any(d.endswith("metrics.parquet") for d in moved)
    assert not (run / "scores.parquet").exists() and not (run / "metrics.parquet").exists()
    assert len(list((run / "quarantine").glob("*/scores.parquet"))) == 1
