"""Semantic entropy (Farquhar et al., 2024): uncertainty over meanings, not strings.

The sampled answers are grouped into meaning classes by bidirectional
entailment, greedily as in the paper: each answer, in sampling order, is
compared with the first member of every existing class and joins the first
class it entails and that entails it; otherwise it starts a new class.
Identical strings are equivalent without asking. The entropy of the class
distribution is the score.

The entailment check is pluggable (:class:`EntailmentCheck`):

* ``embedding`` — the model-free fallback: ``a`` entails ``b`` when the
  cosine of their all-MiniLM-L6-v2 embeddings is at least ``threshold``
  (default 0.85); symmetric, so "bidirectional" adds nothing.
* ``nli`` — a natural-language-inference classifier, any backend with the
  ``pairs`` capability (:class:`NLIEntailment`): ``a`` entails ``b`` when
  the most probable class for premise ``a`` and hypothesis ``b`` is
  entailment.
* ``llm`` — any realitycheck backend asked a yes/no question
  (:class:`LLMEntailment`).

An ``llm`` reply that says neither yes nor no (no conclusion, a negated or
hedged one, cut at the length limit, random tokens) is no verdict, never
"not entailed": it is counted in the score's ``unreadable``, and when the
pair it leaves undecided could change the meaning classes, the response's
value is ``None`` with the reason and a short quote of the reply. The
option ``unclear_as=False`` instead counts such a pair as not entailed, as
the paper's code does with a reply it cannot read (it takes it as
"neutral", which strict entailment does not accept); those replies are
still counted.

For ``nli`` and ``llm`` the backend is a nested component, ``judge``: its
spec is part of the detector's spec and key, and its calls go through the
run's call cache (``RunContext.cache``)::

    semantic_entropy[equivalence=llm,judge=openai[model=gpt-4o-mini]]
    semantic_entropy[equivalence=nli,judge=hf[model=microsoft/deberta-large-mnli]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import numpy as np

from realitycheck.detectors._backend_calls import failure, read_yes_no
from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.detectors._clustering import GreedyClustering, Unclear, cluster_many
from realitycheck.detectors._features import sample_texts, sample_values
from realitycheck.errors import FatalBackendError, InvalidInputError, MissingFeatureError
from realitycheck.params import (
    InstanceOf,
    Interval,
    OneOf,
    OrNone,
    SequenceOf,
    as_tuple,
    param,
    param_error,
)
from realitycheck.records import Response, Score
from realitycheck.registry import nested

if TYPE_CHECKING:
    from realitycheck.backends import Backend, CallCache

__all__ = [
    "EmbeddingEntailment",
    "EntailmentCheck",
    "LLMEntailment",
    "NLIEntailment",
    "SemanticEntropy",
    "Unclear",
    "meaning_classes",
    "semantic_entropy",
]

_VARIANTS = ("discrete", "weighted")
_EQUIVALENCES = ("embedding", "nli", "llm")


class EntailmentCheck(Protocol):
    """Decides, for each ``(a, b)``, whether answer ``a`` entails answer ``b``."""

    def __call__(self, pairs: Sequence[tuple[str, str]], question: str) -> Sequence[bool | Unclear]:
        """Return one verdict per pair (:class:`Unclear` for none); both answer ``question``."""
        ...


def meaning_classes(
    texts: Sequence[str],
    entails: EntailmentCheck,
    question: str = "",
    *,
    unclear_as: bool | None = None,
) -> list[int]:
    """Return the meaning class (0, 1, …, in order of appearance) of each text.

    Greedy bidirectional-entailment clustering as in Farquhar et al. (2024):
    each text is compared with the first member of every existing class,
    all those comparisons (both directions) in one call of ``entails``.

    Raises:
        InvalidInputError: If an :class:`Unclear` verdict leaves a text's class
            undecided and ``unclear_as`` is ``None``.
    """
    clustering = GreedyClustering(texts, unclear_as=unclear_as)
    while not clustering.done:
        clustering.place(entails(clustering.pairs(), question))
    if clustering.stuck is not None:
        raise InvalidInputError(
            f"The entailment check gave no verdict ({clustering.stuck.note}), so the meaning "
            f"class of text {len(clustering.classes)} is undecided; pass unclear_as=False to "
            "count such a pair as not entailed."
        )
    return clustering.classes


def semantic_entropy(classes: Sequence[int], logprobs: Sequence[float] | None = None) -> float:
    """Return the entropy (nats) of the meaning-class distribution.

    Without ``logprobs`` (discrete variant) ``p(C) = |C| / K``. With
    ``logprobs`` (one sequence log-probability per answer) ``p(C)`` is the
    normalised sum of ``exp(logprob)`` over the members of ``C`` (Farquhar et
    al.'s probability-weighted estimate).
    """
    ids = np.asarray(classes, dtype=np.int64)
    if logprobs is None:
        weights = np.ones(len(ids))
    else:
        lp = np.asarray(logprobs, dtype=np.float64)
        weights = np.exp(lp - lp.max())
    p = np.bincount(ids, weights=weights)
    p = p[p > 0] / p.sum()
    return float(-np.sum(p * np.log(p)))


@dataclass(frozen=True)
class EmbeddingEntailment:
    """``a`` entails ``b`` iff cos(embed(a), embed(b)) >= ``threshold`` (all-MiniLM-L6-v2)."""

    threshold: float = 0.85
    reads_question: ClassVar[bool] = False

    def __call__(self, pairs: Sequence[tuple[str, str]], question: str) -> list[bool]:
        """Return one verdict per pair."""
        from realitycheck.encoders.embeddings import embed

        texts = sorted({t for pair in pairs for t in pair})
        row = {t: i for i, t in enumerate(texts)}
        vectors = embed(texts)
        return [bool(float(vectors[row[a]] @ vectors[row[b]]) >= self.threshold) for a, b in pairs]


@dataclass(frozen=True)
class NLIEntailment:
    """``a`` entails ``b`` iff the NLI top class for (premise a, hypothesis b) is entailment.

    The classifier is any backend with the ``pairs`` capability (an NLI
    model on ``hf`` or ``vllm``), called through
    :func:`realitycheck.backends.cached_pairs`: identical pairs are scored
    once, and never again when ``cache`` is given. The top class is the most
    probable one (:meth:`~realitycheck.backends.PairScore.top`; a
    single-logit model entails at consistency >= 0.5). A pair the classifier
    failed on raises :class:`~realitycheck.errors.FatalBackendError`.

    Args:
        backend: A backend with the ``pairs`` capability.
        cache: A ``CallCache`` to store and reuse the answers, or ``None``.
        labels: The classifier's label names in output order (empty = its own).
    """

    backend: Any
    cache: Any = None
    labels: tuple[str, ...] = ()
    reads_question: ClassVar[bool] = False

    def __call__(self, pairs: Sequence[tuple[str, str]], question: str) -> list[bool]:
        """Return one verdict per pair."""
        from realitycheck.backends import cached_pairs

        answers = cached_pairs(self.backend, pairs, labels=self.labels, cache=self.cache)
        failed = [a.error for a in answers if a.error]
        if failed:
            raise FatalBackendError(
                f"The NLI classifier failed on {len(failed)} of {len(answers)} pairs: {failed[0]}"
            )
        return [a.top() == "entailment" for a in answers]


_JUDGE_PROMPT = (
    "Two answers were given to the question below.\n"
    "Question: {question}\n"
    "Answer A: {a}\n"
    "Answer B: {b}\n"
    "If Answer A is true, must Answer B also be true? Reply with one word: yes or no."
)


@dataclass(frozen=True)
class LLMEntailment:
    """``a`` entails ``b`` iff a model answers "yes" to a one-way entailment question.

    The answers and the question are quoted as data in the prompt. Each pair
    is one greedy request of at most ``max_tokens`` tokens (4 by default: the
    prompt asks for one word), sent as chat messages when the
    backend takes chat, else as a raw prompt. The reply is read by its
    conclusion (:func:`~realitycheck.detectors._backend_calls.read_yes_no`):
    "yes" entails, "no" does not, and a reply that says neither (or a
    negated, hedged or truncated one) is :class:`Unclear`, with the reason
    and a short quote of the reply. A failed call is no verdict: it
    raises :class:`~realitycheck.errors.RetryableBackendError` when every
    failure may pass on a later run (rate limit, 5xx, timeout), else
    :class:`~realitycheck.errors.FatalBackendError`.

    Calls go through :func:`realitycheck.backends.cached_generate`:
    identical questions are asked once, and never again when ``cache`` is
    given.

    A reply cut at ``max_tokens`` counts only when it already holds a
    complete conclusion (see :mod:`realitycheck.verdicts`); raise it for a
    judge that explains before it answers.

    Args:
        backend: Any realitycheck backend.
        cache: A ``CallCache`` to store and reuse the answers, or ``None``.
        max_tokens: Most tokens of each reply.
    """

    backend: Any
    cache: Any = None
    max_tokens: int = 4
    reads_question: ClassVar[bool] = True

    def __call__(self, pairs: Sequence[tuple[str, str]], question: str) -> list[bool | Unclear]:
        """Return one verdict per pair: ``True``, ``False`` or :class:`Unclear`."""
        from realitycheck.backends import GenerationRequest, cached_generate

        chat = "chat" in self.backend.capabilities
        requests = []
        for a, b in pairs:
            text = _JUDGE_PROMPT.format(question=question or "(not given)", a=a, b=b)
            if chat:
                message = {"role": "user", "content": text}
                requests.append(GenerationRequest(messages=(message,), max_tokens=self.max_tokens))
            else:
                requests.append(GenerationRequest(prompt=text, max_tokens=self.max_tokens))
        generations = cached_generate(self.backend, requests, cache=self.cache)
        error = failure(generations, "The entailment judge", unit="questions")
        if error is not None:
            raise error
        out: list[bool | Unclear] = []
        for generation in generations:
            reading = read_yes_no(generation)
            verdict = reading.verdict
            out.append(Unclear(reading.note) if verdict is None else verdict == "yes")
        return out


@detector("semantic_entropy")
@dataclass(frozen=True, kw_only=True)
class SemanticEntropy(Detector):
    """Entropy over meaning classes of the sampled answers (Farquhar et al., 2024).

    The samples (``response.samples``; the low-temperature best answer is
    not one of them, as in the paper) are clustered by bidirectional
    entailment (see the module docstring). ``discrete``: ``p(C) = |C| / K``.
    ``weighted``: ``p(C)`` = normalised sum over its members of
    ``exp(log p(s | x))``, with the length-normalised (mean token) sequence
    log-probability as in the paper's code (``length_normalized=True``) or
    the summed one; it also reads ``features["samples"][k]["token_logprobs"]``
    and leaves out samples without tokens. ``value = -sum_C p(C) log p(C)``
    in nats, range ``[0, log K]``; higher = the samples disagree in meaning =
    more likely hallucinated. When the ``llm`` judge's calls fail, the value is
    ``None`` with the error, marked ``failed`` (and ``retryable`` when the
    failure may pass).

    Unreadable ``llm`` replies (neither yes nor no, see the module docstring)
    are counted in ``unreadable``. One that leaves a sample's meaning class
    undecided (the pair is not already refused by its other direction, and
    no earlier class took the sample) makes the value ``None``, with the
    reason and a short quote of the reply, unless ``unclear_as`` gives it a
    verdict; one that changes nothing leaves the value as computed.

    Args:
        variant: ``discrete`` or ``weighted``.
        equivalence: ``embedding`` (model-free fallback), ``nli`` or ``llm``.
        threshold: Cosine threshold of the ``embedding`` check.
        judge: The backend asked whether answers entail each other: with
            ``equivalence="llm"`` any backend, e.g. ``openai[model=gpt-4o-mini]``
            in a key or ``{ name = "openai", params = { model = "gpt-4o-mini" } }``
            in TOML; with ``equivalence="nli"`` one with the ``pairs``
            capability, e.g. ``hf[model=PATH]``.
        labels: The NLI judge's label names in output order, when its config
            lacks them (empty = its ``id2label``; ``equivalence="nli"``).
        length_normalized: Whether ``weighted`` uses mean token log-probabilities.
        max_tokens: Most tokens of each ``llm`` reply (``equivalence="llm"`` only).
        unclear_as: What an unreadable ``llm`` reply counts as: ``None`` (no
            verdict: the value is ``None`` where it matters), or ``False``
            ("does not entail", what the paper's code does with a reply it
            cannot read) or ``True``; ``equivalence="llm"`` only.
    """

    variant: Literal["discrete", "weighted"] = param("discrete", OneOf(_VARIANTS))
    equivalence: Literal["embedding", "nli", "llm"] = param("embedding", OneOf(_EQUIVALENCES))
    threshold: float = param(0.85, Interval(float, -1, 1))
    judge: Backend | None = nested("backends", aliases=("backend",))
    labels: tuple[str, ...] = param((), SequenceOf(InstanceOf(str)), convert=as_tuple)
    length_normalized: bool = param(True, InstanceOf(bool))
    max_tokens: int = param(4, Interval(int, 1))
    unclear_as: bool | None = param(None, OrNone(InstanceOf(bool)))
    needs: ClassVar[frozenset[str]] = frozenset({"samples"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.equivalence in ("llm", "nli") and self.judge is None:
            example = "hf[model=PATH]" if self.equivalence == "nli" else "openai[model=gpt-4o-mini]"
            raise param_error(
                "judge",
                self.name,
                f"a backend, e.g. judge={example}, when equivalence={self.equivalence!r}",
                None,
            )
        if self.equivalence == "embedding" and self.judge is not None:
            raise param_error(
                "judge",
                self.name,
                "left out unless equivalence is 'llm' or 'nli'",
                got=repr(self.judge.key),
            )
        judge = self.judge
        if self.equivalence == "nli" and judge is not None and "pairs" not in judge.capabilities:
            raise param_error(
                "judge",
                self.name,
                "a backend with the 'pairs' capability (hf, vllm, mock) when equivalence='nli'",
                got=repr(judge.key),
            )
        if self.labels and self.equivalence != "nli":
            raise param_error("labels", self.name, "left out unless equivalence='nli'", self.labels)
        if self.equivalence != "llm":
            for name, default in (("unclear_as", None), ("max_tokens", 4)):
                if getattr(self, name) != default:
                    raise param_error(
                        name, self.name, "left out unless equivalence='llm'", getattr(self, name)
                    )
        if self.variant == "weighted":
            # The weighted variant also reads token log-probabilities.
            object.__setattr__(self, "needs", frozenset({"samples", "logprobs"}))

    def equivalence_check(self, cache: CallCache | None = None) -> EntailmentCheck:
        """Return the entailment check this detector is configured with.

        Args:
            cache: The call cache the ``nli`` and ``llm`` judges' calls go through.
        """
        if self.equivalence == "nli":
            return NLIEntailment(self.judge, cache=cache, labels=self.labels)
        if self.equivalence == "llm":
            return LLMEntailment(self.judge, cache=cache, max_tokens=self.max_tokens)
        return EmbeddingEntailment(self.threshold)

    def _logprobs(self, response: Response) -> tuple[list[int], list[float]]:
        per_sample = sample_values(response, "token_logprobs", "logprobs")
        if len(per_sample) != len(response.samples):
            raise MissingFeatureError(
                f"the response has {len(response.samples)} samples but features for "
                f"{len(per_sample)}"
            )
        keep = [k for k, lp in enumerate(per_sample) if lp.size]
        reduce: Callable[[np.ndarray], Any] = np.mean if self.length_normalized else np.sum
        return keep, [float(reduce(per_sample[k])) for k in keep]

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order.

        The answer lists of all responses are clustered together
        (:func:`~realitycheck.detectors._clustering.cluster_many`): one
        call of the entailment check per round rather than per answer.
        """
        out: list[Score | None] = [None] * len(responses)
        todo: list[tuple[int, list[str], list[float] | None, str]] = []
        for i, response in enumerate(responses):
            try:
                texts = sample_texts(response)
                keep, logprobs = (
                    self._logprobs(response)
                    if self.variant == "weighted"
                    else (list(range(len(texts))), None)
                )
            except MissingFeatureError as exc:
                out[i] = self._score(response, None, error=str(exc))
                continue
            if not keep:
                out[i] = self._score(response, None, error="every sample is empty")
                continue
            example = run.examples.get(response.example_id)
            question = example.question if example is not None else ""
            todo.append((i, [texts[k] for k in keep], logprobs, question))
        if todo:
            check = self.equivalence_check(run.cache)
            found = cluster_many(
                [t[1] for t in todo],
                check,
                [t[3] for t in todo],
                reads_question=getattr(check, "reads_question", True),
                unclear_as=self.unclear_as,
            )
            for (i, _, logprobs, _), clustering in zip(todo, found, strict=True):
                out[i] = self._from_clustering(responses[i], clustering, logprobs)
        return [s for s in out if s is not None]

    def _from_clustering(
        self, response: Response, run: GreedyClustering, logprobs: list[float] | None
    ) -> Score:
        unreadable = len(run.unclear)
        if run.error is not None:
            return self._failed(response, run.error, unreadable=unreadable)
        if run.stuck is not None:
            error = (
                f"the entailment judge's reply gave no verdict ({run.stuck.note}), so a "
                f"sample's meaning class is undecided; {unreadable} of the {run.asked} "
                "replies for this response could not be read"
            )
            return self._score(response, None, error=error, unreadable=unreadable)
        value = semantic_entropy(run.classes, logprobs)
        return self._score(response, value, unreadable=unreadable)
