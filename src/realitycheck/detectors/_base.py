"""The detector protocol, what a run supplies to detectors, and the registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from realitycheck.errors import BackendError, InvalidInputError, RetryableBackendError
from realitycheck.records import Example, Response, Score
from realitycheck.registry import Component, Registry

if TYPE_CHECKING:
    import pyarrow as pa

    from realitycheck.backends import CallCache
    from realitycheck.store import ResponseBatch, RunStore

__all__ = ["Detector", "RunContext", "detector", "detectors"]


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """What a run supplies to detectors, computed once and shared.

    Passed to :meth:`Detector.score` as ``run``. (A detector's ``needs`` is
    something else: the names of the features it reads.) Called ``Needs``
    before; that name is a deprecated alias for one release.

    Attributes:
        examples: The examples of the scored responses, by ``example_id``.
        recorded: Scores a dataset shipped, by ``(response_id, detector key)``.
        cache: The run's call cache: a detector that calls a backend (a judge)
            sends its requests through it with
            :func:`~realitycheck.backends.cached_generate`; ``None`` = no cache.
        store: The run being scored, for a detector that reads more than the
            responses it is given: a supervised detector (``probe``,
            ``finetuned``) reads the training labels and other detectors'
            scores of the whole dataset from it and saves its trained weights
            in it. ``None`` outside a run; such a detector then returns
            ``None`` scores saying so.
    """

    examples: Mapping[str, Example] = field(default_factory=dict)
    recorded: Mapping[tuple[str, str], Score] = field(default_factory=dict)
    cache: CallCache | None = None
    store: RunStore | None = None


@dataclass(frozen=True, kw_only=True)
class Detector(Component):
    """Scores responses: higher ``value`` = more likely hallucinated, always.

    ``needs`` names what the detector reads beyond the response text
    (``context``, ``samples``, ``logprobs``, ``hidden``, ``recorded``); a run
    checks those before any work. What the run itself supplies (the examples,
    the call cache, the store) comes to :meth:`score` as ``run``, a
    :class:`RunContext`. A response it cannot score gets
    ``value=None`` and an ``error``; when a backend call failed the score is
    ``failed`` too, and ``retryable`` when the failure may pass (a rate limit,
    a timeout), so a resumed run scores it again. A detector that reads an
    LLM's replies counts those it could not read in ``unreadable``, whether
    or not it could still give a value.
    """

    needs: ClassVar[frozenset[str]] = frozenset()
    batch_rows: ClassVar[int] = 2048
    """Responses per stored part when the stage is not told (what a crash can lose)."""

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        raise NotImplementedError

    def score_batch(self, batch: ResponseBatch, run: RunContext) -> pa.Table:
        """Return the scores of one batch of a run as a table (scores schema), one row per response.

        This is what the detect stage calls. By default it builds the batch's
        records and calls :meth:`score`; a detector that can work on columns
        overrides it and returns the same rows, built with
        :func:`realitycheck.store.score_table`, without a Python object per response.

        Raises:
            InvalidInputError: :meth:`score` returned a score count other than the batch's.
        """
        from realitycheck.store import records_table

        responses = batch.records()
        scores = self.score(responses, run)
        if len(scores) != len(responses):
            raise InvalidInputError(
                f"{self.key} returned {len(scores)} records for {len(responses)} responses."
            )
        return records_table(scores)

    def _score(
        self,
        response: Response,
        value: float | None,
        *,
        error: str = "",
        retryable: bool = False,
        failed: bool = False,
        unreadable: int = 0,
    ) -> Score:
        """Return this detector's score of ``response``.

        ``failed`` marks a score with no value because a backend call failed;
        ``retryable`` (which implies ``failed``) an error that may pass on a
        later try (a backend failure or timeout): a resumed run computes that
        score again. ``unreadable`` counts the replies of a backend that could
        not be read (a yes/no reply that is neither).
        """
        return Score(
            response_id=response.response_id,
            detector=self.key,
            value=value,
            error=error,
            retryable=retryable,
            failed=failed or retryable,
            unreadable=unreadable,
            spec=self.spec_json,
        )

    def _failed(self, response: Response, error: BackendError, *, unreadable: int = 0) -> Score:
        """Return the score of ``response`` when a backend call failed: no value, the error kept."""
        return self._score(
            response,
            None,
            error=str(error),
            retryable=isinstance(error, RetryableBackendError),
            failed=True,
            unreadable=unreadable,
        )


detectors: Registry[Detector] = Registry("detectors", "realitycheck.detectors")
detector = detectors.register
