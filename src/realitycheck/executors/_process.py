"""Every task in one of a few fresh worker processes, each holding its own shared state."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from realitycheck.executors._protocol import WorkerState, available_cores
from realitycheck.params import Interval, check_arg

__all__ = ["LOAD_TIME_VARIABLES", "WORKER_ENVIRONMENT", "ProcessExecutor"]

S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")

WORKER_ENVIRONMENT: Mapping[str, str] = {"OPENBLAS_THREAD_TIMEOUT": "4"}
"""Variables a :class:`ProcessExecutor` worker starts with unless the environment sets them.

With ``OPENBLAS_THREAD_TIMEOUT=4`` OpenBLAS's idle threads sleep after about
2**4 cycles instead of spinning for about 2**28 (its default), which on a
machine with as many busy processes as cores burnt CPU time the tasks
needed. The number of BLAS threads, and so every value, stays the same (the
demo's study files are byte-identical either way); on a 2-core machine,
under a load of about 3, the demo's studies took 95 s wall / 113 CPU s
without it and 43-56 s / 80-81 CPU s with it. The variables only matter to
a process that starts with them (OpenBLAS reads them when it loads), so the
calling process is left as it is."""

LOAD_TIME_VARIABLES: tuple[str, ...] = (
    "OPENBLAS_",
    "GOTO_",
    "OMP_",
    "MKL_",
    "BLIS_",
    "VECLIB_",
    "NUMEXPR_",
    "MPL",
    "ARROW_",
    "PYTHON",
    "LD_",
    "MALLOC_",
)
"""Prefixes of the variables a library reads when it loads (thread pools, allocators, paths).

A fork server (see :class:`ProcessExecutor`'s ``preload``) loaded its
libraries under the variables it started with; when one of these differs at
a later map, the server is started again, so that its workers load them as a
fresh interpreter would. Every other variable is read at run time and
reaches each worker as the caller has it when the map starts."""


class ProcessExecutor:
    """Every task in one of ``workers`` fresh processes, yielded in item order.

    Each worker receives ``shared`` once (a :class:`WorkerState` is built
    there, before the worker's first task) and computes the tasks it is handed;
    the calling process gets their results back in item order. For tasks that
    hold the GIL (pandas, Python loops) and a state each worker can build for
    itself, such as the studies reading a run. Workers start with
    :data:`WORKER_ENVIRONMENT`.

    Workers are never forked from the calling process, which may hold thread
    pools (ONNX Runtime's MiniLM session, Arrow's readers) that a forked child
    would inherit without their threads. They start as fresh interpreters
    (``spawn``), or, given ``preload`` where the platform has one, they are
    forked from a fork server (``forkserver``): a fresh interpreter that
    imported ``preload`` once and holds no thread pool of the caller's, so
    that each worker starts with those imports done instead of repeating
    them (the study workers: about 2 CPU s each for SciPy, pandas and
    matplotlib). Either way a worker sees the modules as a fresh import
    defines them; changes made at run time in the calling process (a test's
    ``monkeypatch``) do not reach it. Each worker gets the caller's
    environment as it is when the map starts (a server is started again when
    a :data:`LOAD_TIME_VARIABLES` variable changed), its working folder and
    ``sys.path``. ``task`` must be a module-level
    function, and ``shared``, every item and every result must pickle, with
    classes a fresh interpreter can import (not defined in ``__main__``, such
    as a notebook, nor inside a function). As with any process pool, a
    script using one must guard its entry point (``if __name__ ==
    "__main__":``), since each worker imports it again.

    Args:
        workers: Worker processes (>= 1); default :func:`available_cores`. A map
            starts at most one per item, and stops them when it ends.
        preload: Modules the workers import before their first task, once per
            fork server where the platform has ``forkserver`` (Linux, macOS),
            else in each spawned worker as its tasks need them. A module that
            fails to import there is left for the tasks to import (and fail).
            Empty (the default): every worker is spawned.
    """

    name = "process"

    def __init__(self, workers: int | None = None, *, preload: Sequence[str] = ()) -> None:
        if workers is not None:
            check_arg(workers, Interval(int, 1), name="workers", owner="ProcessExecutor")
        self.workers = workers if workers is not None else available_cores()
        self.preload = tuple(preload)

    def __repr__(self) -> str:
        return f"ProcessExecutor(workers={self.workers})"

    def map(
        self, task: Callable[[S, T], U], shared: S | WorkerState[S], items: Sequence[T]
    ) -> Generator[U, None, None]:
        """Yield ``task(shared, item)`` for each item, in item order, computed by the workers.

        Every item is handed over at once and the results are yielded in order
        as they become available. A task's exception is raised here as itself
        (pickled back, with the worker's traceback as its cause), at that
        item's turn; so is a :class:`WorkerState` that failed to build (tried
        again at the worker's next task). A worker process that dies (killed
        for memory, a crash in native code) breaks the pool: each item not
        finished by then raises ``BrokenProcessPool`` at its turn. When a task
        failed or the caller stops reading (Ctrl-C), the items not yet started
        are cancelled and the map returns once the running ones have ended.
        """
        if not items:
            return
        with self._submitted(task, shared, items) as futures:
            for future in futures:
                yield future.result()

    def map_settled(
        self, task: Callable[[S, T], U], shared: S | WorkerState[S], items: Sequence[T]
    ) -> Generator[tuple[U, None] | tuple[None, Exception], None, None]:
        """Yield each item's outcome in item order: ``(result, None)`` or ``(None, its error)``.

        As :meth:`map`, but a failed task does not stop the others, and when a
        worker dies, the items that finished before keep their results: only
        those not finished by then get ``BrokenProcessPool`` as their error.
        For tasks whose failures are data (a study that fails is stored as
        failed, and the studies that finished are kept). When the caller stops
        reading (Ctrl-C), the items not yet started are cancelled.
        """
        if not items:
            return
        with self._submitted(task, shared, items) as futures:
            for future in futures:
                try:
                    yield future.result(), None
                except Exception as exc:  # noqa: BLE001 - the item's outcome, handed to the caller
                    yield None, exc

    @contextlib.contextmanager
    def _submitted(
        self, task: Callable[[S, T], U], shared: S | WorkerState[S], items: Sequence[T]
    ) -> Iterator[list[Future[U]]]:
        """Every item handed to a fresh pool at once; on leaving, nothing more starts."""
        with _worker_environment():  # what the workers, and a fork server started now, inherit
            context = _start_method(self.preload)
            environment = dict(os.environ)
        pool = ProcessPoolExecutor(
            max_workers=min(self.workers, len(items)),
            mp_context=context,
            initializer=_start_worker,
            initargs=(shared, environment),
        )
        try:
            with _worker_environment():  # the workers start as the items are handed over
                futures: list[Future[U]] = [pool.submit(_run_task, task, item) for item in items]
            yield futures
        finally:  # a failed task or a stopped caller: start nothing more
            pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        """Nothing to release: each map stops its workers."""


@contextlib.contextmanager
def _worker_environment() -> Iterator[None]:
    """Set :data:`WORKER_ENVIRONMENT`'s unset variables while workers start; restore after."""
    added = [name for name in WORKER_ENVIRONMENT if name not in os.environ]
    os.environ.update({name: WORKER_ENVIRONMENT[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


_SERVER_LOCK = threading.Lock()
_server_started_for: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None = None
"""The ``preload`` and load-time variables the fork server was last set up with."""


def _start_method(preload: tuple[str, ...]) -> Any:
    """The context a map starts its workers with: forked from a server that imported ``preload``.

    Spawned where ``preload`` is empty or the platform has no fork server, or
    when a server that must start again cannot be stopped (an interpreter
    without the private ``ForkServer._stop`` this relies on). Call it with
    :func:`_worker_environment` in force: that is the environment a server
    started now inherits.
    """
    global _server_started_for
    if not preload or "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    from multiprocessing import forkserver

    server = forkserver._forkserver
    wanted = (preload, _load_time_variables())
    with _SERVER_LOCK:
        if wanted != _server_started_for:
            if getattr(server, "_forkserver_pid", None) is not None:  # running, set up otherwise
                stop = getattr(server, "_stop", None)
                if stop is None:
                    return multiprocessing.get_context("spawn")
                stop()
            forkserver.set_forkserver_preload(list(preload))
            _server_started_for = wanted
    return multiprocessing.get_context("forkserver")


def _load_time_variables() -> tuple[tuple[str, str], ...]:
    """The :data:`LOAD_TIME_VARIABLES` variables set now, sorted."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(LOAD_TIME_VARIABLES)))


_shared: Any = None
"""This worker's ``shared``: as received (set by :func:`_start_worker`), then as built."""


def _start_worker(shared: Any, environment: dict[str, str]) -> None:
    """Worker initialiser: take the caller's environment and keep ``shared``.

    A :class:`WorkerState` is built by the first task. A worker forked from a
    fork server has the server's environment until then.
    """
    global _shared
    os.environ.clear()
    os.environ.update(environment)
    _shared = shared


def _run_task(task: Callable[[Any, T], U], item: T) -> U:
    """Run ``task`` on this worker's state (a :class:`WorkerState` is built the first time)."""
    global _shared
    if isinstance(_shared, WorkerState):
        _shared = _shared.build(*_shared.args)
    return task(_shared, item)
