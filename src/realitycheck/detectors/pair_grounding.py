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
detector       premises (source)                       hypotheses (response)
============== ====================================== ==============================
nli_grounding  chunks of ``chunk_sentences`` sentences  its sentences (SummaC-ZS)
cross_encoder  windows of ``window`` words              the whole response (HHEM)
claim_check    windows of ``window`` words              its sentences (MiniCheck,
                                                        AlignScore)
============== ====================================== ==============================

Sentences are :func:`realitycheck.text.split_sentences`. A window is
``window`` consecutive whitespace-separated words, the next one starting
``stride`` words later, the last one ending at the source's last word (the
words stand in for the classifier's tokens so that the chunks, and so the
cached pairs, do not depend on a tokenizer; a pair longer than the model's
limit is still truncated by the backend). Every pair goes through the
run's call cache (``Needs.cache``): a rerun scores no pair again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from realitycheck.detectors._base import Detector, Needs, detector
from realitycheck.params import InstanceOf, Interval, SequenceOf, as_tuple, param, param_error
from realitycheck.records import Response, Score
from realitycheck.registry import nested
from realitycheck.text import split_sentences

if TYPE_CHECKING:
    from realitycheck.backends import Backend

__all__ = ["ClaimCheck", "CrossEncoder", "NLIGrounding", "PairGrounding", "word_windows"]

_Plan = tuple[list[str], list[str]]


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
    the response hypotheses (:meth:`hypotheses`).

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``), e.g. ``entailment+neutral+contradiction``.
    """

    judge: Backend = nested(
        "backends",
        default=dataclasses.MISSING,
        doc="the pair classifier",
        aliases=("classifier",),
    )
    labels: tuple[str, ...] = param((), SequenceOf(InstanceOf(str)), convert=as_tuple)
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def __post_init__(self) -> None:
        super().__post_init__()
        from realitycheck.backends import require_pairs

        require_pairs(self.judge, self.name)

    def premises(self, context: str) -> list[str]:
        """Return the parts of the source each hypothesis is checked against."""
        raise NotImplementedError

    def hypotheses(self, text: str) -> list[str]:
        """Return the parts of the response that must each be supported."""
        raise NotImplementedError

    def _plan(self, response: Response, needs: Needs) -> _Plan | str:
        """Return the response's (premises, hypotheses), or why it cannot be scored."""
        example = needs.examples.get(response.example_id)
        if example is None:
            return f"example {response.example_id!r} was not given"
        premises = self.premises(example.context)
        if not premises:
            return "the example has no context"
        hypotheses = self.hypotheses(response.text)
        if not hypotheses:
            return "the response is empty"
        return premises, hypotheses

    def score(self, responses: Sequence[Response], needs: Needs) -> list[Score]:
        """Return one score per response, in order (``1 - min`` support, in [0, 1])."""
        from realitycheck.backends import cached_pairs

        plans = [self._plan(response, needs) for response in responses]
        pairs = sorted(
            {
                (p, h)
                for plan in plans
                if not isinstance(plan, str)
                for h in plan[1]
                for p in plan[0]
            }
        )
        scored = cached_pairs(self.judge, pairs, labels=self.labels, cache=needs.cache)
        answers = dict(zip(pairs, scored, strict=True))
        out = []
        for response, plan in zip(responses, plans, strict=True):
            if isinstance(plan, str):
                out.append(self._score(response, None, error=plan))
                continue
            premises, hypotheses = plan
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
    An example without context or an empty response gets ``value=None`` and
    an error.

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``).
        chunk_sentences: Source sentences per premise.
    """

    chunk_sentences: int = param(1, Interval(int, 1))

    def premises(self, context: str) -> list[str]:
        """Return the source's chunks of ``chunk_sentences`` sentences."""
        sentences = split_sentences(context)
        k = self.chunk_sentences
        return [" ".join(sentences[i : i + k]) for i in range(0, len(sentences), k)]

    def hypotheses(self, text: str) -> list[str]:
        """Return the response's sentences."""
        return split_sentences(text)


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
    limit) for such sources. An example without context or an empty response
    gets ``value=None`` and an error.

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``).
    """

    def hypotheses(self, text: str) -> list[str]:
        """Return the whole response (stripped) as the one hypothesis."""
        return [text.strip()] if text.strip() else []


@detector("claim_check")
@dataclass(frozen=True, kw_only=True)
class ClaimCheck(_Windowed):
    """MiniCheck / AlignScore-style: the weakest response sentence against source windows.

    The claims are the response's sentences
    (:func:`realitycheck.text.split_sentences`): no model decomposes them into
    atomic facts (as FActScore does with an LLM), so a sentence holding two
    facts is checked as one claim. The source is split into
    windows of ``window`` words, one every ``stride`` words (AlignScore
    chunks the source the same way). A claim's support is its largest
    P(entailment) (or consistency, for a single-logit checker such as
    MiniCheck's) over the windows; ``value = 1 - min`` over the claims, in
    [0, 1], higher = some claim is supported by no window = more likely
    hallucinated. An example without context or an empty response gets
    ``value=None`` and an error.

    Args:
        judge: The pair classifier, a backend with the ``pairs`` capability, e.g.
            ``hf[model=PATH]`` (formerly ``classifier``, still read with a warning).
        labels: The classifier's label names in output order, when its config
            lacks them (empty = its ``id2label``).
    """

    def hypotheses(self, text: str) -> list[str]:
        """Return the response's sentences (the claims)."""
        return split_sentences(text)
