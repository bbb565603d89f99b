"""The labeler protocol and its registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from realitycheck.errors import InvalidInputError
from realitycheck.records import Example, Label, Response
from realitycheck.registry import Component, Registry

if TYPE_CHECKING:
    import pyarrow as pa

    from realitycheck.backends import CallCache
    from realitycheck.store import ResponseBatch, RunStore

__all__ = ["Labeler", "labeler", "labelers"]


@dataclass(frozen=True, kw_only=True)
class Labeler(Component):
    """Judges whether responses are hallucinated.

    A labeler returns one :class:`Label` per response, in the order given, with
    ``hallucinated`` set by its threshold and, where it has one, a continuous
    ``score`` (higher = more likely hallucinated). A response it cannot judge
    (no reference, empty text) gets ``hallucinated=None`` and an ``error``;
    one that failed for a reason that may pass (a judge's backend failed or
    timed out) is also marked ``retryable``, so a resumed run labels it again.
    """

    needs: ClassVar[frozenset[str]] = frozenset()
    batch_rows: ClassVar[int] = 2048
    """Responses per stored part when the stage is not told (what a crash can lose)."""

    @property
    def overlaps_batches(self) -> bool:
        """Whether the label stage may run two of its batches at once (on two threads).

        True for a labeler whose time is spent waiting on a server (an LLM
        judge on a remote backend): the next batch's calls then fill the time
        the last one's replies are read and written, and the backend's
        ``concurrency`` still caps the calls in flight. Such a labeler must be
        safe to call from two threads at once.
        """
        return False

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order.

        Args:
            responses: The responses to judge.
            examples: Their examples, by ``example_id``.
            cache: The run's call cache: a labeler that calls a backend (an LLM
                judge) sends its requests through it with
                :func:`~realitycheck.backends.cached_generate`; others ignore it.
        """
        raise NotImplementedError

    def label_batch(self, batch: ResponseBatch, *, cache: CallCache | None = None) -> pa.Table:
        """Return the labels of one batch of a run as a table (labels schema), one row per response.

        This is what the label stage calls. By default it builds the batch's
        records and calls :meth:`label`; a labeler that can work on columns
        (texts and references as arrays) overrides it and returns the same
        rows, built with :func:`realitycheck.store.label_table`, without a
        Python object per response.

        Raises:
            InvalidInputError: :meth:`label` returned a label count other than the batch's.
        """
        from realitycheck.store import records_table

        responses = batch.records()
        labels = self.label(responses, batch.examples, cache=cache)
        if len(labels) != len(responses):
            raise InvalidInputError(
                f"{self.key} returned {len(labels)} records for {len(responses)} responses."
            )
        return records_table(labels)

    def label_in_run(
        self, batch: ResponseBatch, store: RunStore, *, cache: CallCache | None = None
    ) -> pa.Table:
        """Return the labels of one batch of the run ``store``: what the label stage calls.

        By default :meth:`label_batch`, which reads nothing of the run beyond
        the batch. A labeler that learns from the run's other labels (its
        ``needs`` holds ``labels``: a few-shot judge shown labelled responses
        of the calibration split) overrides it to read them from ``store``.
        """
        return self.label_batch(batch, cache=cache)

    def _label(
        self,
        response: Response,
        hallucinated: bool | None,
        *,
        score: float | None = None,
        category: str = "",
        raw: str = "",
        error: str = "",
        retryable: bool = False,
        failed: bool = False,
        unreadable: int = 0,
    ) -> Label:
        """Return this labeler's label of ``response``.

        ``retryable`` marks an error that may pass on a later try (a backend
        failure or timeout): a resumed run computes that label again.
        ``failed`` marks a label without a verdict because a call failed
        (retryable or not); ``unreadable`` counts the replies behind the label
        that gave no verdict.
        """
        return Label(
            response_id=response.response_id,
            labeler=self.key,
            hallucinated=hallucinated,
            score=score,
            category=category,
            raw=raw,
            error=error,
            retryable=retryable,
            failed=failed or retryable,
            unreadable=unreadable,
            spec=self.spec_json,
        )


labelers: Registry[Labeler] = Registry("labelers", "realitycheck.labelers")
labeler = labelers.register
