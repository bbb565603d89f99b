"""Studies on a run on S3 (moto): the run is only read, the results go to a local --report-dir."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from object_storage import SECRET, make_bucket, objects, s3_uri

from realitycheck import RunStore
from realitycheck.cli import main
from realitycheck.errors import RunFolderError
from realitycheck.runner import run_studies

STUDIES = "length,leaderboard,labeler_shift"
N_RESAMPLES = ["--n-resamples", "30"]


def _dataset(tmp_path: Path, fruit_answers) -> str:
    """A user's file of 40 answers by two models, the long ones wrong (human labels)."""
    path = fruit_answers(tmp_path / "mine.jsonl", 40)
    return (
        f"files[path={path},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )


@pytest.fixture(scope="module")
def s3_run(s3_endpoint, tmp_path_factory, fruit_answers) -> str:
    """The URI of an evaluated run on S3 (rouge_l labels, length scores, human labels).

    Shared by this module's tests, which only read it (a test that wrote to it would fail).
    """
    folder = tmp_path_factory.mktemp("s3-run")
    make_bucket(s3_endpoint, "studies-bucket")
    uri = s3_uri(s3_endpoint, "studies-bucket", "run")
    args = [
        "-q",
        "evaluate",
        "-d",
        _dataset(folder, fruit_answers),
        "-l",
        "rouge_l",
        "-D",
        "length",
        "--no-report",  # the module's tests read the studies' reports, not this one
    ]
    report = folder / "evaluate-report"
    assert main([*args, *N_RESAMPLES, "--out", uri, "--report-dir", str(report)]) == 0
    return uri


def _local_copy(uri: str, target: Path) -> Path:
    """The run's objects copied into a local folder by pyarrow, outside realitycheck."""
    folder = RunStore(uri).remote
    assert folder is not None
    pafs.copy_files(
        folder.root,
        str(target),
        source_filesystem=folder.fs,
        destination_filesystem=pafs.LocalFileSystem(),
    )
    return target


def _results(folder: Path) -> dict[str, tuple[dict, dict[str, str]]]:
    """Each study folder under ``folder/studies``: its result.json and its CSV tables' text."""
    out = {}
    for study in sorted((folder / "studies").iterdir()):
        meta = json.loads((study / "result.json").read_text())
        out[study.name] = (meta, {p.name: p.read_text() for p in sorted(study.glob("*.csv"))})
    return out


def test_studies_on_s3_give_the_tables_of_a_local_copy_in_report_dir_and_its_report(
    s3_run, tmp_path, capsys
):
    local = _local_copy(s3_run, tmp_path / "copy")
    before = objects(s3_run)
    out = tmp_path / "out"
    args = ["-q", "study", STUDIES, "--run", s3_run, "--report-dir", str(out)]
    assert main([*args, *N_RESAMPLES]) == 0
    assert main(["-q", "study", STUDIES, "--run", str(local), *N_RESAMPLES]) == 0
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    ours, theirs = _results(out), _results(local)
    assert len(ours) == 3 and ours.keys() == theirs.keys()
    for name, (meta, tables) in ours.items():
        assert tables and any(text.count("\n") > 1 for text in tables.values()), name
        assert (meta, tables) == theirs[name]
    # The report of the run includes the studies of the folder it is written to, only.
    elsewhere = tmp_path / "elsewhere"
    assert main(["-q", "report", "--run", s3_run, "--report-dir", str(elsewhere)]) == 0
    html, other = ((f / "report.html").read_text() for f in (out, elsewhere))
    assert all(f"({name})</h3>" in html for name in ours)  # written by the study command
    assert not any(f"({name})</h3>" in other for name in ours)
    assert "No study has been run on this run" in other and SECRET not in html + other
    assert main(["-q", "report", "--run", s3_run, "--report-dir", str(out)]) == 0
    assert (out / "report.html").read_text().count("</h3>") == html.count("</h3>")
    assert objects(s3_run) == before  # read only: no object added, changed or removed


def test_studies_on_s3_without_report_dir_are_refused_before_any_work(s3_run, tmp_path, capsys):
    before = objects(s3_run)
    capsys.readouterr()
    assert main(["-q", "study", "length", "--run", s3_run, *N_RESAMPLES]) == 2
    err = capsys.readouterr().err
    assert "--report-dir" in err and "object storage" in err
    assert "Traceback" not in err and SECRET not in err
    assert objects(s3_run) == before and not Path("s3:").exists()
    with pytest.raises(RunFolderError, match="folder=DIR") as info:
        run_studies(RunStore(s3_run), ["no_such_study"])  # refused before the key is read
    assert SECRET not in str(info.value)


def test_report_dir_on_a_local_run_is_refused_naming_where_its_studies_go(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    args = ["-q", "study", "length", "--run", str(run), "--report-dir", str(tmp_path / "o")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--report-dir is for a run on object storage" in err and str(run / "studies") in err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_a_models_file_is_the_one_thing_a_study_records_in_a_run_on_s3(
    s3_bucket, tmp_path, capsys, fruit_answers
):
    from realitycheck.records.model_info import ModelInfo
    from realitycheck.store import RunData

    uri = s3_bucket("models")
    assert (
        main(
            ["-q", "detect", "-d", _dataset(tmp_path, fruit_answers), "-D", "length", "--out", uri]
        )
        == 0
    )
    before = objects(uri)
    models = tmp_path / "models.csv"
    models.write_text("model,family,size\nmodel-a,fam,1e9\nmodel-b,fam,7e9\n")
    args = ["-q", "study", "length", "--run", uri, "--out", str(tmp_path / "out"), "--no-report"]
    assert main([*args, *N_RESAMPLES, "--models", str(models)]) == 0, capsys.readouterr().err
    after = objects(uri)
    assert after.keys() == before.keys()
    assert [name for name in after if after[name] != before[name]] == ["manifest.json"]
    assert RunData(RunStore(uri)).models == {
        "model-a": ModelInfo(model="model-a", family="fam", size=1e9),
        "model-b": ModelInfo(model="model-b", family="fam", size=7e9),
    }
    assert (tmp_path / "out" / "studies" / "length" / "result.json").exists()
