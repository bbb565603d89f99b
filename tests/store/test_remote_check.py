"""`realitycheck check` on a run on S3 (moto): damaged objects found, quarantined, recomputed."""

from __future__ import annotations

import json

import pytest
from object_storage import SECRET, objects

from realitycheck import Response, RunStore
from realitycheck.cli import main
from realitycheck.errors import RunFolderError
from realitycheck.store import check_run


def _evaluated(uri: str, tmp_path, capsys, fruit_answers) -> list[str]:
    """Evaluate a user's file into the run at ``uri``; return the command, to run it again."""
    path = fruit_answers(tmp_path / "mine.jsonl", 24)
    key = (
        f"files[path={path},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm,name=mine]"
    )
    args = ["-q", "evaluate", "-d", key, "-D", "length", "-l", "rouge_l", "--out", uri]
    args += ["--report-dir", str(tmp_path / "tables"), "--no-report", "--n-resamples", "20"]
    assert main(args) == 0, capsys.readouterr().err
    capsys.readouterr()
    return args


def _scores(uri: str):
    return RunStore(uri).frame("scores").set_index("response_id")["value"].sort_index()


def test_check_on_s3_finds_a_damaged_object_and_repair_quarantines_it(
    s3_bucket, tmp_path, capsys, fruit_answers
):
    uri = s3_bucket("checked")
    args = _evaluated(uri, tmp_path, capsys, fruit_answers)
    before, stored = _scores(uri), objects(uri)
    assert main(["check", "--run", uri]) == 0
    out = capsys.readouterr().out
    tables = [n for n in stored if n.endswith(".parquet")]
    assert f"{len(tables) + 1} files checked, 0 problems" in out  # the tables and the manifest

    folder = RunStore(uri).remote
    assert folder is not None
    folder.write_bytes("scores.parquet", stored["scores.parquet"][:100])  # a truncated object
    RunStore(uri).append([Response(response_id="ghost", example_id="nowhere", model="m", text="t")])
    with pytest.raises(RunFolderError, match=r"scores.parquet.*realitycheck check --run URI"):
        RunStore(uri).frame("scores")
    report = check_run(uri)
    problems = {(f.name, f.repair): f.problem for f in report.findings}
    assert problems[("scores.parquet", "quarantine")].startswith("unreadable")
    assert any("1 responses have no stored example" in p for p in problems.values())
    assert all(str(f.path).startswith("s3://<redacted>@") for f in report.findings)
    assert main(["check", "--run", uri]) == 2
    err = capsys.readouterr().err
    assert "scores.parquet: unreadable" in err and SECRET not in err

    assert main(["check", "--run", uri, "--repair"]) == 2  # the orphan is not repairable
    out = capsys.readouterr().out
    assert "scores are computed again" in out and SECRET not in out
    after = objects(uri)
    moved = [n for n in after if n.startswith("quarantine/") and n.endswith("/scores.parquet")]
    assert len(moved) == 1 and after[moved[0]] == stored["scores.parquet"][:100]
    assert "scores.parquet" not in after and "run.lock" not in after
    manifest = json.loads(after["manifest.json"])
    assert "datasets" not in manifest or not manifest["datasets"]  # loaded again next time
    assert main(args) == 0, capsys.readouterr().err
    assert _scores(uri).loc[before.index].equals(before)


def test_check_on_s3_names_who_holds_the_run_and_repair_waits_for_it(
    s3_bucket, tmp_path, capsys, fruit_answers
):
    uri = s3_bucket("held")
    _evaluated(uri, tmp_path, capsys, fruit_answers)
    folder = RunStore(uri).remote
    assert folder is not None
    folder.write_bytes("labels.parquet", b"PAR1 not really parquet PAR1")
    holder = {"pid": 4242, "host": "elsewhere", "command": "realitycheck detect", "since": "x"}
    folder.write_bytes("run.lock", json.dumps(holder).encode())
    report = check_run(uri)
    assert report.findings[0].problem.startswith("held by pid 4242 on elsewhere")
    assert report.findings[0].name == "run.lock"
    with pytest.raises(RunFolderError, match="Another process is writing this run") as info:
        check_run(uri, repair=True)
    assert SECRET not in str(info.value)
    assert "labels.parquet" in objects(uri)  # nothing moved while another writer held it


def test_check_on_a_missing_bucket_says_so_without_the_secret(s3_endpoint, capsys):
    from object_storage import s3_uri

    assert main(["check", "--run", s3_uri(s3_endpoint, "no-such-bucket", "run")]) == 2
    err = capsys.readouterr().err
    assert "no-such-bucket" in err and SECRET not in err and "Traceback" not in err


def test_check_on_a_location_holding_no_run_is_an_error_and_creates_nothing(
    s3_bucket, tmp_path, capsys
):
    assert main(["check", "--run", s3_bucket("typo")]) == 2
    err = capsys.readouterr().err
    assert "There is no run at s3://<redacted>@" in err and SECRET not in err
    missing = tmp_path / "nowhere"
    assert main(["check", "--run", f"file://{missing}"]) == 2
    assert "There is no run at file://" in capsys.readouterr().err
    assert not missing.exists()


def test_a_fault_fetching_an_object_is_reported_and_never_quarantines_it(
    s3_bucket, tmp_path, capsys, fruit_answers, monkeypatch
):
    from realitycheck.store._fs import RemoteFolder

    uri = s3_bucket("flaky")
    _evaluated(uri, tmp_path, capsys, fruit_answers)
    before = objects(uri)
    real = RemoteFolder.read_bytes

    def flaky(self, name):
        if name in ("scores.parquet", "manifest.json"):
            raise RunFolderError(f"Could not read {name} of the run (OSError: timed out).")
        return real(self, name)

    monkeypatch.setattr(RemoteFolder, "read_bytes", flaky)
    report = check_run(uri, repair=True)
    faults = {f.name: f for f in report.findings}
    assert set(faults) == {"scores.parquet", "manifest.json"}
    assert all(f.repair == "" and "check again" in f.problem for f in faults.values())
    assert not report.moved and not report.ok
    monkeypatch.undo()
    assert objects(uri) == before  # nothing moved, nothing rewritten
    assert all("?" not in str(f.path) for f in report.findings)  # names, not queries


def test_check_on_a_file_uri_finds_what_a_killed_write_left(tmp_path, capsys, fruit_answers):
    run = tmp_path / "run"
    _evaluated(f"file://{run}", tmp_path, capsys, fruit_answers)
    (run / ".labels.parquet.x.tmp").write_bytes(b"half")
    report = check_run(f"file://{run}", repair=True)
    assert [(f.name, f.repair) for f in report.findings] == [(".labels.parquet.x.tmp", "delete")]
    assert report.ok and not (run / ".labels.parquet.x.tmp").exists()
