"""Studies computed by worker processes store exactly what a serial run stores, in order."""

import os
from pathlib import Path

import pytest
from _study_helpers import (
    BrokenQaAccuracy,
    DyingQaAccuracy,
    EnvironmentQaAccuracy,
    record_workers,
    run_made,
    toy_store,
)

from realitycheck import RunStore
from realitycheck.analysis import Bootstrap
from realitycheck.errors import InvalidInputError
from realitycheck.runner import _studies, run_studies
from realitycheck.store import load_results
from realitycheck.studies import studies

KEYS = ["length", "qa_accuracy", "leaderboard"]
BOOT = Bootstrap(n_resamples=50)


def _files(run: Path) -> dict[str, bytes]:
    """Every file the studies wrote (tables, figures, result.json), by path under the run."""
    return {
        str(p.relative_to(run)): p.read_bytes()
        for p in sorted((run / "studies").rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def pooled(monkeypatch):
    """Count the runs that went through the worker pool."""
    return record_workers(monkeypatch, _studies, "_pooled_results")


def test_two_workers_store_the_same_files_and_order_as_one(tmp_path, pooled):
    serial_store, pool_store = toy_store(tmp_path / "serial"), toy_store(tmp_path / "pool")
    seen = []
    serial = run_studies(serial_store, KEYS, bootstrap=BOOT, workers=1)
    assert pooled == []
    pool = run_studies(
        pool_store, KEYS, bootstrap=BOOT, workers=2, on_result=lambda r: seen.append(r.result.study)
    )
    assert pooled == [2]
    assert [r.result.study for r in pool] == [r.result.study for r in serial] == KEYS
    assert seen == KEYS and not any(r.error for r in pool)
    assert [r.folder.relative_to(pool_store.path) for r in pool] == [
        r.folder.relative_to(serial_store.path) for r in serial
    ]
    expected = _files(serial_store.path)
    assert len(expected) > len(KEYS) and _files(pool_store.path) == expected
    for a, b in zip(serial, pool, strict=True):
        assert [t.name for t in a.result.tables] == [t.name for t in b.result.tables]
        for x, y in zip(a.result.tables, b.result.tables, strict=True):
            assert x.frame.equals(y.frame)


def test_a_study_failing_in_a_worker_is_stored_by_name_and_the_others_finish(
    tmp_path, monkeypatch, pooled
):
    made = [studies.create("length"), BrokenQaAccuracy(), studies.create("leaderboard")]
    runs = run_made(tmp_path / "run", monkeypatch, made, bootstrap=BOOT, workers=2)
    assert pooled == [2]
    assert [r.result.study for r in runs] == ["length", "qa_accuracy", "leaderboard"]
    assert [r.error for r in runs] == ["", "ValueError: forced failure in a study worker", ""]
    stored = {r.study: r for r in load_results(RunStore(tmp_path / "run"))}
    assert stored["qa_accuracy"].finding.startswith("This study failed")
    assert "forced failure in a study worker" in stored["qa_accuracy"].finding
    assert stored["qa_accuracy"].tables == ()
    assert stored["length"].tables and stored["leaderboard"].tables


def test_a_worker_that_dies_is_reported_as_its_study_failing_not_a_hang(
    tmp_path, monkeypatch, pooled
):
    made = [studies.create("length"), DyingQaAccuracy(), studies.create("leaderboard")]
    runs = run_made(tmp_path / "run", monkeypatch, made, bootstrap=BOOT, workers=2)
    assert [r.result.study for r in runs] == ["length", "qa_accuracy", "leaderboard"]
    assert runs[1].error.startswith("BrokenProcessPool")
    # The studies the broken pool could not finish are stored as failed too, never lost.
    assert {r.study for r in load_results(RunStore(tmp_path / "run"))} == {
        "length",
        "qa_accuracy",
        "leaderboard",
    }
    assert all(bool(r.error) == (not r.result.tables) for r in runs)


def test_a_study_class_no_worker_can_import_keeps_every_study_here(tmp_path, monkeypatch, pooled):
    from realitycheck.studies.qa_accuracy import QaAccuracy

    class NotebookQaAccuracy(QaAccuracy):  # as a notebook cell defines one: not importable
        def analyse(self, data, bootstrap):
            return super().analyse(data, bootstrap)

    made = [studies.create("length"), NotebookQaAccuracy(), studies.create("leaderboard")]
    runs = run_made(tmp_path / "run", monkeypatch, made, bootstrap=BOOT, workers=2)
    assert pooled == []
    assert [r.result.study for r in runs] == ["length", "qa_accuracy", "leaderboard"]
    assert [r.error for r in runs] == ["", "", ""] and all(r.result.tables for r in runs)


@pytest.mark.parametrize(("outside", "worker"), [(None, "4"), ("12", "12")])
def test_workers_start_with_a_short_openblas_spin_unless_the_environment_sets_one(
    tmp_path, monkeypatch, outside, worker
):
    if outside is None:
        monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", outside)
    made = [EnvironmentQaAccuracy(), EnvironmentQaAccuracy()]
    runs = run_made(tmp_path / "run", monkeypatch, made, bootstrap=BOOT, workers=2)
    assert [r.result.finding for r in runs] == [worker, worker]
    assert os.environ.get("OPENBLAS_THREAD_TIMEOUT") == outside  # this process: unchanged


def test_raise_errors_and_a_single_study_run_here(tmp_path, pooled):
    store = toy_store(tmp_path / "run")
    run_studies(store, ["length"], bootstrap=BOOT, workers=None)
    run_studies(store, KEYS[:2], bootstrap=BOOT, workers=2, raise_errors=True)
    assert pooled == []


@pytest.mark.parametrize("workers", [0, -1])
def test_fewer_than_one_worker_is_refused_before_any_study_runs(tmp_path, workers):
    store = toy_store(tmp_path / "run")
    with pytest.raises(InvalidInputError, match="workers must be at least 1") as err:
        run_studies(store, KEYS, workers=workers)
    assert err.value.field == "workers"
    assert not (store.path / "studies").exists()


def test_study_command_refuses_zero_workers_without_a_traceback(tmp_path, capsys):
    from realitycheck.cli import main

    store = toy_store(tmp_path / "run")
    assert main(["-q", "study", "length", "--run", str(store.path), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "--workers" in err and "Traceback" not in err
    assert not (store.path / "studies").exists()


def test_unset_workers_is_one_per_usable_core_at_most_one_per_study(tmp_path, monkeypatch):
    # The count asked for is what is checked; the pool itself runs on one worker process
    # (three would each import the studies, the test above checks a pool of two).
    pooled = record_workers(monkeypatch, _studies, "_pooled_results", run_with=1)
    monkeypatch.setattr(_studies, "available_cores", lambda: 1)
    run_studies(toy_store(tmp_path / "one"), KEYS, bootstrap=BOOT, workers=None)
    assert pooled == []  # one core: the studies run in this process
    monkeypatch.setattr(_studies, "available_cores", lambda: 64)
    run_studies(toy_store(tmp_path / "many"), KEYS, bootstrap=BOOT, workers=None)
    assert pooled == [len(KEYS)]
