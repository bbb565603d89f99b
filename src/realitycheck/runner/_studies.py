"""The one loop over studies: run each over a run and store its result.

A study only reads the run (through :class:`~realitycheck.store.RunData`) and
returns a :class:`~realitycheck.store.StudyResult`; nothing it computes
depends on another study. So studies can run side by side on a
:class:`~realitycheck.executors.ProcessExecutor`: each worker builds
``RunData`` once (a :class:`~realitycheck.executors.WorkerState`), computes
the studies it is handed and sends their results back; this process stores
them, in the order the studies were asked for, exactly as a serial run would.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from realitycheck.analysis import Bootstrap
from realitycheck.errors import InvalidInputError, RunFolderError
from realitycheck.executors import ProcessExecutor, WorkerState, available_cores
from realitycheck.progress import NullProgress, Progress, ProgressTask, describe
from realitycheck.registry import parse_key
from realitycheck.store import RunData, RunStore, StudyResult, save_result
from realitycheck.studies import Study, studies

__all__ = ["StudyRun", "build_studies", "expand_study_keys", "run_studies"]

ALL = "all"

logger = logging.getLogger(__name__)

WORKER_MODULES = (
    __name__,
    "pandas",
    "pyarrow.parquet",
    "scipy.stats",
    "sklearn.linear_model",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "PIL.Image",
)
"""What every study worker imports before its first study, once per fork server (about 2.4 CPU s;
see :class:`~realitycheck.executors.ProcessExecutor`'s ``preload``)."""

Outcome = tuple[StudyResult | None, str]
"""A computed study: ``(result, "")``, or ``(None, "<ExceptionType>: <message>")`` if it failed."""


@dataclass(frozen=True, kw_only=True)
class StudyRun:
    """One study's stored result and the folder it was written to.

    Attributes:
        result: What the study found; for a study that failed, a result whose
            finding says so and why (so the report shows it like any other).
        folder: Where the result was stored.
        error: ``"<ExceptionType>: <message>"`` when the study failed, else ``""``.
    """

    result: StudyResult
    folder: Path
    error: str = ""


def _failed(component: Study, error: str) -> StudyResult:
    """The stored result of a study that failed with ``error`` (``"<Type>: <message>"``)."""
    finding = (
        f"This study failed, so it has no tables or figures: {error}. It stopped no "
        "other study. Run it alone to retry (realitycheck study "
        f"'{component.key}' --run RUN, with --report-dir DIR for a run on object storage; with "
        "REALITYCHECK_DEBUG=1 in the environment "
        "the error is raised with its traceback)."
    )
    return StudyResult(study=component.key, spec=component.spec, finding=finding)


def expand_study_keys(keys: Sequence[str]) -> list[str]:
    """Return the study keys to run; ``all`` stands for every registered study."""
    return studies.names() if ALL in keys else list(keys)


def build_studies(keys: Sequence[str], *, reference: str | None = None) -> list[Study]:
    """Build the studies of ``keys``, each with ``reference`` unless its key names one.

    A key such as ``leaderboard[reference=human[protocol=worst]]`` keeps its own.
    """
    out = []
    for key in expand_study_keys(keys):
        component = studies.create_from_key(key)
        if reference is not None and "reference" not in parse_key(key)[1]:
            component = dataclasses.replace(component, reference=reference)
        out.append(component)
    return out


def run_studies(
    store: RunStore,
    keys: Sequence[str],
    *,
    bootstrap: Bootstrap | None = None,
    reference: str | None = None,
    progress: Progress | None = None,
    on_result: Callable[[StudyRun], None] | None = None,
    raise_errors: bool = False,
    folder: Path | None = None,
    workers: int | None = 1,
) -> list[StudyRun]:
    """Build every study of ``keys`` first, then run each over the run and store its result.

    Every key is checked before any study runs, so a typo fails fast. A study
    that raises does not stop the others: its result is stored with the error
    as its finding (replacing an older result of that study) and its
    :attr:`StudyRun.error` is set; the caller decides how to end (the command
    line exits non-zero naming the failed studies). Interruptions
    (``KeyboardInterrupt``) are not caught.

    With more than one worker, the studies are computed side by side in
    worker processes (a :class:`~realitycheck.executors.ProcessExecutor`;
    each worker loads the run once), and this process stores each result in
    the order of ``keys``, so the stored files, the returned list and the
    ``on_result`` calls are those of a serial run. A study that fails in a
    worker is stored as failed like any other. A worker process that dies
    (killed for memory, a crash in native code) breaks the pool: each study
    not finished by then is stored as failed with the pool's error
    (``BrokenProcessPool: …``), and those that finished keep their results;
    run the failed ones again with ``workers=1``. A study class a worker
    could not import (defined in ``__main__``, such as a
    notebook, or inside a function) keeps every study in this process. As
    with any process pool, a script calling this with several workers must
    guard its entry point (``if __name__ == "__main__":``), since each worker
    imports the script again.

    Args:
        store: The run.
        keys: Study keys (``length``, ``label_noise[rate=0.2]``) or ``all``.
        bootstrap: Settings of every interval (default :class:`Bootstrap`).
        reference: The ground truth of every study whose key does not name its
            own (any label key); ``None`` = each study's default (``human``).
        progress: Where to report progress: one step, ``studies``, named after the
            study whose result it awaits (with workers, the others run meanwhile).
        on_result: Called after each study is stored (the CLI prints it).
        raise_errors: Let a study's exception propagate (with its traceback)
            instead of storing it as a failed result; the studies then run in
            this process, one after another.
        folder: The local folder whose ``studies/`` receives the results;
            ``None`` = the run folder. Required for a run on object storage
            (the run itself is only read there).
        workers: Processes computing studies at once: 1 (default) = this
            process, one study after another; ``None`` = one per usable core,
            at most one per study. A run on object storage always uses 1.

    Raises:
        RunFolderError: A run on object storage and no ``folder`` (before any study runs).
        InvalidInputError: ``workers`` below 1 (before any study runs).
    """
    if folder is None and store.remote is not None:
        raise RunFolderError(
            f"The run at {store.location} is on object storage; its study results are "
            "written to a local folder: pass folder=DIR (on the command line: realitycheck "
            "study --report-dir DIR).",
            path=store.location,
        )
    if workers is not None and workers < 1:
        raise InvalidInputError(
            f"workers must be at least 1 (or None for one per core); got {workers}",
            field="workers",
        )
    components = build_studies(keys, reference=reference)
    if not components:
        return []
    count = min(workers or available_cores(), len(components))  # >= 1 here
    progress = progress or NullProgress()
    if count > 1 and not raise_errors and store.remote is None and _importable(components):
        outcomes = _pooled_results(store.path, components, bootstrap=bootstrap, workers=count)
    else:
        outcomes = _serial_results(store, components, bootstrap, raise_errors)
    out = []
    with closing(outcomes), progress.task("studies", len(components)) as task:
        named = _named(components, task)  # each study is named before its result is awaited
        for component, (result, error) in zip(named, outcomes, strict=True):
            stored = result if result is not None else _failed(component, error)
            done = StudyRun(
                result=stored, folder=save_result(store, stored, folder=folder), error=error
            )
            out.append(done)
            task.advance()
            if on_result is not None:
                on_result(done)
    return out


def _named(components: Sequence[Study], task: ProgressTask) -> Generator[Study, None, None]:
    """Yield each study after telling ``task`` its key and place: ``study length (3 of 14)``."""
    for i, component in enumerate(components, 1):
        describe(task, f"study {component.key} ({i} of {len(components)})")
        yield component


def _importable(components: Sequence[Study]) -> bool:
    """Whether a worker process can import the class of every study in ``components``."""
    return all(
        type(c).__module__ != "__main__" and "<locals>" not in type(c).__qualname__
        for c in components
    )


def failure_text(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, the error a failed study is stored with."""
    return f"{type(exc).__name__}: {exc}"


def compute_study(component: Study, data: RunData, bootstrap: Bootstrap | None) -> Outcome:
    """Run one study; return ``(result, "")`` or, when it raised, ``(None, error text)``.

    Only :class:`Exception` is caught: an interruption propagates.
    """
    try:
        return component.run(data, bootstrap=bootstrap), ""
    except Exception as exc:
        logger.debug("study %s failed", component.key, exc_info=True)
        return None, failure_text(exc)


def _serial_results(
    store: RunStore, components: Sequence[Study], bootstrap: Bootstrap | None, raise_errors: bool
) -> Generator[Outcome, None, None]:
    """Yield each study's ``(result, error)`` computed here, one after another, in order."""
    data = RunData(store)
    for component in components:
        if raise_errors:
            yield component.run(data, bootstrap=bootstrap), ""
        else:
            yield compute_study(component, data, bootstrap)


def _load_run(run_dir: str) -> RunData:
    """A worker's copy of the run's tables (the :class:`WorkerState` of the study workers)."""
    return RunData(RunStore(run_dir))


def _compute_in_worker(data: RunData, item: tuple[Study, Bootstrap | None]) -> Outcome:
    """The study workers' task: one study on the worker's tables (see :func:`compute_study`)."""
    component, bootstrap = item
    return compute_study(component, data, bootstrap)


def _pooled_results(
    run_dir: Path, components: Sequence[Study], *, bootstrap: Bootstrap | None, workers: int
) -> Generator[Outcome, None, None]:
    """Yield each study's outcome in the order of ``components``, computed by ``workers`` processes.

    An error that is not a study's own (a worker that died, a result that did
    not pickle) becomes the error of each study it reached, like a failed
    study; the studies that finished before keep their results.
    """
    items = [(component, bootstrap) for component in components]
    shared = WorkerState(_load_run, (str(run_dir),))
    executor = ProcessExecutor(workers, preload=WORKER_MODULES)
    with closing(executor.map_settled(_compute_in_worker, shared, items)) as done:
        for settled in done:
            yield settled[0] if settled[1] is None else (None, failure_text(settled[1]))
