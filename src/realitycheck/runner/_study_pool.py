"""Studies computed in worker processes, each worker loading the run's tables once.

A study only reads the run (through :class:`~realitycheck.store.RunData`) and
returns a :class:`~realitycheck.store.StudyResult`; nothing it computes
depends on another study. So studies can run side by side in separate
processes: each worker builds ``RunData`` once, computes the studies it is
handed and sends their results back; the calling process stores them, in
the order the studies were asked for, exactly as a serial run would.

Workers are started with ``spawn`` (a fresh interpreter), never ``fork``: the
calling process may hold thread pools (ONNX Runtime's MiniLM session,
Arrow's readers) that a forked child would inherit without their threads.
A worker therefore sees the registered studies as a fresh import defines
them; changes made at run time in the calling process (a test's
``monkeypatch``) do not reach it.

Workers start with ``OPENBLAS_THREAD_TIMEOUT=4`` unless the environment sets
it: OpenBLAS's idle threads then sleep after about 2**4 cycles instead of
spinning for about 2**28 (its default), which on a machine with as many
busy processes as cores burnt CPU time the studies needed. The number of
BLAS threads, and so every value, stays the same (the demo's study files
are byte-identical either way); on this 2-core machine, under a load of
about 3, the demo's studies took 95 s wall / 113 CPU s without it and 43-56
s / 80-81 CPU s with it.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
from collections.abc import Generator, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from realitycheck.analysis import Bootstrap
from realitycheck.store import RunData, RunStore, StudyResult
from realitycheck.studies import Study

__all__ = ["compute_study", "pooled_results"]

logger = logging.getLogger(__name__)

_data: RunData | None = None
"""This worker's copy of the run's tables (set by :func:`_load_run`)."""

WORKER_ENVIRONMENT: Mapping[str, str] = {"OPENBLAS_THREAD_TIMEOUT": "4"}
"""Variables a worker starts with unless the environment already sets them (see above)."""


def failure_text(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, the error a failed study is stored with."""
    return f"{type(exc).__name__}: {exc}"


def compute_study(
    component: Study, data: RunData, bootstrap: Bootstrap | None
) -> tuple[StudyResult | None, str]:
    """Run one study; return ``(result, "")`` or, when it raised, ``(None, error text)``.

    Only :class:`Exception` is caught: an interruption propagates.
    """
    try:
        return component.run(data, bootstrap=bootstrap), ""
    except Exception as exc:
        logger.debug("study %s failed", component.key, exc_info=True)
        return None, failure_text(exc)


@contextlib.contextmanager
def _worker_environment() -> Iterator[None]:
    """Set :data:`WORKER_ENVIRONMENT`'s unset variables while workers start; restore after.

    The variables only matter to a process that starts with them (OpenBLAS
    reads them when it loads), so this process is not affected.
    """
    added = [name for name in WORKER_ENVIRONMENT if name not in os.environ]
    os.environ.update({name: WORKER_ENVIRONMENT[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _load_run(run_dir: str) -> None:
    """Worker initialiser: load the run's tables once for every study this worker computes."""
    global _data
    _data = RunData(RunStore(run_dir))


def _compute_in_worker(
    component: Study, bootstrap: Bootstrap | None
) -> tuple[StudyResult | None, str]:
    """Run one study on this worker's tables (see :func:`compute_study`)."""
    if _data is None:  # pragma: no cover - the initialiser always runs first
        raise RuntimeError("the study worker was started without its run")
    return compute_study(component, _data, bootstrap)


def pooled_results(
    run_dir: Path,
    components: Sequence[Study],
    *,
    bootstrap: Bootstrap | None,
    workers: int,
) -> Generator[tuple[StudyResult | None, str], None, None]:
    """Yield each study's ``(result, error)`` in the order of ``components``, computed by workers.

    Every study is handed to a pool of ``workers`` processes at once; the
    results are yielded in order as they become available. A worker that
    dies (killed for memory, a crash in native code) breaks the pool: each
    study not finished by then yields the pool's error as its error, like a
    failed study. When the caller stops early (an interruption), studies not
    yet started are cancelled.
    """
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_load_run,
        initargs=(str(run_dir),),
    )
    try:
        with _worker_environment():  # the workers start as the studies are handed over
            futures: list[Future[tuple[StudyResult | None, str]]] = [
                pool.submit(_compute_in_worker, component, bootstrap) for component in components
            ]
        for future in futures:
            try:
                yield future.result()
            except Exception as exc:  # the worker process died, or its result did not pickle
                yield None, failure_text(exc)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
