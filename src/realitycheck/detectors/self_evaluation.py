"""The model judges its own answer: P(True) and Surprisal.

Both call a backend (the nested ``judge``, ideally the model that wrote the
answers) through the run's call cache, and check before any call that it has
the capability they need.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from realitycheck.detectors._backend_calls import (
    cached_last_hidden,
    failure,
    load_prompt,
    quote,
    request_for,
    yes_no,
)
from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.errors import BackendError
from realitycheck.params import InstanceOf, Interval, param
from realitycheck.records import Response, Score
from realitycheck.registry import nested

if TYPE_CHECKING:
    from realitycheck.backends import Backend, Generation

__all__ = ["PTrue", "Surprisal", "yes_probability"]

PROMPT = "p_true.v1.txt"


def yes_probability(alternatives: Mapping[str, float]) -> tuple[float, float]:
    """Return ``(p_yes, p_no)`` from one token's top alternatives ``{token: logprob}``.

    A token counts as yes (no) when its first word is "yes" ("no"), case and
    surrounding spaces or punctuation aside (" Yes", "yes", "YES."); the
    probabilities of all such spellings are added. A word absent from the
    alternatives counts 0.
    """
    p = {"yes": 0.0, "no": 0.0, "other": 0.0}
    for token, logprob in alternatives.items():
        p[yes_no(token)] += math.exp(logprob)
    return p["yes"], p["no"]


@detector("p_true")
@dataclass(frozen=True, kw_only=True)
class PTrue(Detector):
    """One minus P(True): the probability the model says its answer is correct (Kadavath et al.).

    The ``judge`` gets the question and the response in the prompt
    ``detectors/prompts/p_true.v1.txt`` ("Is the proposed answer correct?
    Reply with Yes or No"), as a raw prompt when it takes one, else as a
    chat message, and generates one greedy token with its ``top_logprobs``
    most likely alternatives. ``P(True)`` is the probability of the next
    token being "yes" (:func:`yes_probability`; Kadavath et al. 2022, and the
    "SelfCheck" of the prompt-multiplicity paper, A.2); with ``normalize`` it
    is ``p_yes / (p_yes + p_no)``. A "yes" outside the top alternatives
    counts 0, so raise ``top_logprobs`` for a model that spreads its mass.
    ``value = 1 - P(True)`` in ``[0, 1]``, higher = the model doubts its
    answer = more likely hallucinated. RunContext a backend with
    ``top_logprobs`` (checked before any call). A reply that ends at once
    (EOS first: no token, so no alternatives) gets ``value=None`` and an
    error; so does an example without a question, and a failed call
    (``failed``, and ``retryable`` when it may pass). When the server
    ignored the request for alternatives (``Generation.unsupported``, e.g. an
    OpenAI-compatible server that drops ``top_logprobs``), the error names
    the server, the model and the field.

    A next token whose alternatives hold neither yes nor no is a reply that
    cannot be read as an answer to the question (the model began "The" or
    "Based"): its value is ``None``, with the most likely alternatives quoted
    in the error, and it is counted in ``unreadable``, never turned into
    ``P(True) = 0``.

    Args:
        judge: The model asked, e.g. ``hf[model=/models/llama]`` in a key
            (formerly ``backend``, still read with a warning).
        top_logprobs: Alternatives read at the first token.
        normalize: Divide by ``p_yes + p_no``.
    """

    judge: Backend = nested(
        "backends", default=dataclasses.MISSING, doc="the model asked", aliases=("backend",)
    )
    top_logprobs: int = param(20, Interval(int, 1))
    normalize: bool = param(False, InstanceOf(bool))

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        from realitycheck.backends import cached_generate, require

        require({"top_logprobs"}, self.judge, who=f"The detector {self.name!r}")
        template = load_prompt(PROMPT)
        errors = [_question_error(r, run) for r in responses]
        requests = []
        for response, error in zip(responses, errors, strict=True):
            if not error:
                question = run.examples[response.example_id].question
                text = template.substitute(question=question, answer=response.text)
                requests.append(
                    request_for(self.judge, text, max_tokens=1, top_logprobs=self.top_logprobs)
                )
        generations = iter(cached_generate(self.judge, requests, cache=run.cache))
        out = []
        for response, error in zip(responses, errors, strict=True):
            if error:
                out.append(self._score(response, None, error=error))
                continue
            out.append(self._from_generation(response, next(generations)))
        return out

    def _from_generation(self, response: Response, generation: Generation) -> Score:
        bad = failure([generation], "the p_true judge")
        if bad is not None:
            return self._failed(response, bad)
        if not generation.top_logprobs or not generation.top_logprobs[0]:
            return self._score(response, None, error=self._no_alternatives(generation))
        alternatives = generation.top_logprobs[0][0]
        p_yes, p_no = yes_probability(alternatives)
        if p_yes + p_no == 0:
            top = sorted(alternatives, key=lambda t: -alternatives[t])[:5]
            error = (
                f"neither yes nor no is among the top {len(alternatives)} alternatives of the "
                f"next token (the likeliest: {', '.join(quote(t) for t in top)})"
            )
            return self._score(response, None, error=error, unreadable=1)
        if self.normalize:
            p_yes = p_yes / (p_yes + p_no)
        return self._score(response, 1.0 - p_yes)

    def _no_alternatives(self, generation: Generation) -> str:
        """Say why a generation has no next-token alternatives: the server, or the reply."""
        ignored = [f for f in ("top_logprobs", "logprobs") if f in generation.unsupported]
        if ignored:
            from realitycheck.backends import server_of

            return (
                f"the server {server_of(self.judge)} returned no next-token alternatives: it "
                f"ignored the request field {ignored[0]!r}, so P(True) cannot be read from it"
            )
        reply = generation.texts[0] if generation.texts else ""
        if reply:
            return (
                f"the judge {self.judge.key} returned no next-token alternatives with its "
                f"reply {quote(reply)}"
            )
        return "the reply ended at once: no next-token alternatives"


def _question_error(response: Response, run: RunContext) -> str:
    example = run.examples.get(response.example_id)
    if example is None:
        return f"example {response.example_id!r} was not given"
    if not example.question.strip():
        return "the example has no question"
    if not response.text.strip():
        return "the response is empty"
    return ""


@detector("surprisal")
@dataclass(frozen=True, kw_only=True)
class Surprisal(Detector):
    """One minus the cosine between the model's states after the question and after the answer.

    As in the prompt-multiplicity paper (§5.1, A.2, after Duan et al., 2024):
    ``q`` is the hidden state of the last token of the question, ``a`` that of
    the last token of the question followed by a space and the response,
    both at ``layer`` (default: the final layer's output) of the ``judge``
    (:meth:`~realitycheck.backends.Backend.last_hidden`, the text read as a
    raw prompt). ``value = 1 - cos(q, a)`` in ``[0, 2]``: higher = the answer
    moves the model's state further from where the question left it = more
    surprising = taken as more likely hallucinated (the paper finds this
    tracks prompt sensitivity more than correctness). RunContext a backend with
    ``hidden`` (checked before any call); the vectors are kept in the run's
    call cache. An example without a question, an empty response or a failed
    call gets ``value=None`` and an error (a failed call is ``failed``, and
    ``retryable`` when it may pass).

    Args:
        judge: The model read, e.g. ``hf[model=/models/llama]`` in a key
            (formerly ``backend``, still read with a warning).
        layer: Hidden layer (0 = embeddings, -1 = the final layer).
    """

    judge: Backend = nested(
        "backends", default=dataclasses.MISSING, doc="the model read", aliases=("backend",)
    )
    layer: int = param(-1, Interval(int, -1))

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        from realitycheck.backends import require

        require({"hidden"}, self.judge, who=f"The detector {self.name!r}")
        errors = [_question_error(r, run) for r in responses]
        texts: list[str] = []
        for response, error in zip(responses, errors, strict=True):
            if not error:
                question = run.examples[response.example_id].question
                texts += [question, f"{question} {response.text}"]
        try:
            vectors = (
                cached_last_hidden(self.judge, texts, layer=self.layer, cache=run.cache)
                if texts
                else []
            )
        except BackendError as exc:
            return [
                self._score(r, None, error=e) if e else self._failed(r, exc)
                for r, e in zip(responses, errors, strict=True)
            ]
        pairs = iter(zip(vectors[::2], vectors[1::2], strict=True))
        out = []
        for response, error in zip(responses, errors, strict=True):
            if error:
                out.append(self._score(response, None, error=error))
                continue
            q, a = next(pairs)
            norm = float(np.linalg.norm(q) * np.linalg.norm(a))
            if norm == 0:
                out.append(self._score(response, None, error="a hidden state is all zeros"))
                continue
            out.append(self._score(response, 1.0 - float(q @ a) / norm))
        return out
