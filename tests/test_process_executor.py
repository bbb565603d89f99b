"""ProcessExecutor: tasks in spawned workers, results in item order, a state built once a worker."""

import multiprocessing
import os
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

import _process_tasks as tasks
from realitycheck.errors import InvalidInputError
from realitycheck.executors import WORKER_ENVIRONMENT, ProcessExecutor, WorkerState


def test_results_come_back_in_item_order_from_other_processes(tmp_path):
    # Item 1 finishes before item 0, item 3 before item 2; the results still come in order.
    out = list(ProcessExecutor(workers=2).map(tasks.after_the_next, str(tmp_path), [0, 1, 2, 3]))
    assert [item for item, _ in out] == [0, 1, 2, 3]
    pids = {pid for _, pid in out}
    assert len(pids) == 2 and os.getpid() not in pids


def test_a_plain_shared_value_reaches_every_task():
    assert list(ProcessExecutor(workers=2).map(tasks.add, 10, [3, 1, 2])) == [13, 11, 12]


def test_a_worker_state_is_built_once_in_each_worker_and_read_by_its_tasks(tmp_path):
    shared = WorkerState(tasks.build_counted, (str(tmp_path),))
    out = list(ProcessExecutor(workers=2).map(tasks.read_state, shared, list(range(8))))
    assert [item for item, *_ in out] == list(range(8))
    built = sorted(p.name for p in tmp_path.iterdir())
    workers = {pid for _, pid, *_ in out}
    assert len(built) == len(workers) <= 2  # one build in each worker, not one per task
    for _, pid, state_pid, token in out:
        assert state_pid == pid  # built by the worker that read it, not here
        assert f"built-{pid}-{token}" in built


def test_a_tasks_error_is_raised_as_itself_at_its_turn_and_later_items_do_not_start(tmp_path):
    seen = []
    with pytest.raises(tasks.TaskError, match="item 1 failed"):
        for value in ProcessExecutor(workers=1).map(
            tasks.touch_then_fail_at_one, str(tmp_path), list(range(20))
        ):
            seen.append(value)
    assert seen == [0]
    started = {p.name for p in tmp_path.iterdir()}
    assert {"started-0", "started-1"} <= started
    assert len(started) < 20  # the queued items were cancelled


def test_a_caller_that_stops_reading_cancels_the_items_not_started(tmp_path):
    results = ProcessExecutor(workers=1).map(
        tasks.touch_then_fail_at_one, str(tmp_path), [0, *range(2, 22)]
    )
    assert next(results) == 0
    results.close()  # as an interruption does: waits for the running item, starts no other
    assert len(list(tmp_path.iterdir())) < 20


def test_a_state_that_fails_to_build_raises_its_error_at_the_first_turn():
    shared = WorkerState(tasks.build_failing, ("no run here",))
    with pytest.raises(tasks.TaskError, match="no run here"):
        list(ProcessExecutor(workers=2).map(tasks.add, shared, [1, 2, 3]))


def test_a_worker_that_dies_breaks_the_map_at_its_items_turn_not_a_hang():
    seen = []
    with pytest.raises(BrokenProcessPool):
        for value in ProcessExecutor(workers=2).map(tasks.die_at_one, None, [0, 1, 2, 3]):
            seen.append(value)
    assert seen == [0]


def test_settled_outcomes_keep_each_result_and_give_each_failure_as_data(tmp_path):
    outcomes = list(
        ProcessExecutor(workers=2).map_settled(tasks.touch_then_fail_at_one, tmp_path, [0, 1, 2])
    )
    assert [result for result, _ in outcomes] == [0, None, 2]
    assert outcomes[0][1] is None and outcomes[2][1] is None
    assert isinstance(outcomes[1][1], tasks.TaskError)


def test_settled_outcomes_keep_the_results_finished_before_a_worker_died(tmp_path):
    # Item 2 finishes, then item 1's worker dies: map stops at item 1 and loses
    # item 2's result; map_settled keeps it.
    outcomes = list(
        ProcessExecutor(workers=2).map_settled(tasks.die_at_one_after_two, tmp_path, [0, 1, 2])
    )
    assert outcomes[0] == (0, None)
    assert outcomes[1][0] is None and isinstance(outcomes[1][1], BrokenProcessPool)
    assert outcomes[2] == (2, None)


@pytest.mark.parametrize(("outside", "worker"), [(None, "4"), ("12", "12")])
def test_workers_start_with_a_short_openblas_spin_unless_the_environment_sets_one(
    monkeypatch, outside, worker
):
    assert WORKER_ENVIRONMENT == {"OPENBLAS_THREAD_TIMEOUT": "4"}
    if outside is None:
        monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", outside)
    out = list(ProcessExecutor(workers=2).map(tasks.environment, "OPENBLAS_THREAD_TIMEOUT", [0, 1]))
    assert out == [worker, worker]
    assert os.environ.get("OPENBLAS_THREAD_TIMEOUT") == outside  # this process: unchanged


forking = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here"
)


def _preloading(monkeypatch):
    """Two workers forked from a server that imports ``_process_tasks`` (found on PYTHONPATH)."""
    here = str(Path(__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    return ProcessExecutor(workers=2, preload=("_process_tasks",))


@forking
def test_preloaded_modules_are_imported_by_a_server_the_workers_fork_from(monkeypatch):
    out = list(_preloading(monkeypatch).map(tasks.imported_by, "unused", range(4)))
    (importer,) = {imported for imported, _, _ in out}  # one import, however many workers
    assert importer not in {worker for _, worker, _ in out} | {os.getpid()}
    # Without preload every worker is spawned and imports the module itself.
    out = list(ProcessExecutor(workers=2).map(tasks.imported_by, "unused", range(4)))
    assert all(imported == worker for imported, worker, _ in out)


@forking
def test_each_map_gets_the_callers_environment_and_a_new_server_for_a_load_time_variable(
    monkeypatch,
):
    executor = _preloading(monkeypatch)
    monkeypatch.setenv("REALITYCHECK_PROBE", "first")
    first = list(executor.map(tasks.imported_by, "REALITYCHECK_PROBE", [0, 1]))
    monkeypatch.setenv("REALITYCHECK_PROBE", "second")
    second = list(executor.map(tasks.imported_by, "REALITYCHECK_PROBE", [0, 1]))
    monkeypatch.delenv("REALITYCHECK_PROBE")
    gone = list(executor.map(tasks.imported_by, "REALITYCHECK_PROBE", [0, 1]))
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "12")  # read by OpenBLAS as NumPy loads
    blas = list(executor.map(tasks.imported_by, "OPENBLAS_THREAD_TIMEOUT", [0, 1]))
    assert [value for *_, value in first + second + gone + blas] == (
        ["first"] * 2 + ["second"] * 2 + ["unset"] * 2 + ["12"] * 2
    )
    servers = [{imported for imported, *_ in out} for out in (first, second, gone, blas)]
    assert servers[0] == servers[1] == servers[2]  # the same server: its imports are not repeated
    assert len(servers[3]) == 1 and servers[3] != servers[0]  # started again for OpenBLAS


def test_no_items_start_no_worker():
    shared = WorkerState(tasks.build_failing, ("never built",))
    assert list(ProcessExecutor(workers=2).map(tasks.add, shared, [])) == []


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_workers_must_be_a_positive_int(workers):
    with pytest.raises(InvalidInputError, match="'workers' parameter of ProcessExecutor"):
        ProcessExecutor(workers=workers)
