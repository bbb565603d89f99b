"""SelfCheckGPT's NLI variant on the backends' ``pairs`` capability.

The other SelfCheckGPT variants, and the sentence and sample conventions all
of them share, are in :mod:`realitycheck.detectors.selfcheck`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.detectors._features import sample_texts
from realitycheck.detectors.selfcheck import response_sentences
from realitycheck.errors import InvalidInputError, MissingFeatureError
from realitycheck.params import InstanceOf, OneOf, SequenceOf, as_tuple, param, param_error
from realitycheck.records import Response, Score
from realitycheck.registry import nested

if TYPE_CHECKING:
    from realitycheck.backends import Backend, PairScore

__all__ = ["SelfCheckNLI", "contradiction_share"]

Premise = Literal["sample", "sentence"]
_Plan = tuple[list[str], list[str]]
"""A response's sentences and its non-empty samples."""


def _plan(response: Response) -> _Plan | str:
    """Return the response's (sentences, samples), or why it cannot be scored."""
    try:
        samples = [s for s in sample_texts(response) if s.strip()]
        sentences = response_sentences(response)
    except MissingFeatureError as exc:
        return str(exc)
    return (sentences, samples) if samples else "every sample is empty"


def contradiction_share(answer: PairScore) -> float:
    """Return ``p_c / (p_e + p_c)`` of one pair, in [0, 1] (0.5 when both are 0).

    SelfCheckGPT's NLI score keeps only the entailment and contradiction
    logits, ``exp(z_c) / (exp(z_e) + exp(z_c))``; with the softmax
    probabilities of a classifier that also has a neutral class this is the
    same number, ``p_c / (p_e + p_c)``.
    """
    if answer.entailment is None or answer.contradiction is None:
        raise ValueError("a pair answer without entailment and contradiction probabilities")
    total = answer.entailment + answer.contradiction
    return answer.contradiction / total if total > 0 else 0.5


@detector("selfcheck_nli")
@dataclass(frozen=True, kw_only=True)
class SelfCheckNLI(Detector):
    """SelfCheckGPT with NLI: how often the samples contradict each response sentence.

    For sentence ``r_i`` and sample ``S^n``, a pair classifier (the
    ``judge`` backend's ``pairs`` capability, e.g. an MNLI model on
    ``hf``) reads the pair (premise ``S^n`` whole, hypothesis ``r_i``), as the
    paper states it; ``P(contradict) = p_c / (p_e + p_c)``
    (:func:`contradiction_share`, the neutral class left out), ``S(i) =
    mean_n P(contradict)`` (Manakul, Liusie and Gales 2023, "SelfCheckGPT",
    the NLI variant) and ``value = mean_i S(i)`` in
    ``[0, 1]``, higher = the samples contradict the response = more likely
    hallucinated. Pairs go through the run's call cache. The classifier must
    have a contradiction class: one that has none (a single-logit or an
    entailment / not-entailment model) is refused after scoring one pair,
    before any other. A response without samples, or an empty one, gets
    ``value=None`` with the reason; so does one whose pairs failed. The
    ``selfcheckgpt`` package (0.1.7) encodes the pair the other way round,
    ``(sentence, sample)``; ``premise=sentence`` reproduces it.

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``), e.g. ``entailment+neutral+contradiction``.
        premise: What the classifier reads first: ``sample`` (the paper) or
            ``sentence`` (the package's code).
    """

    judge: Backend = nested(
        "backends",
        default=dataclasses.MISSING,
        doc="the pair classifier",
        aliases=("classifier",),
    )
    labels: tuple[str, ...] = param((), SequenceOf(InstanceOf(str)), convert=as_tuple)
    premise: Premise = param("sample", OneOf(Premise), doc="what the classifier reads first")
    needs: ClassVar[frozenset[str]] = frozenset({"samples"})

    def __post_init__(self) -> None:
        """Check the parameters, the classifier's capability and declared contradiction class."""
        super().__post_init__()
        from realitycheck.backends import require_pairs

        require_pairs(self.judge, self.name)
        if self.labels and not any(n.strip().lower().startswith("contradict") for n in self.labels):
            raise param_error(
                "labels",
                self.name,
                "label names with a contradiction class",
                got=repr(list(self.labels)),
                hint="SelfCheckGPT's NLI score is P(contradiction) / (P(entailment) + "
                "P(contradiction)).",
            )

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        from realitycheck.backends import cached_pairs

        plans = [_plan(response) for response in responses]
        pairs = sorted(
            {
                (s, r)
                for plan in plans
                if not isinstance(plan, str)
                for r in plan[0]
                for s in plan[1]
            }
        )
        sent = pairs if self.premise == "sample" else [(r, s) for s, r in pairs]
        answers: dict[tuple[str, str], PairScore] = {}
        if pairs:
            first = cached_pairs(self.judge, sent[:1], labels=self.labels, cache=run.cache)
            self._check_classes(first[0])
            rest = cached_pairs(self.judge, sent[1:], labels=self.labels, cache=run.cache)
            answers = dict(zip(pairs, first + rest, strict=True))
        return [self._one(r, plan, answers) for r, plan in zip(responses, plans, strict=True)]

    def _check_classes(self, answer: PairScore) -> None:
        if answer.error or answer.contradiction is not None:
            return
        has = "a consistency score" if answer.neutral is None else "entailment and neutral"
        raise InvalidInputError(
            f"selfcheck_nli needs P(contradiction), but the pair classifier "
            f"{self.judge.key!r} (labels {list(self.labels) or 'from its config'}) "
            f"answers only {has}: it has no contradiction class.",
            field="judge",
        )

    def _one(
        self,
        response: Response,
        plan: _Plan | str,
        answers: dict[tuple[str, str], PairScore],
    ) -> Score:
        if isinstance(plan, str):
            return self._score(response, None, error=plan)
        sentences, samples = plan
        failed = [answers[s, r].error for r in sentences for s in samples if answers[s, r].error]
        if failed:
            return self._score(
                response, None, error=f"the classifier failed: {failed[0]}", failed=True
            )
        grid = np.array([[contradiction_share(answers[s, r]) for s in samples] for r in sentences])
        return self._score(response, float(grid.mean(axis=1).mean()))
