"""The command line warns of every AUROC ranked the wrong way round, as the report marks it.

A detector whose whole AUROC interval against the reference lies below 0.5
gets one warning line (detector, dataset and slice, AUROC [CI]) after the
evaluate stage; a good one, or one without an interval, gets none; a hostile
name reaches the terminal escaped.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pytest

import realitycheck.analysis
import realitycheck.report._cells
from realitycheck import (
    EvaluationConfig,
    Example,
    Label,
    MetricResult,
    Response,
    RunStore,
    Score,
    evaluate,
)
from realitycheck.analysis import Bootstrap
from realitycheck.cli import main
from realitycheck.cli._echo import echo_wrong_way, listener_for
from realitycheck.pipeline import Evaluation

LEAD = "warning: ranked the wrong way round: "
HOSTILE = "evil\x1b]8;;https://x.example\x07link\x1b]8;;\x07\x1b[2J\r\nforged line\u202etxt\x00"


def _write_csv(path: Path, n: int = 120) -> Path:
    """Answers with a human label, an inverted and a good score, and a judge's verdict."""
    rng = np.random.default_rng(3)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label", "verdict", "inv", "good"])
        for i in range(n):
            y = bool(rng.random() < 0.3)
            verdict = y if rng.random() < 0.9 else not y
            writer.writerow(
                [
                    f"answer {i}",
                    "yes" if y else "no",
                    "yes" if verdict else "no",
                    1 - y + 0.3 * rng.normal(),
                    y + 0.3 * rng.normal(),
                ]
            )
    return path


def _sides(frame: pd.DataFrame | pd.Series) -> tuple[str, str]:
    """The columns of the one measured and of its reference: metrics or agreement table."""
    names = frame.columns if isinstance(frame, pd.DataFrame) else frame.index
    return ("detector", "labeler") if "detector" in names else ("labeler", "reference")


def _line(row: pd.Series, reference: str, what: str = "detector") -> str:
    where = "all responses" if row["slice"] == "all" else f"slice {row['slice']}"
    measured = row[_sides(row)[0]]
    return (
        f"{LEAD}{what} {measured} on {row['dataset']}, {where}, against {reference} "
        f"labels: AUROC {row['value']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] "
        f"(n = {int(row['n']):,}), its whole interval below 0.5; a higher score means less "
        "likely hallucinated here: check its sign."
    )


def _auroc(frame: pd.DataFrame, detector: str, reference: str) -> pd.Series:
    measured, truth = _sides(frame)
    rows = frame[
        (frame[measured] == detector)
        & (frame[truth] == reference)
        & (frame["metric"] == "auroc")
        & (frame["slice"] == "all")
    ]
    assert len(rows) == 1
    return rows.iloc[0]


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(LEAD)]


def test_the_cli_and_the_report_judge_by_one_rule(evaluation, monkeypatch, capsys):
    assert realitycheck.report._cells.wrong_way is realitycheck.analysis.wrong_way
    # The command line asks realitycheck.analysis.wrong_way, not a copy of its own.
    monkeypatch.setattr(realitycheck.analysis, "wrong_way", lambda *args: True)
    echo_wrong_way(evaluation, "human")
    assert " good on d, all responses" in capsys.readouterr().err


def test_evaluate_warns_of_the_inverted_detector_only(tmp_path, capsys):
    path = _write_csv(tmp_path / "answers.csv")
    run = tmp_path / "run"
    dataset = f"files[path={path},name=mine,positive=yes,negative=no,scores=inv+good]"
    args = ["-q", "evaluate", "-d", dataset, "--n-resamples", "100", "--no-report"]
    assert main([*args, "--out", str(run)]) == 0
    err = capsys.readouterr().err
    metrics = pd.read_csv(run / "metrics.csv")  # written by the runner (no report)
    inverted = _auroc(metrics, "recorded:inv", "human")
    good = _auroc(metrics, "recorded:good", "human")
    assert inverted["ci_high"] < 0.5 < good["ci_low"]
    assert _warnings(err) == [_line(inverted, "human")]
    assert "recorded:good" not in err
    # The runner's metrics.csv carries the base rate after the positives.
    columns = list(metrics.columns)
    assert columns[columns.index("n_positive") + 1] == "base_rate"
    np.testing.assert_allclose(metrics["base_rate"], metrics["n_positive"] / metrics["n"])
    assert not (run / "report.html").exists()


def test_run_config_warns_against_its_own_reference(tmp_path, capsys):
    path = _write_csv(tmp_path / "answers.csv")
    config = tmp_path / "run.toml"
    config.write_text(
        'labelers = []\ndetectors = []\nstudies = []\nreference = "recorded:j"\n'
        '[run]\nout = "cfgrun"\ncache = false\nreport = false\n[bootstrap]\nn_resamples = 100\n'
        f'[[datasets]]\nname = "files"\nparams = {{ path = "{path}", positive = "yes", '
        'negative = "no", scores = ["inv", "good"], judges = ["j:verdict"] }\n'
    )
    assert main(["-q", "run", str(config)]) == 0
    err = capsys.readouterr().err
    metrics = pd.read_csv(tmp_path / "cfgrun" / "metrics.csv")
    inverted = _auroc(metrics, "recorded:inv", "recorded:j")
    assert inverted["ci_high"] < 0.5
    assert _auroc(metrics, "recorded:inv", "human")["ci_high"] < 0.5  # not the reference
    assert _warnings(err) == [_line(inverted, "recorded:j")]


def _build(path: Path) -> RunStore:
    """One dataset with a hostile name: an inverted, a good and a hostile inverted detector."""
    rng = np.random.default_rng(5)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for i in range(100):
        eid = f"d/{i}"
        examples.append(Example(example_id=eid, dataset="d", task="qa", question="q?"))
        rid = f"{eid}/m"
        y = bool(rng.random() < 0.35)
        responses.append(Response(response_id=rid, example_id=eid, model="m", text="t"))
        labels.append(Label(response_id=rid, labeler="human", hallucinated=y))
        inverse = 1 - float(y) + 0.3 * float(rng.normal())
        labels.append(Label(response_id=rid, labeler="judge", hallucinated=not y, score=inverse))
        values = {
            "inverted": 1 - float(y) + 0.3 * float(rng.normal()),
            "good": float(y) + 0.3 * float(rng.normal()),
            HOSTILE: 1 - float(y) + 0.3 * float(rng.normal()),
        }
        scores += [Score(response_id=rid, detector=d, value=v) for d, v in values.items()]
    for records in (examples, responses, labels, scores):
        store.append(records)
    evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=100)))
    return store


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    store = _build(tmp_path_factory.mktemp("wrong_way_cli") / "run")
    tiny = MetricResult(
        detector="tiny",
        labeler="human",
        metric="auroc",
        value=0.1,
        ci_low=math.nan,
        ci_high=math.nan,
        n=3,
        n_positive=1,
        n_excluded=0,
        dataset="d",
    )
    metrics = pd.concat([store.frame("metrics"), pd.DataFrame([dataclasses.asdict(tiny)])])
    return Evaluation(metrics=metrics, agreement=store.frame("agreement"))


def _context(**params: object) -> click.Context:
    ctx = click.Context(click.Command("evaluate"))
    ctx.params = dict(params)
    return ctx


def test_a_hostile_name_is_escaped_and_each_flag_is_one_line(evaluation, tmp_path, capsys):
    listener_for(_context(reference=None)).evaluation(evaluation, tmp_path)
    captured = capsys.readouterr()
    assert str(tmp_path / "metrics.csv") in captured.out
    err = captured.err
    for raw in ("\x1b", "\x07", "\x00", "\r", "\u202e"):
        assert raw not in err, repr(raw)
    lines = err.splitlines()
    assert lines and all(line.startswith(LEAD) for line in lines)  # no forged line
    assert len(lines) == 3  # inverted, the hostile one, the judge's score
    hostile = [line for line in lines if "evil" in line]
    assert len(hostile) == 1
    assert "evil[U+001B]]8;;https://x.example[U+0007]link" in hostile[0]
    assert "[U+000D][U+000A]forged line[U+202E]txt[U+0000]" in hostile[0]
    assert hostile[0].endswith("check its sign.")
    metrics = evaluation.metrics
    assert _line(_auroc(metrics, "inverted", "human"), "human") in lines
    judge = _auroc(evaluation.agreement, "judge", "human")
    assert _line(judge, "human", "the score of labeler") in lines
    assert not any(" good " in line or " tiny " in line for line in lines)


def test_the_reference_given_is_the_one_judged(evaluation, capsys):
    echo_wrong_way(evaluation, "judge")  # the detectors against the judge's verdicts
    err = capsys.readouterr().err
    lines = _warnings(err)
    judged = evaluation.metrics
    flagged = judged[(judged["labeler"] == "judge") & (judged["metric"] == "auroc")]
    expected = [
        r for _, r in flagged.iterrows() if r["ci_high"] < 0.5 and not math.isnan(r["ci_low"])
    ]
    assert expected  # the inverted detectors rank the judge's verdicts the wrong way too
    assert len(lines) == len(expected)
    assert all("against judge labels" in line for line in lines)
    echo_wrong_way(evaluation, "nobody")
    assert capsys.readouterr().err == ""
