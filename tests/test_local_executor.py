"""LocalExecutor: in order on one thread, or on a pool of threads for a task marked thread-safe."""

import os
import threading
import time

import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.executors import (
    LocalExecutor,
    WorkerState,
    available_cores,
    make_executor,
    thread_safe,
)


def _slow_first(shared, item):
    """Later items finish first: the earliest sleep longest."""
    time.sleep(0.02 * (shared - item))
    return item, threading.get_ident()


def test_a_thread_safe_task_runs_on_threads_and_comes_back_in_item_order():
    task = thread_safe(_slow_first)
    out = list(LocalExecutor(workers=3).map(task, 6, list(range(6))))
    assert [item for item, _ in out] == list(range(6))
    assert len({ident for _, ident in out}) > 1  # more than one thread did the work
    assert all(ident != threading.get_ident() for _, ident in out)


def test_an_unmarked_task_runs_in_turn_on_the_calling_thread():
    def unmarked(shared, item):
        return item, threading.get_ident()

    out = list(LocalExecutor(workers=4).map(unmarked, 0, [3, 1, 2]))
    assert out == [(i, threading.get_ident()) for i in (3, 1, 2)]


def test_threads_give_what_one_thread_gives():
    @thread_safe
    def square(shared, item):
        return shared + item * item

    items = list(range(50))
    assert list(LocalExecutor(workers=4).map(square, 7, items)) == list(
        LocalExecutor(workers=1).map(square, 7, items)
    )


class _Boom(RuntimeError):
    pass


def test_a_tasks_error_surfaces_as_itself_and_later_items_do_not_start():
    raised = _Boom("unit 1 failed")
    started = []

    @thread_safe
    def task(shared, item):
        started.append(item)
        if item == 1:
            raise raised
        time.sleep(0.05)
        return item

    seen = []
    with pytest.raises(_Boom) as caught:
        for value in LocalExecutor(workers=2).map(task, None, list(range(40))):
            seen.append(value)
    assert caught.value is raised
    assert seen == [0]
    assert len(started) < 40  # the queued items were cancelled


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_workers_must_be_a_positive_int(workers):
    with pytest.raises(InvalidInputError, match="'workers' parameter of LocalExecutor"):
        LocalExecutor(workers=workers)


def test_the_default_is_the_cores_this_process_may_use(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert available_cores() == LocalExecutor().workers == make_executor("local").workers == 3
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert available_cores() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown: one
    assert available_cores() == 1


def test_make_executor_passes_workers_to_the_local_executor_and_refuses_them_for_ray():
    assert make_executor("local", workers=1).workers == 1
    assert make_executor("local", workers=3).workers == 3
    with pytest.raises(InvalidInputError, match="threads of the local executor") as info:
        make_executor("ray", workers=2)  # refused before Ray is imported or reached
    assert info.value.field == "workers"


def test_on_stop_is_called_again_until_a_task_that_hands_over_work_late_has_ended():
    # Task 0 fails at once; task 1 hands its "call" over only after the first stop,
    # as a batch still making its prompts would. One stop would leave that call to
    # run its 10 s; stopping again until the task ends releases it.
    first_stop = threading.Event()
    calls: list[threading.Event] = []
    lock = threading.Lock()
    stops = 0

    def on_stop() -> None:
        nonlocal stops
        stops += 1
        first_stop.set()
        with lock:
            for call in calls:
                call.set()

    @thread_safe
    def task(_shared: None, item: int) -> int:
        if item == 0:
            time.sleep(0.05)  # let task 1 start
            raise RuntimeError("task 0 fails")
        first_stop.wait(5)
        call = threading.Event()
        with lock:
            calls.append(call)
        if call.wait(10):
            raise RuntimeError("call stopped")
        return item

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="task 0 fails"):
        list(LocalExecutor(workers=2, on_stop=on_stop).map(task, None, [0, 1]))
    assert time.monotonic() - start < 5
    assert stops >= 2


@pytest.mark.parametrize(("workers", "mark"), [(1, False), (3, False), (3, True)])
def test_a_worker_state_is_built_once_here_and_every_task_reads_it(workers, mark):
    builds = []

    def build(start):
        builds.append(threading.get_ident())
        return {"start": start}

    def task(state, item):
        return state["start"] + item, id(state)

    out = list(
        LocalExecutor(workers=workers).map(
            thread_safe(task) if mark else task, WorkerState(build, (10,)), [1, 2, 3, 4]
        )
    )
    assert [value for value, _ in out] == [11, 12, 13, 14]
    assert builds == [threading.get_ident()] and len({ident for _, ident in out}) == 1


def test_no_items_build_no_worker_state():
    def build():
        raise AssertionError("built")

    assert list(LocalExecutor(workers=2).map(lambda s, i: i, WorkerState(build), [])) == []
