"""The detector protocol, what detectors may need, and the registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from realitycheck.records import Example, Response, Score
from realitycheck.registry import Component, Registry

if TYPE_CHECKING:
    from realitycheck.backends import CallCache
    from realitycheck.store import RunStore

__all__ = ["Detector", "Needs", "detector", "detectors"]


@dataclass(frozen=True, kw_only=True)
class Needs:
    """What a run supplies to detectors, computed once and shared.

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
    checks those before any work. A response it cannot score gets
    ``value=None`` and an ``error``, marked ``retryable`` when the failure may
    pass (a backend failed or timed out), so a resumed run scores it again.
    """

    needs: ClassVar[frozenset[str]] = frozenset()

    def score(self, responses: Sequence[Response], needs: Needs) -> list[Score]:
        """Return one score per response, in order."""
        raise NotImplementedError

    def _score(
        self, response: Response, value: float | None, *, error: str = "", retryable: bool = False
    ) -> Score:
        """Return this detector's score of ``response``.

        ``retryable`` marks an error that may pass on a later try (a backend
        failure or timeout): a resumed run computes that score again.
        """
        return Score(
            response_id=response.response_id,
            detector=self.key,
            value=value,
            error=error,
            retryable=retryable,
            spec=self.spec_json,
        )


detectors: Registry[Detector] = Registry("detectors", "realitycheck.detectors")
detector = detectors.register
