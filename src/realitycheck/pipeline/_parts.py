"""One batch of a label or detect stage, computed wherever the executor runs it.

:func:`compute_part` is the task a stage maps over its batches
(:mod:`realitycheck.executors`): it hands the component the batch's rows of
the run's Arrow tables (:class:`~realitycheck.store.ResponseBatch`), gets their
labels or scores back as one table, writes it as one atomic part of the run and
returns only its tally (:class:`PartTally`), so nothing large travels back to
the driver. Only a component that works on records turns the batch into them.

:class:`PartContext` is what every batch shares. In this process it holds
the live run, examples and call cache; pickled for a Ray worker, the run and
the cache travel as their paths (both pickle so) and the worker opens them
itself. The call cache stays consistent across
workers: it is one SQLite file in WAL mode, its rows are content-addressed and
written once (``INSERT OR IGNORE``), so two workers that make the same call
store one identical answer.

The run may be on object storage (``s3://…``, :mod:`realitycheck.store`): it
pickles as its URI, each worker opens the bucket itself and writes its parts
there, each as one atomic object under its final key; the driver alone writes
the manifest and the lock, and compacts after the last batch. The call cache
is a local SQLite file and stays one: with workers on several machines, give
``--cache-dir`` a folder on shared POSIX storage (or ``--no-cache``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from realitycheck.backends import CallCache
from realitycheck.detectors import Detector, RunContext
from realitycheck.errors import InvalidInputError
from realitycheck.executors import thread_safe
from realitycheck.labelers import Labeler
from realitycheck.pipeline._report import StageReport
from realitycheck.records import INVALID, Example
from realitycheck.store import ResponseBatch, RunStore, from_numpy, scalar, to_numpy

__all__ = [
    "PartContext",
    "PartTally",
    "compute_overlapping_part",
    "compute_part",
    "failure_texts",
]


class PartContext:
    """What every batch of one component's stage shares.

    Args:
        store: The run the parts are written to.
        component: The labeler (``table="labels"``) or detector (``table="scores"``).
        table: ``labels`` or ``scores``.
        responses: The stage's responses as Arrow columns; a batch is positions in it.
        examples: The run's examples by id (each built on first lookup).
        example_table: The run's examples as Arrow columns.
        example_rows: For each response, the row of its example in ``example_table``.
        cache: The call cache handed to the component, or ``None``.

    Raises:
        InvalidInputError: ``table`` is not the component's.
    """

    def __init__(
        self,
        store: RunStore,
        component: Labeler | Detector,
        *,
        table: str,
        responses: pa.Table,
        examples: Mapping[str, Example],
        example_table: pa.Table,
        example_rows: np.ndarray,
        cache: CallCache | None,
    ) -> None:
        wanted = "labels" if isinstance(component, Labeler) else "scores"
        if table != wanted:
            raise InvalidInputError(
                f"A part of {component.key} is of {wanted}. Got table {table!r} instead."
            )
        self.store = store
        self.component = component
        self.table = table
        self.responses = responses
        self.examples = examples
        self.example_table = example_table
        self.example_rows = example_rows
        self.cache = cache


@dataclass
class PartTally:
    """The outcomes of one written part: how many records, and how many of each non-value.

    Attributes:
        n: Records written (one per response of the batch).
        outcomes: Count of each outcome other than ``value`` (``missing``,
            ``failed``), and of records with ``unreadable`` replies.
        missing_why: The first error among the missing records, if any.
        failures: How many failed records had each error text.
    """

    n: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    missing_why: str = ""
    failures: dict[str, int] = field(default_factory=dict)

    def add_to(self, report: StageReport, key: str) -> None:
        """Add these outcomes to ``report`` under the component ``key``."""
        for outcome, count in self.outcomes.items():
            counts_of = getattr(report, outcome)
            counts_of[key] = counts_of.get(key, 0) + count
        if self.missing_why:
            report.missing_why.setdefault(key, self.missing_why)
        if self.failures:
            report.count_failures(key, self.failures)


def _flag(rows: pa.Table, name: str) -> np.ndarray:
    """A bool column of ``rows`` as an array (all ``False`` when a table lacks it)."""
    if name not in rows.column_names:
        return np.zeros(rows.num_rows, dtype=bool)
    return to_numpy(rows.column(name), fill=False).astype(bool)


def _tally(rows: pa.Table) -> PartTally:
    """The outcomes of written labels or scores (:func:`outcome_of`, on columns)."""
    n = rows.num_rows
    errors = rows.column("error").fill_null(scalar(""))
    has_error = to_numpy(pc.not_equal(errors, scalar("")))
    failed = has_error & (_flag(rows, "failed") | _flag(rows, "retryable"))
    if "hallucinated" in rows.column_names:
        empty = to_numpy(rows.column("hallucinated").is_null())
        category = rows.column("category").fill_null(scalar(""))
        no_decision = pc.or_(pc.equal(category, scalar("")), pc.equal(category, scalar(INVALID)))
        empty &= to_numpy(no_decision)
    else:
        empty = to_numpy(rows.column("value").is_null())
    missing = empty & ~failed
    if "unreadable" in rows.column_names:
        unreadable = to_numpy(rows.column("unreadable"), fill=0) > 0
    else:
        unreadable = np.zeros(n, dtype=bool)
    tally = PartTally(n=n)
    for outcome, where in (("missing", missing), ("failed", failed), ("unreadable", unreadable)):
        if where.any():
            tally.outcomes[outcome] = int(where.sum())
    why = np.flatnonzero(missing & has_error)
    if len(why):
        tally.missing_why = str(errors[int(why[0])].as_py())
    if failed.any():
        tally.failures = failure_texts(errors.filter(from_numpy(failed)))
    return tally


def failure_texts(errors: pa.ChunkedArray | pa.Array) -> dict[str, int]:
    """How many times each error text occurs in ``errors``, in order of first occurrence."""
    counts = pc.value_counts(errors)
    return dict(
        zip(
            counts.field("values").to_pylist(),
            counts.field("counts").to_pylist(),
            strict=True,
        )
    )


def compute_part(context: PartContext, rows: np.ndarray) -> PartTally:
    """Compute the labels or scores of the responses at positions ``rows``, store them as a part.

    The component gets the batch as columns (:class:`~realitycheck.store.ResponseBatch`);
    one that works on records builds them from it.

    Args:
        context: What the stage's batches share.
        rows: Positions in ``context.responses``.

    Returns:
        The tally of the records written.

    Raises:
        InvalidInputError: The component returned a record count other than the batch's.
    """
    positions = from_numpy(np.asarray(rows, dtype=np.int64))
    batch = ResponseBatch(
        context.responses.take(positions),
        context.example_table,
        context.example_rows[rows],
        context.examples,
    )
    component = context.component
    if isinstance(component, Labeler):
        table = component.label_in_run(batch, context.store, cache=context.cache)
    else:
        run = RunContext(examples=context.examples, cache=context.cache, store=context.store)
        table = component.score_batch(batch, run)
    if table.num_rows != len(batch):
        raise InvalidInputError(
            f"{component.key} returned {table.num_rows} records for {len(batch)} responses."
        )
    context.store.append_table(context.table, table)
    return _tally(table)


@thread_safe
def compute_overlapping_part(context: PartContext, rows: np.ndarray) -> PartTally:
    """:func:`compute_part` for a component whose batches may overlap, marked to run on threads.

    The label stage runs two such batches at once on the threads of
    :class:`~realitycheck.executors.LocalExecutor` when the component's time
    is spent waiting on a server
    (:attr:`~realitycheck.labelers.Labeler.overlaps_batches`): one batch's
    calls are in flight while the other's replies are read and its part is
    written. Each part is still one atomic file with a unique name, and the
    backend's ``concurrency`` still caps the calls of both.
    """
    return compute_part(context, rows)
