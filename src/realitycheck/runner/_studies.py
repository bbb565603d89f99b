"""The one loop over studies: run each over a run and store its result."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from realitycheck.analysis import Bootstrap
from realitycheck.errors import RunFolderError
from realitycheck.progress import NullProgress, Progress
from realitycheck.registry import parse_key
from realitycheck.store import RunData, RunStore, StudyResult, save_result
from realitycheck.studies import Study, studies

__all__ = ["StudyRun", "build_studies", "expand_study_keys", "failed_result", "run_studies"]

logger = logging.getLogger(__name__)

ALL = "all"


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


def failed_result(component: Study, exc: Exception) -> StudyResult:
    """Return the result stored for a study that raised ``exc``: its finding is the error."""
    error = f"{type(exc).__name__}: {exc}"
    finding = (
        f"This study failed, so it has no tables or figures: {error}. It stopped no "
        "other study. Run it alone to retry (realitycheck study "
        f"'{component.key}' --run DIR; with REALITYCHECK_DEBUG=1 in the environment "
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
) -> list[StudyRun]:
    """Build every study of ``keys`` first, then run each over the run and store its result.

    Every key is checked before any study runs, so a typo fails fast. A study
    that raises does not stop the others: its result is stored with the error
    as its finding (replacing an older result of that study) and its
    :attr:`StudyRun.error` is set; the caller decides how to end (the command
    line exits non-zero naming the failed studies). Interruptions
    (``KeyboardInterrupt``) are not caught.

    Args:
        store: The run.
        keys: Study keys (``length``, ``label_noise[rate=0.2]``) or ``all``.
        bootstrap: Settings of every interval (default :class:`Bootstrap`).
        reference: The ground truth of every study whose key does not name its
            own (any label key); ``None`` = each study's default (``human``).
        progress: Where to report progress.
        on_result: Called after each study is stored (the CLI prints it).
        raise_errors: Let a study's exception propagate (with its traceback)
            instead of storing it as a failed result.
        folder: The local folder whose ``studies/`` receives the results;
            ``None`` = the run folder. Required for a run on object storage
            (the run itself is only read there).

    Raises:
        RunFolderError: A run on object storage and no ``folder`` (before any study runs).
    """
    if folder is None and store.remote is not None:
        raise RunFolderError(
            f"The run at {store.location} is on object storage; its study results are "
            "written to a local folder: pass folder=DIR (on the command line: realitycheck "
            "study --out DIR).",
            path=store.location,
        )
    components = build_studies(keys, reference=reference)
    if not components:
        return []
    progress = progress or NullProgress()
    data = RunData(store)
    out = []
    with progress.task("studies", len(components)) as task:
        for component in components:
            try:
                result, error = component.run(data, bootstrap=bootstrap), ""
            except Exception as exc:
                if raise_errors:
                    raise
                logger.debug("study %s failed", component.key, exc_info=True)
                result = failed_result(component, exc)
                error = f"{type(exc).__name__}: {exc}"
            done = StudyRun(
                result=result, folder=save_result(store, result, folder=folder), error=error
            )
            out.append(done)
            if on_result is not None:
                on_result(done)
            task.advance()
    return out
