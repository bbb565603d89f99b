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

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from realitycheck.backends import CallCache, cancel_calls
from realitycheck.detectors import Detector
from realitycheck.errors import InvalidInputError
from realitycheck.executors import Executor, LocalExecutor
from realitycheck.labelers import Labeler
from realitycheck.params import Interval, check_arg
from realitycheck.pipeline._ingest import ingest
from realitycheck.pipeline._parts import (
    PartContext,
    PartTally,
    compute_overlapping_part,
    compute_part,
    failure_texts,
)
from realitycheck.pipeline._proxy_features import ProxyRead
from realitycheck.pipeline._proxy_model import (
    ProxyModel,
    ProxyView,
    failure_scores,
    reads_features,
)
from realitycheck.pipeline._recorded import same_records
from realitycheck.pipeline._report import StageReport
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import Example, records_from_columns
from realitycheck.store import (
    RunStore,
    from_numpy,
    from_texts,
    scalar,
    to_numpy,
)

__all__ = ["StageReport", "detect", "ingest", "label"]


class _Examples(Mapping[str, Example]):
    """The run's examples by id, each built into an :class:`Example` on first lookup."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table
        ids = table.column("example_id").to_pylist()
        self._row = {eid: i for i, eid in enumerate(ids)}
        self._built: dict[str, Example] = {}

    def __getitem__(self, example_id: str) -> Example:
        if example_id not in self._built:
            self.build([example_id])
        return self._built[example_id]

    def build(self, example_ids: Iterable[str]) -> None:
        """Build the records of ``example_ids`` not built yet, in one pass over their rows."""
        new = [i for i in dict.fromkeys(example_ids) if i not in self._built]
        if not new:
            return
        rows = self._table.take(from_numpy(np.array([self._row[i] for i in new], np.int64)))
        columns = {n: rows.column(n).to_pylist() for n in rows.column_names}
        self._built.update(zip(new, records_from_columns(Example, columns), strict=True))

    @property
    def table(self) -> pa.Table:
        """The examples as Arrow columns."""
        return self._table

    def __contains__(self, example_id: object) -> bool:
        return example_id in self._row

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)


class _Targets:
    """The responses a stage works on, as Arrow columns, with their examples.

    Only the columns a step needs are turned into Python values: the ids to
    choose what to compute, and whole responses for one batch at a time.
    """

    def __init__(self, store: RunStore, datasets: Iterable[str] | None) -> None:
        examples = store.arrow("examples")
        responses = store.arrow("responses")
        known = examples.column("example_id")
        if datasets is not None:
            wanted = from_texts(sorted(set(datasets)))
            known = examples.filter(pc.is_in(examples.column("dataset"), wanted)).column(
                "example_id"
            )
        inside = pc.is_in(responses.column("example_id"), known)
        if datasets is None and not pc.all(inside).as_py() and responses.num_rows:
            lost = responses.filter(pc.invert(inside)).column("example_id").to_pylist()
            missing = sorted(set(lost))
            raise InvalidInputError(
                f"{len(missing)} responses point at examples the run does not hold "
                f"(e.g. {missing[:3]}); load their dataset first.",
                path=store.location,
                field="example_id",
            )
        self.responses = responses.filter(inside)
        self.examples = _Examples(examples)
        self._example_table = examples
        known_ids = examples.column("example_id").combine_chunks()
        where = pc.index_in(self.responses.column("example_id"), value_set=known_ids)
        self.example_rows = to_numpy(where, fill=-1).astype(np.int64)

    def __len__(self) -> int:
        return self.responses.num_rows

    def seen_through(self, view: ProxyView) -> _Targets:
        """The same targets, each response with the proxy's features instead of its own."""
        other = copy.copy(self)
        other.responses = view.responses
        return other

    def having(self, needs: Sequence[str]) -> pa.ChunkedArray:
        """Return whether each response's example has every need (``references``, ``context``)."""
        ok = np.ones(self._example_table.num_rows, dtype=bool)
        for need in needs:
            column = self._example_table.column(need)
            if need == "references":
                ok &= to_numpy(pc.list_value_length(column), fill=0) > 0
            else:
                ok &= np.array([bool((c or "").strip()) for c in column.to_pylist()], dtype=bool)
        ids = self._example_table.column("example_id").filter(from_numpy(ok))
        return pc.is_in(self.responses.column("example_id"), ids)


def _stored(
    store: RunStore, table: str, column: str, key: str, *, retry_errors: bool
) -> tuple[pa.Array, pa.Array, pa.Table]:
    """Return the response ids ``key`` has a standing record for, and those to retry.

    The third item is the standing records whose call failed (a fatal error,
    not retried without ``retry_errors``), with their ``error``.
    """
    stored = store.arrow(table, columns=["error", "retryable", "failed"])
    mine = stored.filter(pc.equal(stored.column(column), scalar(key)))
    if not mine.num_rows:
        return pa.nulls(0, pa.string()), pa.nulls(0, pa.string()), mine
    errored = pc.not_equal(mine.column("error").fill_null(scalar("")), scalar(""))
    retryable = mine.column("retryable").fill_null(scalar(False))
    redo = errored if retry_errors else pc.and_(errored, retryable)
    ids = mine.column("response_id").combine_chunks()
    stands = pc.invert(redo).combine_chunks()
    failed = pc.and_(errored, pc.or_(mine.column("failed").fill_null(scalar(False)), retryable))
    standing_failures = mine.filter(pc.and_(stands, failed.combine_chunks()))
    return ids.filter(stands), ids.filter(redo.combine_chunks()), standing_failures


def _todo(
    targets: _Targets, eligible: pa.ChunkedArray, done: pa.Array, failed: pa.Array
) -> tuple[np.ndarray, int]:
    """Return the positions of the eligible responses not ``done``, and how many are retries."""
    ids = targets.responses.column("response_id")
    stands = pc.is_in(ids, value_set=done)
    rows = np.flatnonzero(to_numpy(pc.and_(eligible, pc.invert(stands))))
    retried = pc.is_in(ids.take(from_numpy(rows.astype(np.int64))), value_set=failed)
    return rows, int(pc.sum(retried).as_py() or 0)


def _run_component(
    store: RunStore,
    component: Labeler | Detector,
    targets: _Targets,
    *,
    table: str,
    batch_size: int | None,
    retry_errors: bool,
    cache: CallCache | None,
    executor: Executor,
    progress: Progress,
    report: StageReport,
    recorded: Mapping[str, Any],
    proxied: ProxyRead | None = None,
) -> None:
    key = component.key
    needs = sorted(n for n in component.needs if n in ("references", "context"))
    eligible = targets.having(needs)
    n_eligible = int(pc.sum(eligible).as_py() or 0)
    if not n_eligible:
        report.skipped[key] = f"every response: none has the {' and '.join(needs)} it needs"
        return
    if n_eligible < len(targets):
        report.skipped[key] = (
            f"{len(targets) - n_eligible} responses without the {' and '.join(needs)} it needs"
        )
    column = "labeler" if table == "labels" else "detector"
    done, failed, standing = _stored(store, table, column, key, retry_errors=retry_errors)
    todo, n_retried = _todo(targets, eligible, done, failed)
    report.reused[key] = n_eligible - len(todo)
    report.computed[key] = len(todo)
    report.retried[key] = n_retried
    if standing.num_rows:
        ids = targets.responses.column("response_id").filter(eligible)
        standing = standing.filter(pc.is_in(standing.column("response_id"), value_set=ids))
        if standing.num_rows:
            report.failed_before[key] = standing.num_rows
            report.count_failures(key, failure_texts(standing.column("error")))
    n_stored = len(done) + len(failed)
    if same_records(key, recorded.get(key), component.spec, n_stored, len(todo), report):
        store.update_manifest(components={key: component.spec})
    if proxied is not None and len(todo):
        view = proxied.view()
        targets = targets.seen_through(view)
        todo = _fail_unmeasured(store, component, targets, todo, view, report)
    if len(todo):
        shared = PartContext(
            store,
            component,
            table=table,
            responses=targets.responses,
            examples=targets.examples,
            example_table=targets.examples.table,
            example_rows=targets.example_rows,
            cache=cache,
        )
        overlapping = _overlaps(component) and isinstance(executor, LocalExecutor)
        # Calls to a server start after the first few prompts, not after a whole part's.
        first = FIRST_REMOTE_BATCH if overlapping and batch_size is None else None
        batches = _batches(todo, batch_size or component.batch_rows, first=first)
        work: Callable[[PartContext, np.ndarray], PartTally] = compute_part
        runner = executor
        if overlapping and len(batches) > 1:
            # A failed batch or Ctrl-C cancels the calls the other batch waits on.
            work, runner = compute_overlapping_part, LocalExecutor(workers=2, on_stop=cancel_calls)
        with progress.task(f"{column} {key}", len(todo)) as task:
            for tally in runner.map(work, shared, batches):
                tally.add_to(report, key)
                task.advance(tally.n)
        store.compact(table)
    names = ("computed", "missing", "failed", "unreadable", "failed_before", "reused", "retried")
    counts = {name: getattr(report, name).get(key, 0) for name in names}
    store.update_manifest(last_run={key: counts})


FIRST_REMOTE_BATCH = 64
"""Rows of the first part of a component whose calls wait on a server (when no
``batch_size`` is given); each next part doubles, up to the component's
``batch_rows``. The first calls go out once 64 prompts are made, not 2,048, and
each part's prompts are made while the last part's calls are answered."""


def _batches(todo: np.ndarray, size: int, *, first: int | None = None) -> list[np.ndarray]:
    """Cut ``todo`` into parts of ``size`` rows; given ``first``, parts start there and double."""
    out, start, step = [], 0, min(first, size) if first else size
    while start < len(todo):
        out.append(todo[start : start + step])
        start += step
        step = min(2 * step, size)
    return out


def _overlaps(component: Labeler | Detector) -> bool:
    """Whether two batches of ``component`` may run at once (its calls wait on a server)."""
    return bool(getattr(component, "overlaps_batches", False))


def _fail_unmeasured(
    store: RunStore,
    component: Labeler | Detector,
    targets: _Targets,
    todo: np.ndarray,
    view: ProxyView,
    report: StageReport,
) -> np.ndarray:
    """Store the failed score of each response in ``todo`` the proxy could not measure.

    Returns the positions left to score. The scores say why, are counted as
    failed (the command exits with failures) and stand until ``retry_errors``.
    """
    if not view.failures or not isinstance(component, Detector):
        return todo
    ids = targets.responses.column("response_id").take(from_numpy(todo.astype(np.int64)))
    unmeasured = to_numpy(pc.is_in(ids, value_set=from_texts(sorted(view.failures))))
    if not unmeasured.any():
        return todo
    failed = [str(r) for r in ids.filter(from_numpy(unmeasured)).to_pylist()]
    scores = failure_scores(component, failed, view)
    store.append(scores)
    key = component.key
    report.failed[key] = report.failed.get(key, 0) + len(scores)
    counts: dict[str, int] = {}
    for score in scores:
        counts[score.error] = counts.get(score.error, 0) + 1
    report.count_failures(key, counts)
    return todo[~unmeasured]


def _run_stage(
    store: RunStore,
    components: Sequence[Labeler] | Sequence[Detector],
    *,
    table: str,
    stored_need: str,
    datasets: Iterable[str] | None,
    batch_size: int | None,
    retry_errors: bool,
    cache: CallCache | None,
    executor: Executor | None,
    progress: Progress | None,
    proxy: ProxyModel | None = None,
) -> StageReport:
    """Run each component that is computed (not read from the dataset) on what it lacks."""
    if batch_size is not None:
        check_arg(
            batch_size,
            Interval(int, 1),
            name="batch_size",
            owner="label" if table == "labels" else "detect",
        )
    report = StageReport()
    computed = [c for c in components if stored_need not in c.needs]
    targets = _Targets(store, datasets)
    proxied = None
    if proxy is not None:
        proxied = ProxyRead(
            store,
            proxy,
            targets.responses,
            targets.examples,
            [c for c in computed if isinstance(c, Detector)],
            retry_errors=retry_errors,
            progress=progress,
            report=report,
        )
    recorded = store.read_manifest().get("components", {})  # the specs stored records came from
    for component in computed:
        through = None
        if proxied is not None and proxied.active and isinstance(component, Detector):
            if reads_features(component):
                component, through = proxied.wrap(component), proxied
        _run_component(
            store,
            component,
            targets,
            proxied=through,
            table=table,
            batch_size=batch_size,
            retry_errors=retry_errors,
            cache=cache,
            executor=executor or LocalExecutor(),
            progress=progress or NullProgress(),
            report=report,
            recorded=recorded,
        )
    return report


def label(
    store: RunStore,
    labelers: Sequence[Labeler],
    *,
    datasets: Iterable[str] | None = None,
    batch_size: int | None = None,
    retry_errors: bool = False,
    cache: CallCache | None = None,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> StageReport:
    """Label every stored response (of ``datasets``) that a labeler has not labelled yet.

    ``cache`` is the run's call cache, handed to each labeler (an LLM judge
    sends its calls through it).

    ``batch_size`` is the number of responses per stored part (what a crash
    can lose); by default each labeler's ``batch_rows``, where a judge whose
    calls wait on a server starts with parts of :data:`FIRST_REMOTE_BATCH`
    and doubles them up to that.

    Labels whose error is retryable are computed again; ``retry_errors=True``
    recomputes every label with an error.

    ``executor`` computes the batches (default: this process, in order); with a
    :class:`~realitycheck.executors.RayExecutor` each batch is a task on a
    cluster's workers, which write their parts into the same run folder.
    """
    return _run_stage(
        store,
        labelers,
        table="labels",
        stored_need="recorded",
        datasets=datasets,
        batch_size=batch_size,
        retry_errors=retry_errors,
        cache=cache,
        executor=executor,
        progress=progress,
    )


def detect(
    store: RunStore,
    detectors: Sequence[Detector],
    *,
    datasets: Iterable[str] | None = None,
    batch_size: int | None = None,
    retry_errors: bool = False,
    cache: CallCache | None = None,
    executor: Executor | None = None,
    progress: Progress | None = None,
    proxy: ProxyModel | None = None,
) -> StageReport:
    """Score every stored response (of ``datasets``) that a detector has not scored yet.

    ``cache`` is the run's call cache, handed to detectors in :class:`RunContext`
    (a detector with a judge sends its calls through it), with the run itself
    (a supervised detector reads its training labels from it and saves its
    weights in it).

    Scores whose error is retryable are computed again; ``retry_errors=True``
    recomputes every score with an error. ``batch_size`` is as in :func:`label`
    (by default each detector's ``batch_rows``).

    ``executor`` computes the batches, as in :func:`label`.

    ``proxy`` reads the responses through a local white-box model when they
    carry no generation-time features (a dataset's own answers): each
    response's text is teacher-forced after the prompt generation would have
    sent, once per response and proxy (stored in the run, reused by a rerun),
    and the detectors that read token log-probabilities, entropies or hidden
    states score the proxy's features; their scores' spec, and the run's
    manifest, name the proxy (:mod:`realitycheck.pipeline._proxy_features`).
    A response the proxy cannot measure gets a failed score with the reason.

    Raises:
        InvalidInputError: Before any work, when the proxy cannot supply what a
            detector reads, or when some responses carry their generator's
            features and others not (one key would mix the two views); or
            when a detector's stored scores read other features than it would now.
    """
    return _run_stage(
        store,
        detectors,
        proxy=proxy,
        table="scores",
        stored_need="recorded",
        datasets=datasets,
        batch_size=batch_size,
        retry_errors=retry_errors,
        cache=cache,
        executor=executor,
        progress=progress,
    )
