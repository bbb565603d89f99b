"""`study all` runs every study: a failing one is stored with its error, the rest go on."""

import json

import pytest
from _study_helpers import record_workers
from _study_helpers import toy_store as _store

from realitycheck import RunStore
from realitycheck.cli import main
from realitycheck.runner import run_studies
from realitycheck.store import load_results
from realitycheck.studies import studies
from realitycheck.studies.qa_accuracy import QaAccuracy

BOOT = ["--n-resamples", "20"]


def _boom(self, data, bootstrap):
    raise ValueError("cannot reindex on an axis with duplicate labels")


def _by_study(store):
    return {r.study: r for r in load_results(store)}


def test_a_failing_study_is_stored_with_its_error_and_the_others_run(tmp_path, monkeypatch):
    store = _store(tmp_path / "run")
    monkeypatch.setattr(QaAccuracy, "analyse", _boom)
    runs = run_studies(store, ["length", "qa_accuracy", "leaderboard"])
    assert [r.result.study for r in runs] == ["length", "qa_accuracy", "leaderboard"]
    assert [bool(r.error) for r in runs] == [False, True, False]
    assert runs[1].error == "ValueError: cannot reindex on an axis with duplicate labels"
    stored = _by_study(store)
    assert set(stored) == {"length", "qa_accuracy", "leaderboard"}
    failed = stored["qa_accuracy"]
    assert failed.finding.startswith("This study failed")
    assert "ValueError: cannot reindex on an axis with duplicate labels" in failed.finding
    assert failed.tables == () and failed.figures == ()
    assert stored["leaderboard"].tables


def test_raise_errors_lets_the_exception_through(tmp_path, monkeypatch):
    store = _store(tmp_path / "run")
    monkeypatch.setattr(QaAccuracy, "analyse", _boom)
    with pytest.raises(ValueError, match="duplicate labels"):
        run_studies(store, ["qa_accuracy"], raise_errors=True)


def test_an_interruption_is_not_recorded_as_a_failure(tmp_path, monkeypatch):
    store = _store(tmp_path / "run")

    def interrupted(self, data, bootstrap):
        raise KeyboardInterrupt

    monkeypatch.setattr(QaAccuracy, "analyse", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_studies(store, ["length", "qa_accuracy", "leaderboard"])
    assert set(_by_study(store)) == {"length"}


def test_study_all_runs_every_study_and_exits_non_zero_naming_the_failed(
    tmp_path, monkeypatch, capsys
):
    store = _store(tmp_path / "run")
    assert main(["-q", "study", "qa_accuracy", "--run", str(store.path), "--no-report", *BOOT]) == 0
    assert _by_study(store)["qa_accuracy"].tables  # a good result, replaced below
    capsys.readouterr()
    monkeypatch.setattr(QaAccuracy, "analyse", _boom)
    # One worker: the patched study must run in this process (a worker would not see the patch).
    code = main(["-q", "study", "all", "--run", str(store.path), "--workers", "1", *BOOT])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        f"1 of {len(studies.names())} studies failed: qa_accuracy (ValueError: cannot reindex"
        in err
    )
    stored = _by_study(store)
    assert set(stored) == set(studies.names())
    assert stored["qa_accuracy"].finding.startswith("This study failed")
    assert stored["qa_accuracy"].tables == ()
    meta = json.loads((store.path / "studies" / "qa_accuracy" / "result.json").read_text())
    assert "cannot reindex" in meta["finding"]
    # The report was written after every study and shows the failure in its section.
    html = (store.path / "report.html").read_text(encoding="utf-8")
    assert "This study failed" in html and "cannot reindex on an axis" in html


def test_study_exits_zero_when_nothing_failed(tmp_path):
    store = _store(tmp_path / "run")
    # In this process: the exit code does not depend on where the studies ran, and
    # test_study_workers.py checks the worker pool.
    study = ["-q", "study", "length,leaderboard", "--run", str(store.path), "--workers", "1"]
    assert main([*study, "--no-report", *BOOT]) == 0


def _run_config(tmp_path, executor_table=""):
    rows = [
        {
            "qid": f"q{i}",
            "task": "qa",
            "question": f"Q{i}?",
            "references": "Paris",
            "answer": "Paris " * (1 + i % 3),
            "wrong": i % 2,
        }
        for i in range(12)
    ]
    data = tmp_path / "answers.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = tmp_path / "run.toml"
    config.write_text(
        'detectors = ["length"]\n'
        'studies = ["qa_accuracy", "length"]\n'
        f'[run]\nout = "{tmp_path / "out"}"\nreport = false\n'
        '[[datasets]]\nname = "files"\n'
        f'params = {{ path = "{data}", text = "answer", label = "wrong", '
        'columns = "example_id:qid" }\n'
        "[bootstrap]\nn_resamples = 20\n" + executor_table
    )
    return config


# The patched study fails only in this process: one worker keeps the studies here.
@pytest.mark.parametrize(
    ("table", "flags"), [("", ["--workers", "1"]), ("[executor]\nworkers = 1\n", [])]
)
def test_run_config_exits_non_zero_naming_a_failed_study(
    tmp_path, monkeypatch, capsys, table, flags
):
    config = _run_config(tmp_path, table)
    monkeypatch.setattr(QaAccuracy, "analyse", _boom)
    assert main(["-q", "run", str(config), *flags]) == 2
    assert "1 of 2 studies failed: qa_accuracy (ValueError" in capsys.readouterr().err
    stored = _by_study(RunStore(tmp_path / "out"))
    assert stored["length"].tables and stored["qa_accuracy"].finding.startswith("This study failed")


@pytest.mark.parametrize(
    ("table", "flags", "workers"),
    [
        ("", [], None),
        ("[executor]\nworkers = 3\n", [], 3),
        ("[executor]\nworkers = 3\n", ["--workers", "2"], 2),
    ],
)
def test_run_config_computes_its_studies_on_the_workers_it_is_given(
    tmp_path, monkeypatch, table, flags, workers
):
    import realitycheck.runner._run as run_module

    # Pools are tested in test_study_workers: here the studies run in this process.
    given = record_workers(monkeypatch, run_module, "run_studies", run_with=1)
    assert main(["-q", "run", str(_run_config(tmp_path, table)), *flags]) == 0
    assert given == [workers]
    assert set(_by_study(RunStore(tmp_path / "out"))) == {"qa_accuracy", "length"}


@pytest.mark.parametrize(("table", "workers"), [("", 1), ("[executor]\nworkers = 2\n", 2)])
def test_run_config_from_python_keeps_its_studies_here_unless_the_config_says(
    tmp_path, monkeypatch, table, workers
):
    import realitycheck.runner._run as run_module
    from realitycheck.runner import load_run_config, run_config

    given = record_workers(monkeypatch, run_module, "run_studies", run_with=1)
    run_config(load_run_config(_run_config(tmp_path, table)))  # a script that has no main guard
    assert given == [workers]
