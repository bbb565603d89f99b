"""`realitycheck run CONFIG` with out on S3 (moto): the run there, tables, studies, report local."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from object_storage import SECRET, make_bucket, objects, s3_uri

from realitycheck.cli import main
from realitycheck.errors import InvalidInputError
from realitycheck.runner import load_run_config


def _config(tmp_path: Path, data: Path, out: str, report_dir: Path | None) -> Path:
    path = tmp_path / f"run-{len(list(tmp_path.glob('run-*.toml')))}.toml"
    where = f'out = "{out}"\n' + (f'report_dir = "{report_dir}"\n' if report_dir else "")
    path.write_text(
        'labelers = ["rouge_l"]\ndetectors = ["length"]\nstudies = ["length", "leaderboard"]\n'
        f"[run]\n{where}"
        '[[datasets]]\nname = "files"\n'
        f'params = {{ path = "{data}", text = "answer", label = "is_wrong", positive = "yes", '
        'negative = "no", columns = { example_id = "qid", model = "llm" } }\n'
        "[bootstrap]\nn_resamples = 30\n"
    )
    return path


def _studies(folder: Path) -> dict[str, dict[str, str]]:
    """Each study's CSV tables (name -> text) under ``folder/studies``."""
    return {
        study.name: {p.name: p.read_text() for p in sorted(study.glob("*.csv"))}
        for study in sorted((folder / "studies").iterdir())
    }


def test_a_run_config_on_s3_equals_a_local_run_and_a_rerun_adds_nothing(
    s3_endpoint, tmp_path, capsys, fruit_answers
):
    data = fruit_answers(tmp_path / "answers.jsonl", 30)
    make_bucket(s3_endpoint, "config-bucket")
    # A short password, as people choose them: only the URI's parsing can tell it is one.
    uri = s3_uri(s3_endpoint, "config-bucket", "run").replace(SECRET, "hunter2")
    here = tmp_path / "here"
    assert main(["-q", "run", str(_config(tmp_path, data, uri, here))]) == 0
    local = tmp_path / "local"
    assert main(["-q", "run", str(_config(tmp_path, data, str(local), None))]) == 0
    captured = capsys.readouterr()
    assert "hunter2" not in captured.out + captured.err

    stored = objects(uri)
    parts = {name for name in stored if name.endswith(".parquet")}
    assert parts and parts == {
        str(p.relative_to(local)) for p in local.rglob("*.parquet") if "studies" not in p.parts
    }
    for name in ("metrics.csv", "agreement.csv"):
        assert (here / name).read_text() == (local / name).read_text(), name
    ours = _studies(here)
    assert ours.keys() == {"length", "leaderboard"} and ours == _studies(local)
    assert all(tables for tables in ours.values())
    html = (here / "report.html").read_text()
    assert "(length)</h3>" in html and "(leaderboard)</h3>" in html
    assert not any(name.startswith("studies/") for name in stored)  # the results stay local
    manifest = json.loads(stored["manifest.json"])
    assert manifest["config"]["run_config"]["run"] == {"report_dir": str(here)}
    assert "config-bucket" not in stored["manifest.json"].decode()  # nor its location
    assert "hunter2" not in html + (here / "metrics.csv").read_text()

    assert main(["-q", "run", str(_config(tmp_path, data, uri, here))]) == 0
    again = objects(uri)
    assert again.keys() == stored.keys()
    assert [name for name in again if again[name] != stored[name]] == ["manifest.json"]


@pytest.mark.parametrize(
    ("run_table", "detectors", "field", "line", "match"),
    [
        (f'out = "s3://k:{SECRET}@b/run"', "length", "run.out", 4, 'add report_dir = "FOLDER"'),
        ('out = "runs/a"\nreport_dir = "r"', "length", "run.report_dir", 5, "Remove report_dir"),
        (
            f'out = "s3://k:{SECRET}@b/run"\nreport_dir = "s3://b/tables"',
            "length",
            "run.report_dir",
            5,
            "report_dir is a local folder",
        ),
    ],
)
def test_where_a_run_config_goes_is_checked_naming_the_line_and_key(
    tmp_path, capsys, run_table, detectors, field, line, match
):
    config = tmp_path / "run.toml"
    config.write_text(
        f'detectors = ["{detectors}"]\n\n[run]\n{run_table}\n[[datasets]]\nname = "nq-open"\n'
    )
    with pytest.raises(InvalidInputError, match=match) as info:
        load_run_config(config)
    assert (info.value.field, info.value.line, info.value.path) == (field, line, str(config))
    assert SECRET not in str(info.value)
    assert main(["-q", "run", str(config)]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err and SECRET not in err
    assert not (tmp_path / "r").exists() and not (tmp_path / "runs").exists()
