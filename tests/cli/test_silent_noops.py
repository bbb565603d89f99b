"""Mistakes that used to measure nothing without a word are errors with a way out."""

from __future__ import annotations

import pytest

from realitycheck.cli import main


def _csv(tmp_path, labels=("yes", "no", "yes", "no", "yes", "no")):
    path = tmp_path / "data.csv"
    rows = [f"q{i},answer {'word ' * i},{lab}" for i, lab in enumerate(labels)]
    path.write_text("qid,answer,label\n" + "\n".join(rows) + "\n")
    return path


def _key(path):
    return f"files[path={path},text=answer,columns=example_id:qid,positive=yes,negative=no]"


def _evaluate(tmp_path, path, *extra):
    key = _key(path)
    return main(
        ["-q", "evaluate", "-d", key, "-D", "length", "--out", str(tmp_path / "run")]
        + ["--no-report", "--n-resamples", "20", *extra]
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["-r", "humn"],
            "field 'references': The run holds no labeler 'humn'. Did you mean 'human'?",
        ),
        (["--reference", "humna"], "The run holds no labeler 'humna'. Did you mean 'human'?"),
        (
            ["--threshold", "lenght=5"],
            "field 'thresholds': The run holds no detector 'lenght'. Did you mean 'length'?",
        ),
    ],
)
def test_unknown_keys_are_errors_with_did_you_mean(tmp_path, capsys, extra, message):
    assert _evaluate(tmp_path, _csv(tmp_path), *extra) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_known_keys_still_work(tmp_path, capsys):
    assert _evaluate(tmp_path, _csv(tmp_path), "-r", "human", "--threshold", "length=2") == 0
    metrics = (tmp_path / "run" / "metrics.csv").read_text()
    assert metrics.count("\n") > 1 and "threshold given by the user" in metrics


def test_no_metric_rows_says_why_and_fails(tmp_path, capsys):
    assert _evaluate(tmp_path, _csv(tmp_path, labels=[""] * 6)) == 2
    err = capsys.readouterr().err
    assert "The evaluation produced no metric rows" in err
    assert "references with verdicts: none" in err
    assert "labelers whose every label is empty (None): human" in err


def test_two_columns_with_one_name_are_an_error(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_text("qid,answer,answer\nq1,a,b\n")
    assert _evaluate(tmp_path, path) == 2
    err = capsys.readouterr().err
    assert f"{path}, line 1, field 'answer': The header has two columns named 'answer'" in err


def test_a_folder_reused_for_another_dataset_says_so(tmp_path, capsys):
    first = _csv(tmp_path)
    assert _evaluate(tmp_path, first) == 0
    other = tmp_path / "other" / "data.csv"
    other.parent.mkdir()
    other.write_text(first.read_text())
    capsys.readouterr()
    assert _evaluate(tmp_path, other) == 0
    err = capsys.readouterr().err
    assert f"note: the run also holds files:{first}, loaded by earlier commands" in err


def test_a_detector_whose_every_value_is_missing_says_so(tmp_path, capsys):
    key = (
        f"files[path={_csv(tmp_path)},text=answer,columns=example_id:qid,positive=yes,negative=no]"
    )
    args = ["detect", "-d", key, "-D", "mean_len", "-D", "length", "--out", str(tmp_path / "run")]
    assert main(["-q", *args]) == 0
    printed = capsys.readouterr()
    assert "mean_len: 0 computed, 6 missing, 0 already stored" in printed.out
    assert "length: 6 computed, 0 already stored" in printed.out
    assert "mean_len: missing because the dataset's responses carry no samples" in printed.err


def test_the_report_never_says_a_detector_without_values_was_evaluated(tmp_path):
    key = _key(_csv(tmp_path))
    out = tmp_path / "run"
    args = ["-q", "evaluate", "-d", key, "-D", "mean_len", "-D", "length", "--out", str(out)]
    assert main([*args, "--n-resamples", "20"]) == 0
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "Only these detectors were evaluated: length." in markdown
    assert "have no value for any response, so nothing was measured for them: mean\\_len" in (
        markdown
    )
