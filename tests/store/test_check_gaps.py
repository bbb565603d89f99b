"""What `check` used to miss: columns of the wrong type, a dead writer's lock, stale metrics."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from realitycheck.cli import main
from realitycheck.store import RunStore, check_run


def _user_run(tmp_path, capsys, n=8):
    path = tmp_path / "data.jsonl"
    rows = [{"qid": f"q{i}", "answer": "word " * (i + 1), "label": i % 2} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    key = f"files[path={path},text=answer,columns=example_id:qid,name=mine]"
    args = ["-q", "evaluate", "-d", key, "-D", "length", "--out", str(run), "--no-report"]
    args += ["--n-resamples", "20"]
    assert main(args) == 0, capsys.readouterr().err
    capsys.readouterr()
    return run, args


def _retype(path, column, kind):
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    pq.write_table(table.set_column(index, column, table.column(column).cast(kind)), path)


def test_a_text_value_column_is_found_and_quarantined(tmp_path, capsys):
    run, args = _user_run(tmp_path, capsys)
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
    run, _ = _user_run(tmp_path, capsys)
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
