"""The demo on a cut-down plan: its reference reaches evaluate, the studies and the report.

Piped (stdout and stderr not a terminal), it prints plain progress lines by
dataset and study, then its headline findings in words.
"""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from _study_helpers import record_workers
from click.testing import CliRunner

from realitycheck.analysis import Bootstrap
from realitycheck.cli import cli, main
from realitycheck.runner import _demo
from realitycheck.store import RunStore, load_results

STAMP = r"\[\s*\d+\.\d s\] "
"""A plain progress line's start, as in tests/cli/test_progress_not_a_terminal.py."""


def _use_small_plan(monkeypatch, detectors=("length",)):
    monkeypatch.setattr(_demo, "DEMO_PLAN", {"faithbench": ((), detectors)})
    # Nothing embeds here, so nothing loads the embedding model.
    monkeypatch.setattr(_demo.embeddings, "warm_up", lambda: pytest.fail("warmed up"))
    monkeypatch.setattr(_demo, "ALL", "leaderboard")  # one study that reads the reference


@pytest.fixture
def small_plan(monkeypatch):
    _use_small_plan(monkeypatch)


@dataclass(frozen=True)
class PipedDemo:
    """One ``demo`` command whose stdout and stderr were not a terminal, and what it printed."""

    out: Path
    exit_code: int
    stdout: str
    stderr: str
    workers: list  # the ``workers`` given to the studies
    rerun: _demo.DemoResult  # the same run again through the API, into the same folder
    rerun_workers: list


@pytest.fixture(scope="module")
def piped_demo(tmp_path_factory):
    """One piped ``demo`` command (length and source_overlap), shared by the tests that read it.

    Then the same run again through the API (``run_demo``, everything reused).
    """
    out = tmp_path_factory.mktemp("piped") / "demo"
    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as monkeypatch:
        _use_small_plan(monkeypatch, ("length", "source_overlap"))
        given = record_workers(monkeypatch, _demo, "run_studies")
        with redirect_stdout(stdout), redirect_stderr(stderr):
            code = main(["demo", "--report-dir", str(out), "--n-resamples", "20"])
        by_the_command = list(given)
        given.clear()
        rerun = _demo.run_demo(out, bootstrap=Bootstrap(n_resamples=20))
    return PipedDemo(out, code, stdout.getvalue(), stderr.getvalue(), by_the_command, rerun, given)


def test_demo_measures_against_the_reference_it_is_given(small_plan, tmp_path):
    out = tmp_path / "demo"
    result = CliRunner().invoke(
        cli,
        ["demo", "--report-dir", str(out), "--n-resamples", "20", "--reference", "recorded:gpt_4o"],
    )
    assert result.exit_code == 0, result.output
    store = RunStore(out / "run")
    metrics = store.frame("metrics")
    assert metrics["labeler"].iloc[0] == "recorded:gpt_4o"
    agreement = store.frame("agreement")
    assert len(agreement) and set(agreement["reference"]) == {"recorded:gpt_4o"}
    (leaderboard,) = load_results(store)
    assert leaderboard.spec["params"]["reference"] == "recorded:gpt_4o"
    assert store.read_manifest()["config"]["evaluate"]["reference"] == "recorded:gpt_4o"
    assert store.read_manifest()["config"]["demo_studies"] == ["leaderboard"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "recorded:gpt_4o" in html


def test_demo_exits_non_zero_when_a_study_fails_and_keeps_the_others(
    small_plan, tmp_path, monkeypatch, capsys
):
    from realitycheck.studies.leaderboard import Leaderboard

    def broken(self, data, bootstrap):
        raise ValueError("forced failure")

    monkeypatch.setattr(Leaderboard, "analyse", broken)
    out = tmp_path / "demo"
    assert main(["demo", "--report-dir", str(out), "--n-resamples", "20"]) == 2
    printed = capsys.readouterr()
    assert "1 of 1 studies failed: leaderboard (ValueError: forced failure)" in printed.err
    assert (out / "report.html").exists()
    (stored,) = load_results(RunStore(out / "run"))
    assert "forced failure" in stored.finding


def test_demo_trains_a_score_probe_and_no_embedding_probe_on_the_issue_datasets_only():
    from realitycheck.detectors import detectors
    from realitycheck.studies import studies

    keys = _demo.demo_study_keys()
    assert len(keys) == len(studies.names())
    (key,) = [k for k in keys if k.startswith("train_noise")]
    study = studies.create_from_key(key)
    assert study.datasets == ("faithbench", "ragtruth", "halueval_general")
    assert study.weak_labelers == ("knowledge_f1", "rouge_l")
    (scores,) = (detectors.create_from_key(k) for k in study.detectors)
    from realitycheck.detectors.probe import score_features

    assert not scores.embedding
    stored = [*_demo.DEMO_DETECTORS, "recorded:hhem-2.1", "recorded:gpt_4o", "probe"]
    assert score_features(scores.scores, stored) == sorted(_demo.DEMO_DETECTORS)
    (noise,) = [studies.create_from_key(k) for k in keys if k.startswith("label_noise")]
    assert noise.repetitions == _demo.LABEL_NOISE_REPETITIONS == 2


def test_the_demo_command_computes_studies_on_every_core_and_the_api_here(piped_demo):
    assert piped_demo.workers == [None]
    assert piped_demo.rerun_workers == [1]


def test_the_demo_exits_0_on_the_real_data_and_3_when_a_stage_had_failures(
    piped_demo, small_plan, tmp_path, monkeypatch, capsys
):
    assert piped_demo.exit_code == 0, piped_demo.stderr
    assert "items failed" not in piped_demo.stdout + piped_demo.stderr
    out = str(tmp_path / "demo")
    real_detect = _demo.detect

    def failing_detect(*args, **kwargs):
        report = real_detect(*args, **kwargs)
        report.failed["length"] = 2
        report.count_failures("length", {"HTTP 503 (request 1)": 1, "HTTP 503 (request 2)": 1})
        return report

    monkeypatch.setattr(_demo, "detect", failing_detect)
    assert main(["-q", "demo", "--report-dir", out, "--n-resamples", "20"]) == 3
    err = capsys.readouterr().err
    assert "error: 2 items failed (length: 2)" in err
    assert "commonest error (2 times, length): HTTP 503 (request 1)" in err
    assert main(["-q", "demo", "--report-dir", out, "--n-resamples", "20", "--allow-failures"]) == 0


def test_the_first_findings_come_before_the_embedding_components_and_the_studies(
    tmp_path, monkeypatch
):
    # source_overlap stands in for the MiniLM components, which a test cannot afford.
    monkeypatch.setattr(_demo, "DEMO_PLAN", {"faithbench": ((), ("length", "source_overlap"))})
    monkeypatch.setattr(_demo, "EMBEDDING_COMPONENTS", frozenset({"source_overlap"}))
    monkeypatch.setattr(_demo, "ALL", "leaderboard")
    warmed: list[int] = []  # the embedding model starts loading beside the first stages
    monkeypatch.setattr(_demo.embeddings, "warm_up", lambda: warmed.append(len(seen)))
    seen: list[tuple[set[str], int, tuple[str, ...]]] = []

    def first(findings):
        store = RunStore(tmp_path / "demo" / "run")
        detectors = set(store.frame("scores", columns=["detector"])["detector"])
        seen.append((detectors, len(load_results(store)), findings))

    result = _demo.run_demo(
        tmp_path / "demo", bootstrap=Bootstrap(n_resamples=20), on_first_findings=first
    )
    ((detectors, n_studies, findings),) = seen
    assert warmed == [0]  # once, before the first findings
    assert "length" in detectors and "source_overlap" not in detectors and n_studies == 0
    assert findings and all(isinstance(f, str) for f in findings)
    measured = set(result.evaluation.metrics["detector"])
    assert {"length", "source_overlap"} <= measured  # evaluated again after the second round


def test_the_demo_command_prints_its_first_findings_before_the_last(piped_demo):
    assert piped_demo.exit_code == 0, piped_demo.stderr
    assert (piped_demo.out / "report.html").exists()
    first = piped_demo.stdout.index("first findings after")
    assert first < piped_demo.stdout.index("key findings:")


def test_a_piped_demo_prints_its_steps_by_dataset_and_its_studies_then_has_headlines(piped_demo):
    assert piped_demo.exit_code == 0, piped_demo.stderr
    out, err = piped_demo.stdout, piped_demo.stderr
    assert "\x1b" not in out + err and "\r" not in out + err  # plain lines, no escapes
    # The demo ends with its headline findings in words, after the report's path.
    tail = out.split("report: ", 1)[1].splitlines()
    assert tail[1] == "key findings:" and tail[2].startswith("  - Best detector against")
    for step in (
        r"detector length on faithbench: [\d,]+ of [\d,]+ done in \d+\.\d s",
        r"detector source_overlap on faithbench: [\d,]+ of [\d,]+ done in \d+\.\d s",
        r"study leaderboard \(1 of 1\)…",
        r"study leaderboard \(1 of 1\) done \(\+\d+\.\d s\)",
    ):
        assert len(re.findall(rf"^{STAMP}{step}$", err, re.M)) == 1, (step, err)
    # Evaluated twice: quickly for the first findings, then with the run's bootstrap.
    evaluated = r"evaluating: [\d,]+ of [\d,]+ done in \d+\.\d s"
    assert len(re.findall(rf"^{STAMP}{evaluated}$", err, re.M)) == 2, err
    assert out.index("first findings after") < out.index("report: ")
    # The same run again through the API: everything is reused, the headlines read its tables.
    findings = piped_demo.rerun.findings
    assert 2 <= len(findings) <= 3
    assert findings[0].startswith(
        "Best detector against the response-length baseline on faithbench (AUROC against "
        "human labels, all responses; difference with a paired bootstrap interval): "
    )
    assert findings[1].startswith("The labeler that agrees least with human labels: ")
