import subprocess
import sys

import pytest

from realitycheck.cli import main
from realitycheck.cli._app import split_keys


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["rouge_l,bleu"], ["rouge_l", "bleu"]),
        (
            ["rouge_l[threshold=0.5,use_stemmer=true]", "bleu"],
            ["rouge_l[threshold=0.5,use_stemmer=true]", "bleu"],
        ),
        ([" a , b[x=1,y=2] ,"], ["a", "b[x=1,y=2]"]),
    ],
)
def test_split_keys_keeps_commas_inside_brackets(values, expected):
    assert split_keys(values) == expected


def test_unknown_dataset_is_a_one_paragraph_error(capsys):
    code = main(["datasets", "describe", "ragtruht"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Did you mean 'ragtruth'" in err and "Available:" in err
    assert "Traceback" not in err


def test_missing_data_folder_says_how_to_fetch(tmp_path, capsys):
    code = main(["-q", "datasets", "describe", "ragtruth", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "realitycheck datasets fetch ragtruth" in err


def test_unknown_labeler_in_evaluate(tmp_path, capsys):
    code = main(["evaluate", "-d", "ragtruth", "-l", "rougel", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "Did you mean 'rouge_l'" in err


def test_console_script_exits_nonzero_without_traceback(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "realitycheck.cli._app", "datasets", "describe", "nope"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "There is no dataset named 'nope'" in out.stderr


def test_malformed_threshold_option(tmp_path, capsys):
    code = main(["evaluate", "-d", "ragtruth", "--threshold", "length", "--out", str(tmp_path)])
    assert code == 2
    assert "--threshold must be written KEY=NUMBER" in capsys.readouterr().err


def test_unknown_calibration_method_fails_before_any_work(tmp_path, capsys):
    out = tmp_path / "r"
    code = main(["evaluate", "-d", "ragtruth", "--calibration", "sigmoid", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert "'calibration' parameter of evaluate must be one of" in err
    assert not out.exists()


@pytest.mark.parametrize("verb", [["study", "length"], ["report"]])
@pytest.mark.parametrize("with_report_dir", [False, True])
def test_study_and_report_refuse_a_missing_run_folder_first(
    tmp_path, capsys, verb, with_report_dir
):
    out = ["--report-dir", str(tmp_path / "out")] if with_report_dir else []
    assert main(["-q", *verb, "--run", str(tmp_path / "nowhere"), *out]) == 2
    err = capsys.readouterr().err
    assert f"There is no run folder at {tmp_path / 'nowhere'}" in err and "--run" in err
    assert "Traceback" not in err and list(tmp_path.iterdir()) == []


def test_report_on_a_local_run_writes_to_its_report_dir(tmp_path, capsys):
    run, out = tmp_path / "run", tmp_path / "elsewhere"
    run.mkdir()
    assert main(["-q", "report", "--run", str(run), "--report-dir", str(out)]) == 0
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    assert (out / "report.html").is_file() and not (run / "report.html").exists()


def _commands(group, prefix=()):
    import click

    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def test_the_cli_module_docstring_names_every_registered_command():
    import re

    from realitycheck.cli import _app

    doc = _app.__doc__ or ""
    words = set(re.findall(r"[a-z]+", doc))
    commands = list(_commands(_app.cli))
    assert len(commands) >= 20  # 15 verbs, 5 subcommands today
    missing = [" ".join(c) for c in commands if not set(c) <= words]
    assert missing == []
