"""SelfCheckGPT (Manakul et al., 2023): a response the model's own samples do not back up.

The response ``R`` is split into sentences ``r_1 … r_I``
(:func:`realitycheck.text.split_sentences`) and checked against the ``N``
stochastic samples ``S^1 … S^N`` of the same prompt (``response.samples``; the
response itself is not one of them). Each variant gives every sentence a
score in which higher = less supported, and the response's ``value`` is the
mean over its sentences (the paper's passage-level score), except where a
variant says otherwise. Four variants are here.

* ``selfcheck_bertscore``: ``S(i) = 1 - (1/N) sum_n max_k B(r_i, s_k^n)``,
  with ``s_k^n`` the sentences of sample ``n`` and ``B`` the BERTScore F1
  (:func:`realitycheck.encoders.bertscore.bertscore`).
* ``selfcheck_ngram``: a unigram model ``p(w) = count(w) / total`` fitted on
  the tokens of ``R`` and of every sample (no smoothing, so every token of
  ``R`` has ``p > 0``); ``Avg(-log p)`` over all the tokens of ``R`` or the
  mean over sentences of ``Max(-log p)``.
* ``selfcheck_nli``: ``S(i) = (1/N) sum_n P(contradict | S^n, r_i)``, the
  sample as premise and the sentence as hypothesis, with ``P(contradict) =
  p_c / (p_e + p_c)`` from a pair classifier's class probabilities
  (the NLI variant of Manakul et al. 2023), on the backends' ``pairs`` capability
  (its own module, :mod:`realitycheck.detectors.selfcheck_nli`).
* ``selfcheck_prompt``: a backend is asked, for every sentence and sample,
  whether the sample supports the sentence; Yes → 0, No → 1, averaged over
  samples. A reply that says neither is counted as unreadable and left out
  (or, with ``unclear_as=0.5``, scored 0.5 as in the paper).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from realitycheck.detectors._backend_calls import (
    YesNo,
    failure,
    load_prompt,
    read_yes_no,
    request_for,
)
from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.detectors._features import sample_texts
from realitycheck.errors import MissingFeatureError
from realitycheck.params import InstanceOf, Interval, NonEmptyStr, OneOf, OrNone, param
from realitycheck.records import Response, Score
from realitycheck.registry import nested
from realitycheck.text import split_sentences
from realitycheck.verdicts import parse_verdict

if TYPE_CHECKING:
    from realitycheck.backends import Backend, GenerationRequest

__all__ = [
    "SelfCheckBERTScore",
    "SelfCheckNgram",
    "SelfCheckPrompt",
    "ngram_tokens",
    "prompt_verdict_score",
    "response_sentences",
    "unigram_scores",
]

_TOKEN = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
Statistic = Literal["avg", "max"]
VERDICT_SCORES = {"yes": 0.0, "no": 1.0}
"""How a read reply of the ``selfcheck_prompt`` checker maps to a sentence's score."""
PAPER_UNCLEAR = 0.5
"""What the SelfCheckGPT paper scores a reply that is neither Yes nor No (``unclear_as``)."""
PROMPT = "selfcheck_prompt.v1.txt"


def ngram_tokens(text: str, *, lowercase: bool = True) -> list[str]:
    """Split ``text`` into word tokens (apostrophes kept inside) and single punctuation marks."""
    tokens = _TOKEN.findall(text)
    return [t.lower() for t in tokens] if lowercase else tokens


def unigram_scores(
    sentences: Sequence[str], samples: Sequence[str], *, lowercase: bool = True
) -> dict[str, float]:
    """Return SelfCheckGPT's unigram scores of a response given as its sentences.

    The unigram model is fitted on the response's tokens and the samples'.

    Returns:
        ``{"avg": mean over every token of -log p, "max": mean over
        sentences of the largest -log p in the sentence}`` (nats).
    """
    response_tokens = [ngram_tokens(s, lowercase=lowercase) for s in sentences]
    counts: Counter[str] = Counter()
    for tokens in response_tokens:
        counts.update(tokens)
    for sample in samples:
        counts.update(ngram_tokens(sample, lowercase=lowercase))
    total = sum(counts.values())
    per_sentence = [[-math.log(counts[t] / total) for t in tokens] for tokens in response_tokens]
    kept = [values for values in per_sentence if values]
    every = [v for values in kept for v in values]
    return {"avg": float(np.mean(every)), "max": float(np.mean([max(v) for v in kept]))}


def response_sentences(response: Response) -> list[str]:
    """Return the response's sentences (the ``r_i`` every variant scores), or fail if none."""
    sentences = split_sentences(response.text)
    if not sentences:
        raise MissingFeatureError("the response is empty")
    return sentences


@detector("selfcheck_ngram")
@dataclass(frozen=True, kw_only=True)
class SelfCheckNgram(Detector):
    """SelfCheckGPT with a unigram model: how rare the response's words are among its samples.

    A unigram model ``p(w) = count(w) / total`` is fitted on the tokens of
    the response and of its samples (words, with inner apostrophes, and
    punctuation marks; lowercased by default; no smoothing). ``statistic``
    ``max`` (the default, the paper's strongest passage score) is the mean
    over the response's sentences of ``max_j -log p(w_j)``; ``avg`` is the
    mean of ``-log p(w)`` over all the response's tokens (Manakul et al.
    2023, eq. 8-9). ``value`` in nats, ``[0, ∞)``, higher = words the samples
    do not repeat = more likely hallucinated. A response without samples, or
    an empty one, gets ``value=None`` and an error.

    Args:
        statistic: ``max`` or ``avg``.
        lowercase: Count words case-insensitively.
    """

    statistic: Statistic = param("max", OneOf(Statistic))
    lowercase: bool = param(True, InstanceOf(bool))
    needs: ClassVar[frozenset[str]] = frozenset({"samples"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        out = []
        for response in responses:
            try:
                samples = sample_texts(response)
                sentences = response_sentences(response)
            except MissingFeatureError as exc:
                out.append(self._score(response, None, error=str(exc)))
                continue
            if not any(ngram_tokens(s) for s in sentences):
                out.append(self._score(response, None, error="the response has no token"))
                continue
            values = unigram_scores(sentences, samples, lowercase=self.lowercase)
            out.append(self._score(response, values[self.statistic]))
        return out


@detector("selfcheck_bertscore")
@dataclass(frozen=True, kw_only=True)
class SelfCheckBERTScore(Detector):
    """SelfCheckGPT with BERTScore: one minus how well the samples echo each sentence.

    For sentence ``r_i`` and sample ``n``, the best BERTScore F1 between
    ``r_i`` and any sentence of the sample; ``S(i) = 1 - mean_n(best)``
    (Manakul et al. 2023, eq. 1) and ``value = mean_i S(i)``. BERTScore is
    computed as the ``bertscore`` labeler does (no idf, no baseline
    rescaling, so ``value`` is in ``[0, 2]`` and rarely above 1); the
    ``selfcheckgpt`` package's default instead rescales roberta-large scores
    with their baseline, which shifts values but not their order. Unlike that
    package, no short sample sentence is dropped (QA samples are often one
    short sentence). Higher = the samples do not repeat the response = more
    likely hallucinated. A response without samples, or an empty one, gets
    ``value=None`` and an error; empty samples are left out.

    Args:
        model: Folder or hub id of a transformers encoder ("" = the bundled
            all-MiniLM-L6-v2 of the ``embed`` extra).
        layer: Hidden layer whose states are the token embeddings (0 =
            embeddings, -1 = last).
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``…
        batch_size: Texts per forward pass.
    """

    model: str = param("", InstanceOf(str))
    layer: int = param(-1, Interval(int, -1))
    device: str = param("auto", NonEmptyStr(), in_key=False)
    batch_size: int = param(32, Interval(int, 1), in_key=False)
    needs: ClassVar[frozenset[str]] = frozenset({"samples"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        from realitycheck.encoders.bertscore import bertscore, check_layer, encoder_path

        plans: list[tuple[list[str], list[list[str]]] | str] = []
        for response in responses:
            try:
                samples = [split_sentences(s) for s in sample_texts(response)]
                plans.append((response_sentences(response), [s for s in samples if s]))
            except MissingFeatureError as exc:
                plans.append(str(exc))
        pairs = {
            (sentence, candidate)
            for plan in plans
            if not isinstance(plan, str)
            for sentence in plan[0]
            for sample in plan[1]
            for candidate in sample
        }
        f1: dict[tuple[str, str], float] = {}
        if pairs:
            model = encoder_path(self.model)
            check_layer(model, self.layer, owner=self.name)
            ordered = sorted(pairs)
            values = bertscore(
                [candidate for _, candidate in ordered],
                [(sentence,) for sentence, _ in ordered],
                model=model,
                layer=self.layer,
                device=self.device,
                batch_size=self.batch_size,
            )
            f1 = {pair: float(v) for pair, v in zip(ordered, values[:, 2], strict=True)}
        out = []
        for response, plan in zip(responses, plans, strict=True):
            if isinstance(plan, str):
                out.append(self._score(response, None, error=plan))
            elif not plan[1]:
                out.append(self._score(response, None, error="every sample is empty"))
            else:
                sentences, samples = plan
                best = np.array(
                    [[max(f1[(r, s)] for s in sample) for sample in samples] for r in sentences]
                )
                out.append(self._score(response, float(np.mean(1.0 - best.mean(axis=1)))))
        return out


def prompt_verdict_score(
    reply: str, *, truncated: bool = False, unclear_as: float | None = None
) -> float | None:
    """Return a checker reply's sentence score: Yes → 0, No → 1, neither → ``unclear_as``.

    The reply is read by its conclusion (:func:`realitycheck.verdicts.parse_verdict`
    with the choices yes and no): ``"Yes."``, ``"yes, it does"`` and
    ``"Answer: no"`` are read; ``"Maybe"``, ``"I am not sure"``, a negated
    verdict, an empty reply or one cut at the length limit (``truncated``)
    without a complete conclusion are not, and score ``unclear_as``
    (``None`` = no score; :data:`PAPER_UNCLEAR`, 0.5, as in the SelfCheckGPT paper).
    """
    verdict = parse_verdict(reply, choices=("yes", "no"), truncated=truncated)
    return unclear_as if verdict is None else VERDICT_SCORES[verdict]


@detector("selfcheck_prompt")
@dataclass(frozen=True, kw_only=True)
class SelfCheckPrompt(Detector):
    """SelfCheckGPT by prompting: a model asked whether each sample backs each sentence.

    For every response sentence ``r_i`` and sample ``S^n``, the ``judge``
    backend gets the prompt ``detectors/prompts/selfcheck_prompt.v1.txt``
    (the sample, its white space collapsed to single spaces, and the
    sentence quoted as data; one greedy request of at
    most ``max_tokens`` tokens, as a raw prompt when the backend takes one,
    else as a chat message). The reply, read by its conclusion
    (:func:`prompt_verdict_score`), maps to ``x`` = 0 for Yes and 1 for No;
    ``S(i) = mean_n x(i, n)`` and ``value = mean_i S(i)`` in ``[0, 1]``
    (Manakul et al. 2023, §5.4), higher = the samples do not support the
    response = more likely hallucinated. Calls go through the run's call
    cache.

    A reply that is neither Yes nor No (a hedge, a negated or truncated
    verdict, random tokens) is unreadable and always counted in the score's
    ``unreadable``. What it then counts as is ``unclear_as``:

    * ``None`` (the default): nothing. It is left out of its sentence's
      mean; a sentence no reply of which could be read leaves the response
      without a value (``None``, the reason and a short quote of a reply in
      ``error``), since nothing is known about it.
    * ``0.5``: the paper's definition (SelfCheckGPT scores any other reply
      0.5); any number in ``[0, 1]`` is accepted.

    The paper's 0.5 is not the default because on a model that rarely
    answers Yes or No it turns every response's value into 0.5 with no sign
    that nothing was read.

    When a call fails, the value is ``None`` with the error, marked
    ``failed`` (and ``retryable`` when the failure may pass). A response
    without samples gets ``value=None``.

    Args:
        judge: The backend asked, e.g. ``hf[model=/models/llama]`` in a key.
        max_tokens: Most tokens of each reply.
        unclear_as: The score of an unreadable reply (``None`` = left out;
            ``0.5`` = the paper's).
    """

    judge: Backend = nested(
        "backends", default=dataclasses.MISSING, doc="the backend asked", aliases=("backend",)
    )
    max_tokens: int = param(5, Interval(int, 1))
    unclear_as: float | None = param(None, OrNone(Interval(float, 0, 1)))
    needs: ClassVar[frozenset[str]] = frozenset({"samples"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        from realitycheck.backends import cached_generate

        template = load_prompt(PROMPT)
        plans: list[list[list[int]] | str] = []
        requests: list[GenerationRequest] = []
        for response in responses:
            try:
                samples = [" ".join(s.split()) for s in sample_texts(response)]
                sentences = response_sentences(response)
            except MissingFeatureError as exc:
                plans.append(str(exc))
                continue
            grid = []
            for sentence in sentences:
                row = []
                for sample in samples:
                    text = template.substitute(sample=sample, sentence=sentence)
                    row.append(len(requests))
                    requests.append(request_for(self.judge, text, max_tokens=self.max_tokens))
                grid.append(row)
            plans.append(grid)
        generations = cached_generate(self.judge, requests, cache=run.cache) if requests else []
        out = []
        for response, plan in zip(responses, plans, strict=True):
            if isinstance(plan, str):
                out.append(self._score(response, None, error=plan))
                continue
            mine = [generations[i] for row in plan for i in row]
            error = failure(mine, "the selfcheck_prompt judge")
            if error is not None:
                out.append(self._failed(response, error))
                continue
            readings = [[read_yes_no(generations[i]) for i in row] for row in plan]
            out.append(self._from_readings(response, readings))
        return out

    def _from_readings(self, response: Response, readings: list[list[YesNo]]) -> Score:
        every = [r for row in readings for r in row]
        unclear = [r for r in every if r.verdict is None]
        sentence_scores = []
        for k, row in enumerate(readings):
            xs = [
                VERDICT_SCORES[r.verdict] if r.verdict is not None else self.unclear_as for r in row
            ]
            known = [x for x in xs if x is not None]
            if not known:
                error = (
                    f"no reply about sentence {k + 1} of {len(readings)} could be read "
                    f"({row[0].note}); {len(unclear)} of the {len(every)} replies for this "
                    "response could not be read"
                )
                return self._score(response, None, error=error, unreadable=len(unclear))
            sentence_scores.append(float(np.mean(known)))
        return self._score(response, float(np.mean(sentence_scores)), unreadable=len(unclear))
