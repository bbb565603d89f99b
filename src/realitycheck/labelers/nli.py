"""The ``nli`` labeler: does the response entail (or contradict) the reference answers?"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from realitycheck.labelers._base import Labeler, labeler
from realitycheck.labelers._similarity import references_of
from realitycheck.params import (
    InstanceOf,
    Interval,
    OneOf,
    SequenceOf,
    as_tuple,
    param,
)
from realitycheck.records import Example, Label, Response
from realitycheck.registry import nested

if TYPE_CHECKING:
    from realitycheck.backends import Backend, CallCache, PairScore

__all__ = ["NLILabeler"]

_DIRECTIONS = ("response", "reference", "both")


@labeler("nli")
@dataclass(frozen=True, kw_only=True)
class NLILabeler(Labeler):
    """Whether the response entails a reference answer, by a sequence-pair (NLI) classifier.

    Each reference answer ``r`` of the example is paired with the response
    ``x``; with ``premise="response"`` (default) the pair is (premise ``x``,
    hypothesis ``r``): the response states what the reference states. With
    ``premise="reference"`` it is (``r``, ``x``); with ``both``, both pairs are
    scored and the smaller entailment counts (bidirectional entailment). The
    classifier (the ``judge``) is any backend with the ``pairs`` capability
    (:func:`realitycheck.backends.cached_pairs`).

    The rule: ``e = max over references of P(entailment)`` (for a
    single-logit cross-encoder, its consistency score). ``hallucinated`` is
    ``e < threshold``; ``score = 1 - e`` in [0, 1], higher = more likely
    hallucinated; ``category`` is ``correct``, else ``contradiction`` when
    the best reference's P(contradiction) exceeds its P(entailment) and
    P(neutral), else ``incorrect``; ``raw`` holds the best reference's
    probabilities. An empty response or an example without references gets
    ``hallucinated=None`` and an error, as does a pair the classifier failed on.

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``), e.g. ``entailment+neutral+contradiction``.
        premise: Which text is the premise: ``response``, ``reference`` or ``both``.
        threshold: Entailment probability below which the response is hallucinated.
    """

    judge: Backend = nested(
        "backends",
        default=dataclasses.MISSING,
        doc="the pair classifier",
        aliases=("classifier",),
    )
    labels: tuple[str, ...] = param((), SequenceOf(InstanceOf(str)), convert=as_tuple)
    premise: Literal["response", "reference", "both"] = param("response", OneOf(_DIRECTIONS))
    threshold: float = param(0.5, Interval(float, 0, 1))
    needs: ClassVar[frozenset[str]] = frozenset({"references"})

    def __post_init__(self) -> None:
        super().__post_init__()
        from realitycheck.backends import require_pairs

        require_pairs(self.judge, self.name)

    def _pairs(self, text: str, reference: str) -> list[tuple[str, str]]:
        forward, backward = (text, reference), (reference, text)
        if self.premise == "response":
            return [forward]
        if self.premise == "reference":
            return [backward]
        return [forward, backward]

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order."""
        from realitycheck.backends import cached_pairs

        refs, errors = references_of(responses, examples)
        for k, response in enumerate(responses):
            if not errors[k] and not response.text.strip():
                errors[k] = "the response is empty"
        wanted = sorted(
            {
                pair
                for k, response in enumerate(responses)
                if not errors[k]
                for r in refs[k]
                for pair in self._pairs(response.text, r)
            }
        )
        scored = cached_pairs(self.judge, wanted, labels=self.labels, cache=cache)
        answers = dict(zip(wanted, scored, strict=True))
        out = []
        for k, response in enumerate(responses):
            if errors[k]:
                out.append(self._label(response, None, error=errors[k]))
                continue
            per_ref = [[answers[p] for p in self._pairs(response.text, r)] for r in refs[k]]
            failed = [a.error for group in per_ref for a in group if a.error]
            if failed:
                out.append(
                    self._label(
                        response, None, error=f"the classifier failed: {failed[0]}", failed=True
                    )
                )
                continue
            best = max((min(group, key=_entailment) for group in per_ref), key=_entailment)
            out.append(self._verdict(response, best))
        return out

    def _verdict(self, response: Response, best: PairScore) -> Label:
        e = _entailment(best)
        hallucinated = e < self.threshold
        category = "correct"
        if hallucinated:
            contradiction = best.contradiction if best.contradiction is not None else -1.0
            neutral = best.neutral if best.neutral is not None else -1.0
            category = "contradiction" if contradiction > max(e, neutral) else "incorrect"
        raw = " ".join(
            f"{name}={value:.4f}"
            for name, value in (
                ("entailment", best.entailment),
                ("neutral", best.neutral),
                ("contradiction", best.contradiction),
            )
            if value is not None
        )
        return self._label(response, hallucinated, score=1.0 - e, category=category, raw=raw)


def _entailment(answer: PairScore) -> float:
    return float(answer.entailment) if answer.entailment is not None else float("nan")
