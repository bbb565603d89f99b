"""One batch of a label or detect stage, computed wherever the executor runs it.

:func:`compute_part` is the task a stage maps over its batches
(:mod:`realitycheck.executors`): it builds the batch's responses from the
run's Arrow table, asks the component for their labels or scores, writes them
as one atomic part of the run and returns only their tally (:class:`PartTally`),
so nothing large travels back to the driver.

:class:`PartContext` is what every batch shares. In this process it holds
the live run, examples and call cache; pickled for a Ray worker, the run and
the cache travel as their paths (both pickle so) and the worker opens them
itself. The call cache stays consistent across
workers: it is one SQLite file in WAL mode, its rows are content-addressed and
written once (``INSERT OR IGNORE``), so two workers that make the same call
store one identical answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from realitycheck.backends import CallCache
from realitycheck.detectors import Detector, Needs
from realitycheck.errors import InvalidInputError
from realitycheck.labelers import Labeler
from realitycheck.pipeline._report import StageReport, outcome_of
from realitycheck.records import Example, Label, Response, Score, records_from_columns
from realitycheck.store import RunStore

__all__ = ["PartContext", "PartTally", "compute_part"]


class PartContext:
    """What every batch of one component's stage shares.

    Args:
        store: The run the parts are written to.
        component: The labeler (``table="labels"``) or detector (``table="scores"``).
        table: ``labels`` or ``scores``.
        responses: The stage's responses as Arrow columns; a batch is positions in it.
        examples: The run's examples by id (each built on first lookup).
        cache: The call cache handed to the component, or ``None``.
    """

    def __init__(
        self,
        store: RunStore,
        component: Labeler | Detector,
        *,
        table: str,
        responses: pa.Table,
        examples: Mapping[str, Example],
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
        self.cache = cache


@dataclass
class PartTally:
    """The outcomes of one written part: how many records, and how many of each non-value.

    Attributes:
        n: Records written (one per response of the batch).
        outcomes: Count of each outcome other than ``value`` (``missing``, ``failed``).
        missing_why: The first error among the missing records, if any.
    """

    n: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    missing_why: str = ""

    def add_to(self, report: StageReport, key: str) -> None:
        """Add these outcomes to ``report`` under the component ``key``."""
        for outcome, count in self.outcomes.items():
            counts_of = getattr(report, outcome)
            counts_of[key] = counts_of.get(key, 0) + count
        if self.missing_why:
            report.missing_why.setdefault(key, self.missing_why)


def _tally(records: Sequence[Label | Score]) -> PartTally:
    tally = PartTally(n=len(records))
    for record in records:
        outcome = outcome_of(record)
        if outcome != "value":
            tally.outcomes[outcome] = tally.outcomes.get(outcome, 0) + 1
        if outcome == "missing" and record.error and not tally.missing_why:
            tally.missing_why = record.error
    return tally


def compute_part(context: PartContext, rows: np.ndarray) -> PartTally:
    """Compute the labels or scores of the responses at positions ``rows``, store them as a part.

    Args:
        context: What the stage's batches share.
        rows: Positions in ``context.responses``.

    Returns:
        The tally of the records written.

    Raises:
        InvalidInputError: The component returned a record count other than the batch's.
    """
    part = context.responses.take(pa.array(rows, pa.int64()))
    columns = {n: part.column(n).to_pylist() for n in part.column_names}
    build = getattr(context.examples, "build", None)
    if build is not None:
        build(columns["example_id"])
    batch = records_from_columns(Response, columns)
    component = context.component
    records: list[Label | Score]
    if isinstance(component, Labeler):
        records = list(component.label(batch, context.examples, cache=context.cache))
    else:
        needs = Needs(examples=context.examples, cache=context.cache, store=context.store)
        records = list(component.score(batch, needs))
    if len(records) != len(batch):
        raise InvalidInputError(
            f"{component.key} returned {len(records)} records for {len(batch)} responses."
        )
    context.store.append(records)
    return _tally(records)
