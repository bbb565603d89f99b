"""The one loop over studies: run each over a run and store its result."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from realitycheck.analysis import Bootstrap
from realitycheck.progress import NullProgress, Progress
from realitycheck.registry import parse_key
from realitycheck.store import RunData, RunStore, StudyResult, save_result
from realitycheck.studies import Study, studies

__all__ = ["StudyRun", "build_studies", "expand_study_keys", "run_studies"]

ALL = "all"


@dataclass(frozen=True, kw_only=True)
class StudyRun:
    """One study's stored result and the folder it was written to."""

    result: StudyResult
    folder: Path


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
) -> list[StudyRun]:
    """Build every study of ``keys`` first, then run each over the run and store its result.

    Every key is checked before any study runs, so a typo fails fast.

    Args:
        store: The run.
        keys: Study keys (``length``, ``label_noise[rate=0.2]``) or ``all``.
        bootstrap: Settings of every interval (default :class:`Bootstrap`).
        reference: The ground truth of every study whose key does not name its
            own (any label key); ``None`` = each study's default (``human``).
        progress: Where to report progress.
        on_result: Called after each study is stored (the CLI prints it).
    """
    components = build_studies(keys, reference=reference)
    if not components:
        return []
    progress = progress or NullProgress()
    data = RunData(store)
    out = []
    with progress.task("studies", len(components)) as task:
        for component in components:
            result = component.run(data, bootstrap=bootstrap)
            done = StudyRun(result=result, folder=save_result(store, result))
            out.append(done)
            if on_result is not None:
                on_result(done)
            task.advance()
    return out
