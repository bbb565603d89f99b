"""Grounding by a sequence-pair classifier: is what the response says supported by the source?

Three detectors, one rule: the source (the example's ``context``) is cut
into premises, the response into hypotheses; a backend with the ``pairs``
capability (:func:`realitycheck.backends.cached_pairs`, e.g.
``hf[model=...]``) scores every (premise, hypothesis) pair; a hypothesis's
*support* is its largest :attr:`~realitycheck.backends.PairScore.entailment`
over the premises (the probability of entailment of an NLI classifier, or
the consistency score of a single-logit cross-encoder), and the response's
value is ``1 - min(support)`` over its hypotheses: the least supported part
decides. The value lies in [0, 1]; higher = more likely hallucinated.

============== ====================================== ==============================
detector       premises (source)                       hypotheses (response), ``unit``
============== ====================================== ==============================
nli_grounding  chunks of ``chunk_sentences`` sentences  ``sentence`` (SummaC-ZS) or
                                                        ``claims``
cross_encoder  windows of ``window`` words              ``response``, whole (HHEM), or
                                                        ``claims``
claim_check    windows of ``window`` words              ``sentence`` (MiniCheck,
                                                        AlignScore) or ``claims``
============== ====================================== ==============================

Sentences are :func:`realitycheck.text.split_sentences`.

**Claim-wise** (``unit=claims``): the hypotheses are the claims an LLM, the
nested ``splitter`` backend, splits the response into, as seed paper 003
("Benchmarking LLM Faithfulness in RAG with Evolving Leaderboards", §6.2,
Table 1, after MiniCheck) applies HHEM, MiniCheck and the other fine-tuned
detectors claim by claim: the response is hallucinated when any claim is
unsupported, so the value is the largest unsupported score over its claims,
``max(1 - support) = 1 - min(support)``, the same rule as for sentences.
The split is :mod:`realitycheck.claims`: the prompt and the request of the
labeler ``claim_judge`` at its default settings (greedy, seed 0, 1,024
tokens, a JSON Schema where the backend takes one), through the run's call
cache, so with the same LLM the split is paid once whether ``claim_judge``
or a detector asks first. A split reply without a readable claim list makes
the response's value ``None`` with the reason and a quote of the reply as
its error, counted in ``Score.unreadable`` (never a fallback to
sentences); a failed split call gives ``failed`` (``retryable`` when it may
pass). A response in which the splitter finds no factual claim ("I do not
know") has nothing unsupported: its value is 0, as ``claim_judge`` labels
it faithful by default. A window is
``window`` consecutive whitespace-separated words, the next one starting
``stride`` words later, the last one ending at the source's last word (the
words stand in for the classifier's tokens so that the chunks, and so the
cached pairs, do not depend on a tokenizer; a pair longer than the model's
limit is still truncated by the backend). Every pair goes through the
run's call cache (``RunContext.cache``): a rerun scores no pair again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.params import (
    InstanceOf,
    Interval,
    OneOf,
    SequenceOf,
    as_tuple,
    param,
    param_error,
)
from realitycheck.records import Response, Score
from realitycheck.registry import nested
from realitycheck.text import split_sentences
from realitycheck.verdicts import quote_reply

if TYPE_CHECKING:
    from realitycheck.backends import Backend, GenerationRequest

__all__ = [
    "UNITS",
    "ClaimCheck",
    "CrossEncoder",
    "NLIGrounding",
    "PairGrounding",
    "word_windows",
]

Unit = Literal["response", "sentence", "claims"]
UNITS: tuple[Unit, ...] = ("response", "sentence", "claims")
"""What of a response is checked against the source: all of it, each sentence, each claim."""
_Plan = tuple[list[str], list[str]]
"""A response's premises and hypotheses (its claims, once split)."""


def _unit(default: Unit, *units: Unit) -> Any:
    """Declare the ``unit`` field of a detector that checks ``units`` of a response."""
    return param(default, OneOf(units), doc="what of the response is checked against the source")


def word_windows(text: str, window: int, stride: int) -> list[str]:
    """Cut ``text`` into windows of ``window`` words, one every ``stride`` words.

    The windows start at words ``0, stride, 2 * stride, …`` while a window
    started there would reach past no word of the text; the last window
    then ends at the last word, so every word is in some window. A text of
    at most ``window`` words is one window. Words are joined by single spaces.
    """
    tokens = text.split()
    if len(tokens) <= window:
        return [" ".join(tokens)] if tokens else []
    starts = list(range(0, len(tokens) - window + 1, stride))
    if starts[-1] + window < len(tokens):
        starts.append(len(tokens) - window)
    return [" ".join(tokens[s : s + window]) for s in starts]


@dataclass(frozen=True, kw_only=True)
class PairGrounding(Detector):
    """Shared by the pair-classifier grounding detectors (see the module documentation).

    Subclasses say how the source becomes premises (:meth:`premises`) and
    declare their ``unit`` (:meth:`hypotheses`).

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``), e.g. ``entailment+neutral+contradiction``.
        unit: What of the response is checked: ``sentence``, ``response`` (the
            whole of it) or ``claims`` (split by ``splitter``).
        splitter: The LLM that splits a response into claims, required with
            ``unit=claims`` and refused otherwise, e.g. ``openai[model=gpt-4o]``.
    """

    judge: Backend = nested(
        "backends",
        default=dataclasses.MISSING,
        doc="the pair classifier",
        aliases=("classifier",),
    )
    labels: tuple[str, ...] = param((), SequenceOf(InstanceOf(str)), convert=as_tuple)
    unit: Unit = _unit("sentence", *UNITS)
    splitter: Backend | None = nested(
        "backends", doc="the LLM that splits a response into claims (unit=claims)"
    )
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def __post_init__(self) -> None:
        super().__post_init__()
        from realitycheck.backends import require_pairs

        require_pairs(self.judge, self.name)
        if self.unit == "claims" and self.splitter is None:
            raise param_error(
                "splitter",
                self.name,
                "a backend that splits responses into claims, e.g. "
                "splitter=openai[model=gpt-4o], when unit='claims'",
                None,
            )
        if self.unit != "claims" and self.splitter is not None:
            raise param_error(
                "splitter",
                self.name,
                "left out unless unit='claims'",
                got=repr(self.splitter.key),
            )

    def premises(self, context: str) -> list[str]:
        """Return the parts of the source each hypothesis is checked against."""
        raise NotImplementedError

    def hypotheses(self, text: str) -> list[str]:
        """Return the parts of the response that must each be supported (``unit``).

        The response's sentences, or the whole response (stripped); empty for
        an empty response. The claims of ``unit=claims`` come from the
        splitter's replies instead: this returns the whole response, the text
        that is split.
        """
        if self.unit == "sentence":
            return split_sentences(text)
        return [text.strip()] if text.strip() else []

    def _plan(self, response: Response, run: RunContext) -> _Plan | Score:
        """Return the response's (premises, hypotheses), or its score when it cannot be scored."""
        example = run.examples.get(response.example_id)
        if example is None:
            return self._score(
                response, None, error=f"example {response.example_id!r} was not given"
            )
        premises = self.premises(example.context)
        if not premises:
            return self._score(response, None, error="the example has no context")
        hypotheses = self.hypotheses(response.text)
        if not hypotheses:
            return self._score(response, None, error="the response is empty")
        return premises, hypotheses

    def _claims(
        self,
        splitter: Backend,
        responses: Sequence[Response],
        plans: list[_Plan | Score],
        run: RunContext,
    ) -> list[_Plan | Score]:
        """Return ``plans`` with each response's claims as its hypotheses, or why there are none.

        One split request per response, through the call cache
        (:func:`realitycheck.claims.split_request`, ``claim_judge``'s request).
        """
        from realitycheck.backends import cached_generate
        from realitycheck.claims import read_split, split_prompt, split_request

        premises: dict[int, list[str]] = {}
        asked: dict[int, GenerationRequest] = {}
        for i, (response, plan) in enumerate(zip(responses, plans, strict=True)):
            if not isinstance(plan, Score):
                premises[i] = plan[0]
                task = run.examples[response.example_id].task
                asked[i] = split_request(splitter, split_prompt(task, response.text))
        answers = cached_generate(splitter, list(asked.values()), cache=run.cache)
        out = list(plans)
        for i, generation in zip(asked, answers, strict=True):
            response = responses[i]
            if generation.error:
                out[i] = self._score(
                    response,
                    None,
                    error=f"the splitter {splitter.key!r} failed on the claim split: "
                    f"{generation.error}",
                    retryable=generation.retryable,
                    failed=True,
                )
                continue
            split = read_split(generation)
            if split.claims is None:
                out[i] = self._score(
                    response,
                    None,
                    error=f"no claims in the reply of the splitter {splitter.key!r} "
                    f"({split.reason}): {quote_reply(split.reply)}",
                    unreadable=1,
                )
                continue
            out[i] = premises[i], list(split.claims)
        return out

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order (``1 - min`` support, in [0, 1])."""
        from realitycheck.backends import cached_pairs

        plans = [self._plan(response, run) for response in responses]
        if self.splitter is not None:  # unit=claims (checked when built)
            plans = self._claims(self.splitter, responses, plans, run)
        pairs = sorted(
            {
                (p, h)
                for plan in plans
                if not isinstance(plan, Score)
                for h in plan[1]
                for p in plan[0]
            }
        )
        scored = cached_pairs(self.judge, pairs, labels=self.labels, cache=run.cache)
        answers = dict(zip(pairs, scored, strict=True))
        out = []
        for response, plan in zip(responses, plans, strict=True):
            if isinstance(plan, Score):
                out.append(plan)
                continue
            premises, hypotheses = plan
            if not hypotheses:  # no claim, so none unsupported
                out.append(self._score(response, 0.0))
                continue
            failed = [answers[p, h].error for h in hypotheses for p in premises]
            failed = [e for e in failed if e]
            if failed:
                out.append(
                    self._score(
                        response, None, error=f"the classifier failed: {failed[0]}", failed=True
                    )
                )
                continue
            support = [
                max(_entailment(answers[p, h].entailment) for p in premises) for h in hypotheses
            ]
            out.append(self._score(response, 1.0 - min(support)))
        return out


def _entailment(value: float | None) -> float:
    return float(value) if value is not None else float("nan")


@detector("nli_grounding")
@dataclass(frozen=True, kw_only=True)
class NLIGrounding(PairGrounding):
    """SummaC-ZS-style grounding: one minus the entailment of the least supported sentence.

    The source is cut into chunks of ``chunk_sentences`` consecutive
    sentences (1 = sentence level, as SummaC-ZS; no overlap), the response
    into sentences. A response sentence's support is its largest
    P(entailment) over the chunks (premise = chunk, hypothesis = sentence);
    ``value = 1 - min`` over the response's sentences, in [0, 1], higher =
    some sentence is entailed by no part of the source = more likely
    hallucinated. (SummaC-ZS itself scores entailment minus contradiction and
    averages over sentences; this keeps entailment and the weakest sentence.)
    With ``unit=claims`` the hypotheses are the claims the ``splitter`` LLM
    finds in the response instead of its sentences (see the module
    documentation), e.g. ``nli_grounding[judge=hf[model=PATH],unit=claims,
    splitter=openai[model=gpt-4o]]``. An example without context or an empty
    response gets ``value=None`` and an error; so does a response whose
    split reply gives no claim list (counted as unreadable).

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``).
        unit: ``sentence`` (each sentence of the response) or ``claims`` (each
            claim ``splitter`` finds in it; seed paper 003's claim-wise use).
        splitter: The LLM that splits a response into claims, required with
            ``unit=claims`` and refused otherwise, e.g. ``openai[model=gpt-4o]``.
        chunk_sentences: Source sentences per premise.
    """

    unit: Unit = _unit("sentence", "sentence", "claims")
    chunk_sentences: int = param(1, Interval(int, 1))

    def premises(self, context: str) -> list[str]:
        """Return the source's chunks of ``chunk_sentences`` sentences."""
        sentences = split_sentences(context)
        k = self.chunk_sentences
        return [" ".join(sentences[i : i + k]) for i in range(0, len(sentences), k)]


@dataclass(frozen=True, kw_only=True)
class _Windowed(PairGrounding):
    """A pair-grounding detector whose premises are word windows of the source.

    Its subclasses document ``window`` and ``stride`` here: the component
    documentation (``Registry.describe``) takes a parameter's text from the
    first class in the MRO whose docstring has it.

    Args:
        window: Source words per premise.
        stride: Words between the starts of consecutive windows (at most ``window``).
    """

    window: int = param(256, Interval(int, 1))
    stride: int = param(192, Interval(int, 1))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.stride > self.window:
            raise param_error(
                "stride", self.name, f"at most window={self.window}, so no word is skipped",
                self.stride,
            )  # fmt: skip

    def premises(self, context: str) -> list[str]:
        """Return the source's windows of ``window`` words, one every ``stride`` words."""
        return word_windows(context, self.window, self.stride)


@detector("cross_encoder")
@dataclass(frozen=True, kw_only=True)
class CrossEncoder(_Windowed):
    """HHEM-style: one minus a cross-encoder's consistency of the response with the source.

    The classifier reads (source, whole response) pairs, as Vectara's HHEM
    does; a single-logit model gives ``sigmoid(logit)`` as the consistency,
    an NLI classifier P(entailment). A source longer than ``window`` words is
    cut into windows of ``window`` words, one every ``stride`` words (the
    last one ending at its last word), and the response's consistency is the
    largest over the windows; ``value = 1 - consistency``, in [0, 1], higher
    = more likely hallucinated. A response drawing on two distant windows is
    therefore judged against each alone: raise ``window`` (up to the model's
    limit) for such sources. With ``unit=claims`` the classifier reads
    (window, claim) pairs for each claim the ``splitter`` LLM finds in the
    response, and ``value = 1 - min`` consistency over the claims: HHEM
    applied claim-wise, as seed paper 003 (Table 1) does. An example without
    context or an empty response gets ``value=None`` and an error; so does a
    response whose split reply gives no claim list (counted as unreadable).

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``).
        unit: ``response`` (the whole response, as HHEM reads it) or ``claims``
            (each claim ``splitter`` finds in it; seed paper 003's claim-wise use).
        splitter: The LLM that splits a response into claims, required with
            ``unit=claims`` and refused otherwise, e.g. ``openai[model=gpt-4o]``.
    """

    unit: Unit = _unit("response", "response", "claims")


@detector("claim_check")
@dataclass(frozen=True, kw_only=True)
class ClaimCheck(_Windowed):
    """MiniCheck / AlignScore-style: the weakest response claim against source windows.

    By default (``unit=sentence``) the claims are the response's sentences
    (:func:`realitycheck.text.split_sentences`): no model decomposes them into
    atomic facts, so a sentence holding two facts is checked as one claim.
    With ``unit=claims`` an LLM, the ``splitter``, decomposes the response
    into self-contained claims first, as seed paper 003 (§6.2, after
    MiniCheck and FActScore) does (see the module documentation). The
    source is split into windows of ``window`` words, one every ``stride``
    words (AlignScore chunks the source the same way). A claim's support is
    its largest P(entailment) (or consistency, for a single-logit checker
    such as MiniCheck's) over the windows; ``value = 1 - min`` over the
    claims, in [0, 1], higher = some claim is supported by no window = more
    likely hallucinated (any unsupported claim makes the response
    hallucinated). An example without context or an empty response gets
    ``value=None`` and an error; so does a response whose split reply gives
    no claim list (counted as unreadable).

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``).
        unit: ``sentence`` (each sentence of the response) or ``claims`` (each
            claim ``splitter`` finds in it; seed paper 003's claim-wise use).
        splitter: The LLM that splits a response into claims, required with
            ``unit=claims`` and refused otherwise, e.g. ``openai[model=gpt-4o]``.
    """

    unit: Unit = _unit("sentence", "sentence", "claims")
