"""``--out`` names the run folder; where it named an output folder it is renamed.

``report``, ``study`` and ``demo`` write tables and reports to ``--report-dir``,
``annotate export`` its files to ``--export-dir``. Their old ``--out`` still
works in this release, with a warning that names the new spelling, and is no
longer shown in ``--help``.
"""

from __future__ import annotations

import pytest

from realitycheck.cli import main

WARNING = "--out is now {new} (--out names the run folder, as in label, detect and evaluate)"


def test_report_out_still_writes_where_report_dir_would_with_a_warning(tmp_path, capsys):
    run, out = tmp_path / "run", tmp_path / "elsewhere"
    run.mkdir()
    assert main(["-q", "report", "--run", str(run), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert f"warning: report {WARNING.format(new='--report-dir')}" in printed.err
    assert "the old spelling still works in this release" in printed.err
    assert f"report: {out / 'report.html'}" in printed.out
    assert (out / "report.html").is_file() and not (run / "report.html").exists()


def test_the_new_spelling_prints_no_warning(tmp_path, capsys):
    run, out = tmp_path / "run", tmp_path / "elsewhere"
    run.mkdir()
    assert main(["-q", "report", "--run", str(run), "--report-dir", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert (out / "report.html").is_file()


def test_study_out_reaches_the_report_dir_check(tmp_path, capsys):
    # On a run folder, --report-dir is refused; the old --out is refused the same way.
    run = tmp_path / "run"
    run.mkdir()
    code = main(["-q", "study", "length", "--run", str(run), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"warning: study {WARNING.format(new='--report-dir')}" in err
    assert "--report-dir is for a run on object storage" in err
    assert not (tmp_path / "o").exists()


def test_demo_out_replaces_the_default_report_dir(tmp_path, capsys):
    # Refused before any work: the value given as --out, not 'demo-report', was checked.
    assert main(["-q", "demo", "--out", "s3://bucket/demo"]) == 2
    err = capsys.readouterr().err
    assert f"warning: demo {WARNING.format(new='--report-dir')}" in err
    assert "field '--report-dir'" in err and "s3://bucket/demo" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--run", "RUN", "--report-dir", "A", "--out", "B"],
        ["study", "length", "--run", "RUN", "--out", "B", "--report-dir", "A"],
        ["demo", "--report-dir", "A", "--out", "B"],
        ["annotate", "export", "--run", "RUN", "--export-dir", "A", "--out", "B"],
    ],
)
def test_both_spellings_with_different_folders_are_refused(tmp_path, capsys, args):
    args = [str(tmp_path / a) if a in ("RUN", "A", "B") else a for a in args]
    assert main(["-q", *args]) == 2
    err = capsys.readouterr().err
    new = "--export-dir" if "export" in args else "--report-dir"
    assert f"Give {new} only; --out is its old spelling." in err
    assert list(tmp_path.iterdir()) == []


def test_annotate_export_still_needs_its_folder(tmp_path, capsys):
    assert main(["annotate", "export", "--run", str(tmp_path)]) == 2
    assert "Missing option '--export-dir'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("verb", "new"),
    [
        (["report"], "--report-dir"),
        (["study"], "--report-dir"),
        (["demo"], "--report-dir"),
        (["annotate", "export"], "--export-dir"),
    ],
)
def test_help_shows_the_new_spelling_only(capsys, verb, new):
    assert main([*verb, "--help"]) == 0
    text = capsys.readouterr().out
    assert f"  {new} DIRECTORY" in text
    assert "--out" not in text
