"""The stages that fill a run: load a dataset, label responses, score responses.

Each stage reads what the run already holds and computes only what is
missing, appending one part per batch, so a stopped stage resumes where it
stopped and a re-run does no work twice.

A stored label or score with an error counts as done unless its error is
``retryable`` (a backend failure or timeout): a re-run computes those again,
and with ``retry_errors=True`` every errored one, permanent errors (no
reference, empty text) included. The new record replaces the old one (the
store keeps the newest row of each response and component key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from realitycheck.backends import CallCache
from realitycheck.detectors import Detector, Needs
from realitycheck.errors import InvalidInputError
from realitycheck.labelers import Labeler
from realitycheck.pipeline._ingest import ingest
from realitycheck.pipeline._report import StageReport, outcome_of
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import RunStore

__all__ = ["StageReport", "detect", "ingest", "label"]

DEFAULT_BATCH_SIZE = 2048


def _has_need(example: Example, need: str) -> bool:
    if need == "references":
        return bool(example.references)
    if need == "context":
        return bool(example.context.strip())
    return True


def _targets(
    store: RunStore, datasets: Iterable[str] | None
) -> tuple[list[Response], dict[str, Example]]:
    examples = {e.example_id: e for e in store.read(Example)}
    wanted = set(datasets) if datasets is not None else None
    responses = [
        r
        for r in store.read(Response)
        if wanted is None or (r.example_id in examples and examples[r.example_id].dataset in wanted)
    ]
    missing = sorted({r.example_id for r in responses if r.example_id not in examples})
    if missing:
        raise InvalidInputError(
            f"{len(missing)} responses point at examples the run does not hold "
            f"(e.g. {missing[:3]}); load their dataset first.",
            path=store.path,
            field="example_id",
        )
    return responses, examples


def _stored(
    store: RunStore, table: str, column: str, key: str, *, retry_errors: bool
) -> tuple[set[str], set[str]]:
    """Return the response ids ``key`` has a record for that stands, and those to retry."""
    frame = store.frame(table, columns=["error", "retryable"])
    mine = frame[frame[column] == key]
    errored = mine["error"].notna() & mine["error"].ne("")
    redo = errored if retry_errors else errored & mine["retryable"].eq(True)
    return set(mine.loc[~redo, "response_id"]), set(mine.loc[redo, "response_id"])


def _run_component(
    store: RunStore,
    component: Labeler | Detector,
    compute: Callable[[Sequence[Response]], Sequence[Label | Score]],
    responses: Sequence[Response],
    examples: Mapping[str, Example],
    *,
    table: str,
    batch_size: int,
    retry_errors: bool,
    progress: Progress,
    report: StageReport,
) -> None:
    key = component.key
    needs = sorted(n for n in component.needs if n in ("references", "context"))
    eligible = [r for r in responses if all(_has_need(examples[r.example_id], n) for n in needs)]
    if not eligible:
        report.skipped[key] = f"every response: none has the {' and '.join(needs)} it needs"
        return
    if len(eligible) < len(responses):
        report.skipped[key] = (
            f"{len(responses) - len(eligible)} responses without the {' and '.join(needs)} it needs"
        )
    column = "labeler" if table == "labels" else "detector"
    done, failed = _stored(store, table, column, key, retry_errors=retry_errors)
    todo = [r for r in eligible if r.response_id not in done]
    report.reused[key] = len(eligible) - len(todo)
    report.computed[key] = len(todo)
    report.retried[key] = sum(r.response_id in failed for r in todo)
    store.update_manifest(components={key: component.spec})
    if todo:
        with progress.task(f"{column} {key}", len(todo)) as task:
            for start in range(0, len(todo), batch_size):
                batch = todo[start : start + batch_size]
                records: list[Label | Score] = list(compute(batch))
                if len(records) != len(batch):
                    raise InvalidInputError(
                        f"{key} returned {len(records)} records for {len(batch)} responses."
                    )
                store.append(records)
                for record in records:
                    outcome = outcome_of(record)
                    if outcome != "value":
                        counts_of = getattr(report, outcome)
                        counts_of[key] = counts_of.get(key, 0) + 1
                    if outcome == "missing" and record.error:
                        report.missing_why.setdefault(key, record.error)
                task.advance(len(batch))
        store.compact(table)
    names = ("computed", "missing", "failed", "reused", "retried")
    counts = {name: getattr(report, name).get(key, 0) for name in names}
    store.update_manifest(last_run={key: counts})


def _run_stage(
    store: RunStore,
    components: Sequence[Labeler] | Sequence[Detector],
    compute_for: Callable[
        [Any, Mapping[str, Example]], Callable[[Sequence[Response]], Sequence[Label | Score]]
    ],
    *,
    table: str,
    stored_need: str,
    datasets: Iterable[str] | None,
    batch_size: int,
    retry_errors: bool,
    progress: Progress | None,
) -> StageReport:
    """Run each component that is computed (not read from the dataset) on what it lacks."""
    report = StageReport()
    responses, examples = _targets(store, datasets)
    for component in components:
        if stored_need in component.needs:
            continue
        _run_component(
            store,
            component,
            compute_for(component, examples),
            responses,
            examples,
            table=table,
            batch_size=batch_size,
            retry_errors=retry_errors,
            progress=progress or NullProgress(),
            report=report,
        )
    return report


def label(
    store: RunStore,
    labelers: Sequence[Labeler],
    *,
    datasets: Iterable[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    retry_errors: bool = False,
    cache: CallCache | None = None,
    progress: Progress | None = None,
) -> StageReport:
    """Label every stored response (of ``datasets``) that a labeler has not labelled yet.

    ``cache`` is the run's call cache, handed to each labeler (an LLM judge
    sends its calls through it).

    Labels whose error is retryable are computed again; ``retry_errors=True``
    recomputes every label with an error.
    """
    return _run_stage(
        store,
        labelers,
        lambda lab, examples: lambda batch: lab.label(batch, examples, cache=cache),
        table="labels",
        stored_need="recorded",
        datasets=datasets,
        batch_size=batch_size,
        retry_errors=retry_errors,
        progress=progress,
    )


def detect(
    store: RunStore,
    detectors: Sequence[Detector],
    *,
    datasets: Iterable[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    retry_errors: bool = False,
    cache: CallCache | None = None,
    progress: Progress | None = None,
) -> StageReport:
    """Score every stored response (of ``datasets``) that a detector has not scored yet.

    ``cache`` is the run's call cache, handed to detectors in :class:`Needs`
    (a detector with a judge sends its calls through it), with the run itself
    (a supervised detector reads its training labels from it and saves its
    weights in it).

    Scores whose error is retryable are computed again; ``retry_errors=True``
    recomputes every score with an error.
    """
    return _run_stage(
        store,
        detectors,
        lambda det, examples: (
            lambda batch: det.score(batch, Needs(examples=examples, cache=cache, store=store))
        ),
        table="scores",
        stored_need="recorded",
        datasets=datasets,
        batch_size=batch_size,
        retry_errors=retry_errors,
        progress=progress,
    )
