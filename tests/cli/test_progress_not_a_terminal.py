"""Progress where the output is a log (a file, a pipe, CI, nohup): plain lines, no escapes.

On a terminal the rich bars stay; elsewhere each step prints one plain line
with its count and the seconds since the command began, the study loop names
each study, and the demo ends with its headline findings in words, escaped (a
piped demo run is in tests/runner/test_demo.py, beside the other tests reading
that run).
"""

from __future__ import annotations

import io
import re
import sys

import pandas as pd
import pytest

from realitycheck.cli import main
from realitycheck.cli._echo import echo_findings
from realitycheck.cli._progress import PlainProgress, RichProgress, progress_for_stderr
from realitycheck.pipeline import Evaluation
from realitycheck.progress import NullProgress, describe, scoped
from realitycheck.runner._headlines import headline_findings

STAMP = r"\[\s*\d+\.\d s\] "
"""A plain line's start: the seconds since the command began, ``[  12.3 s] ``."""
HOSTILE = "evil\x1b]52;c;ZXZpbA==\x07\u202emodel\nnext"
SHOWN = "evil[U+001B]]52;c;ZXZpbA==[U+0007][U+202E]model[U+000A]next"


@pytest.fixture
def fruit(tmp_path, fruit_answers):
    path = fruit_answers(tmp_path / "mine.jsonl", 6)
    return (
        f"files[path={path},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )


def _plain(printed) -> str:
    text = printed.out + printed.err
    assert "\x1b" not in text and "\r" not in text
    return printed.err


# -- plain lines from the command line -------------------------------------------------------


def test_each_stage_prints_one_plain_line_with_its_count_and_seconds(tmp_path, fruit, capsys):
    run = str(tmp_path / "run")
    assert main(["detect", "-d", fruit, "-D", "length,length[unit=tokens]", "--out", run]) == 0
    err = _plain(capsys.readouterr())
    for key in ("length", r"length\[unit=tokens\]"):
        found = re.findall(rf"^{STAMP}detector {key}: 6 of 6 done in \d+\.\d s$", err, re.M)
        assert len(found) == 1, err
    assert re.search(rf"^{STAMP}loading files\[.*\]: 6 done in \d+\.\d s$", err, re.M), err
    # A rerun computes nothing: no step runs, so no line but the loading.
    assert main(["detect", "-d", fruit, "-D", "length", "--out", run]) == 0
    assert "detector length:" not in _plain(capsys.readouterr())


def test_quiet_prints_no_progress_lines(tmp_path, fruit, capsys):
    assert main(["-q", "detect", "-d", fruit, "-D", "length", "--out", str(tmp_path / "r")]) == 0
    assert not re.search(STAMP, capsys.readouterr().err)


def test_the_study_loop_names_each_study_as_it_goes_and_when_it_is_done(tmp_path, fruit, capsys):
    run = str(tmp_path / "run")
    assert main(["-q", "detect", "-d", fruit, "-D", "length", "--out", run]) == 0
    capsys.readouterr()
    args = ["study", "length,leaderboard", "--run", run, "--workers", "1", "--n-resamples", "20"]
    assert main([*args, "--no-report"]) == 0
    printed = capsys.readouterr()
    err = _plain(printed)
    lines = [line for line in err.splitlines() if re.match(STAMP, line)]
    steps = [re.sub(r"\d+\.\d s", "T s", re.sub(STAMP, "", line)) for line in lines]
    assert steps == [
        "study length (1 of 2)…",
        "study length (1 of 2) done (+T s)",
        "study leaderboard (2 of 2)…",
        "study leaderboard (2 of 2) done (+T s)",
        "studies: 2 of 2 done in T s",
    ]
    # Each study is done before its finding is printed.
    assert printed.out.index("== length") < printed.out.index("== leaderboard")


# -- on a terminal: the rich bars ------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_rich_bars_are_drawn_and_no_plain_line(tmp_path, fruit, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    assert main(["detect", "-d", fruit, "-D", "length", "--out", str(tmp_path / "run")]) == 0
    drawn = terminal.getvalue()
    assert "\x1b[" in drawn  # the bars, redrawn in place
    assert "detector length" in drawn
    assert not re.search(STAMP, drawn)


def test_the_chosen_progress_follows_quiet_and_whether_stderr_is_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert isinstance(progress_for_stderr(), PlainProgress)
    assert isinstance(progress_for_stderr(quiet=True), NullProgress)
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert isinstance(progress_for_stderr(), RichProgress)
    assert isinstance(progress_for_stderr(quiet=True), NullProgress)


# -- the plain lines themselves --------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_progress_counts_reports_a_long_step_and_says_where_it_stopped(capsys):
    clock = _Clock()
    progress = PlainProgress(every=30.0, clock=clock)
    with progress.task("detector length", 300) as task:
        for _ in range(3):
            clock.now += 20.0
            task.advance(100)
    with pytest.raises(KeyboardInterrupt), progress.task("labeler rouge_l", 1000) as task:
        clock.now += 2.5
        task.advance(250)
        raise KeyboardInterrupt
    with progress.task("loading ragtruth", None):
        clock.now += 1.0
    assert capsys.readouterr().err.splitlines() == [
        "[  40.0 s] detector length: 200 of 300…",  # 30 s since the step began
        "[  60.0 s] detector length: 300 of 300 done in 60.0 s",
        "[  62.5 s] labeler rouge_l: stopped after 250 of 1,000 (2.5 s)",
        "[  63.5 s] loading ragtruth: done in 1.0 s",
    ]


def test_plain_progress_names_each_part_and_escapes_untrusted_names(capsys):
    clock = _Clock()
    progress = scoped(PlainProgress(clock=clock), HOSTILE)
    with progress.task(f"generate {HOSTILE}", 2) as task:
        describe(task, f"study {HOSTILE} (1 of 2)")
        clock.now += 4.0
        task.advance()
        task.advance()
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert err.splitlines() == [
        f"[   0.0 s] study {SHOWN} (1 of 2)…",
        f"[   4.0 s] study {SHOWN} (1 of 2) done (+4.0 s)",
        f"[   4.0 s] generate {SHOWN} on {SHOWN}: 2 of 2 done in 4.0 s",
    ]


def test_describe_is_ignored_by_a_task_that_cannot_show_it():
    class Counting:
        n = 0

        def advance(self, n: int = 1) -> None:
            self.n += n

    task = Counting()
    describe(task, "study length (1 of 1)")
    with NullProgress().task("x", 1) as null:
        describe(null, "anything")
    assert task.n == 0


# -- the demo's headline findings ------------------------------------------------------------


def _row(**kw):
    base = {"slice": "all", "n": 500, "n_positive": 200, "n_excluded": 0, "dataset": "ragtruth"}
    return {**base, **kw}


def _evaluation(detector: str = "embedding_grounding", labeler: str = "bleu") -> Evaluation:
    auroc = {"labeler": "human", "metric": "auroc"}
    metrics = pd.DataFrame(
        [
            _row(detector=detector, value=0.71, ci_low=0.69, ci_high=0.73, **auroc),
            _row(detector="length", value=0.60, ci_low=0.57, ci_high=0.63, **auroc),
            _row(detector="length[unit=tokens]", value=0.61, ci_low=0.58, ci_high=0.64, **auroc),
            _row(detector="source_overlap", value=0.41, ci_low=0.38, ci_high=0.44, **auroc),
            _row(detector="length", value=0.66, ci_low=0.6, ci_high=0.7, dataset="begin", **auroc),
            _row(detector="novel_numbers", value=0.52, ci_low=0.5, ci_high=0.55, dataset="begin")
            | auroc,
            # Another reference, another slice: not the headline's.
            _row(detector=detector, value=0.99, ci_low=0.98, ci_high=1.0, labeler="x")
            | {"metric": "auroc"},
        ]
    )
    kappa = {"reference": "human", "metric": "cohen_kappa"}
    agreement = pd.DataFrame(
        [
            _row(labeler=labeler, value=0.05, ci_low=0.01, ci_high=0.09, **kappa),
            _row(labeler="rouge_l", value=0.42, ci_low=0.38, ci_high=0.46, **kappa),
            _row(labeler="token_f1", value=0.30, ci_low=0.25, ci_high=0.35, **kappa),
        ]
    )
    return Evaluation(metrics=metrics, agreement=agreement, reference="human")


def test_the_headlines_name_the_best_detector_the_least_agreeing_labeler_and_a_wrong_way_score():
    best, least, wrong = headline_findings(_evaluation())
    assert best == (
        "Best detector against the response-length baseline (AUROC against human labels, all "
        "responses): higher on 1 of 2 datasets, by most on ragtruth: embedding_grounding 0.710 "
        "[0.690, 0.730] against length[unit=tokens] 0.610 [0.580, 0.640]; not on begin, where "
        "no detector beats length: there they may only measure length."
    )
    assert least.startswith(
        "The labeler that agrees least with human labels: bleu on ragtruth, Cohen's kappa "
        "0.050 [0.010, 0.090] (n = 500; "
    )
    assert "the most: rouge_l on ragtruth, kappa 0.420 [0.380, 0.460], of 3" in least
    assert wrong.startswith("Ranked the wrong way round against human labels")
    assert "source_overlap on ragtruth (AUROC 0.410 [0.380, 0.440], all responses)" in wrong


def test_a_score_ranked_the_wrong_way_on_all_responses_is_named_before_one_on_a_slice():
    evaluation = _evaluation()
    on_a_slice = _row(detector="a_first_name", value=0.3, ci_low=0.2, ci_high=0.4, slice="m=x")
    metrics = pd.concat(
        [evaluation.metrics, pd.DataFrame([on_a_slice | {"labeler": "human", "metric": "auroc"}])]
    )
    (*_, wrong) = headline_findings(Evaluation(metrics=metrics, agreement=evaluation.agreement))
    assert (
        "2 scores: source_overlap on ragtruth (AUROC 0.410 [0.380, 0.440], all responses) and "
        "a_first_name on ragtruth (AUROC 0.300 [0.200, 0.400], slice m=x). Check the sign of each"
    ) in wrong


def test_a_run_with_nothing_to_say_has_no_headlines(capsys):
    empty = Evaluation(metrics=pd.DataFrame(), agreement=pd.DataFrame(), reference="human")
    assert headline_findings(empty) == ()
    echo_findings(())
    assert capsys.readouterr().out == ""


def test_the_printed_headlines_escape_hostile_model_and_labeler_names(capsys):
    echo_findings(headline_findings(_evaluation(detector=HOSTILE, labeler=HOSTILE)))
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    lines = out.splitlines()
    assert lines[0] == "key findings:" and len(lines) == 4
    assert f"by most on ragtruth: {SHOWN} 0.710" in lines[1]
    assert f"agrees least with human labels: {SHOWN} on ragtruth" in lines[2]
