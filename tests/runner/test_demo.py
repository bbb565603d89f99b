"""The demo on a cut-down plan: its reference reaches evaluate, the studies and the report."""

from __future__ import annotations

import pytest
from _study_helpers import record_workers
from click.testing import CliRunner

from realitycheck.analysis import Bootstrap
from realitycheck.cli import cli, main
from realitycheck.runner import _demo
from realitycheck.store import RunStore, load_results


def _use_small_plan(monkeypatch):
    monkeypatch.setattr(_demo, "DEMO_PLAN", {"faithbench": ((), ("length",))})
    # Nothing embeds here, so nothing loads the embedding model.
    monkeypatch.setattr(_demo.embeddings, "warm_up", lambda: pytest.fail("warmed up"))
    monkeypatch.setattr(_demo, "ALL", "leaderboard")  # one study that reads the reference


@pytest.fixture
def small_plan(monkeypatch):
    _use_small_plan(monkeypatch)


@pytest.fixture(scope="module")
def plain_demo(tmp_path_factory):
    """One plain ``demo`` command on the small plan, shared by the tests that only read it.

    Returns the output folder, the command's result and the ``workers`` given to
    the studies.
    """
    out = tmp_path_factory.mktemp("plain") / "demo"
    with pytest.MonkeyPatch.context() as monkeypatch:
        _use_small_plan(monkeypatch)
        given = record_workers(monkeypatch, _demo, "run_studies")
        result = CliRunner().invoke(cli, ["demo", "--report-dir", str(out), "--n-resamples", "20"])
    return out, result, given


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


def test_the_demo_command_computes_studies_on_every_core_and_the_api_here(
    plain_demo, small_plan, tmp_path, monkeypatch
):
    assert plain_demo[2] == [None]
    given = record_workers(monkeypatch, _demo, "run_studies")
    _demo.run_demo(tmp_path / "api", bootstrap=Bootstrap(n_resamples=20))
    assert given == [1]


def test_the_demo_exits_0_on_the_real_data_and_3_when_a_stage_had_failures(
    plain_demo, small_plan, tmp_path, monkeypatch, capsys
):
    _, result, _ = plain_demo
    assert result.exit_code == 0, result.output
    assert "items failed" not in result.output
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


def test_the_demo_command_prints_its_first_findings_before_the_last(plain_demo):
    out, result, _ = plain_demo
    assert result.exit_code == 0, result.output
    assert (out / "report.html").exists()
    first = result.output.index("first findings after")
    assert first < result.output.index("key findings:")
