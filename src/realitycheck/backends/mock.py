"""The ``mock`` backend: scripted replies, for dry runs and tests, with no model at all.

Like httpx's ``MockTransport`` or Inspect's ``mockllm``, it lets a config be
tried end to end (prompts, the call cache, the run store, every detector,
labeler, study and the report) before any model is loaded or paid for::

    realitycheck generate -d nq-open --limit 5 -b 'mock[reply=Paris]' --plan greedy --out runs/dry

or, in a study file for ``realitycheck run``::

    detectors = ["length", "perplexity", "ln_entropy", "eigenscore"]
    [run]
    out = "runs/dry"
    [[datasets]]
    name = "nq-open"
    limit = 20
    [backend]
    name = "mock"
    params = { reply = "Paris", sample_replies = ["Paris", "Lyon", "Paris, France"] }
    [plan]
    n_samples = 5
    hidden_layers = [16]

What it answers is a pure function of the request and its parameters:

* **The reply.** The *prompt text* is the request's prompt, or its chat
  messages' contents joined by newlines. The first rule of ``replies``
  (``PATTERN=>REPLY``, or a TOML table ``{ PATTERN = REPLY }``) whose regular
  expression is found in it (:func:`re.search`) gives the reply, with
  ``{1}``, ``{name}``… filled from the pattern's groups (``{0}``: the whole
  match; ``{{``, ``}}``: braces); otherwise ``reply``. Few-shot prompts quote
  other questions first: ``(?s).*`` before a pattern finds its last occurrence.
* **Samples.** Sequence ``i`` of a request with seed ``s`` (0 when unset) has
  the *sequence seed* ``k = s + i``, so ``n`` sequences under seed ``s`` are
  the ``n`` single requests under seeds ``s``, ``s + 1``, … A greedy or beam
  request, or one at temperature 0, always gets the reply. A sampled request
  at temperature ``T`` gets ``sample_replies[k % len(sample_replies)]``
  when ``u_k < T``, else the reply, where ``u_k`` in ``[0, 1)`` is read from
  the SHA-256 of ``k`` and the prompt text: at ``T >= 1`` every sampled
  sequence cycles through ``sample_replies`` (put the reply among them for it
  to be drawn too); at ``T = 0.1`` about one in ten leaves the reply.
* **Limits.** The text is cut before the first stop string, then to
  ``max_tokens`` tokens (``finish_reason`` ``"stop"`` or ``"length"``). A
  token is a run of non-space characters with the white space before it
  (:func:`tokenize`), so the tokens joined give the text without trailing space.
* **Token features** come only when a request asks for log-probabilities,
  alternatives or hidden states (the tokens come with any of them). Token
  ``t`` has the log-probability ``logprob[t % len(logprob)]``. The next-token
  distribution puts ``p = exp(logprob)`` on the chosen token and
  ``(1 - p) / 2**j`` on the alternatives ``<alt1>``, ``<alt2>``, …; the top
  log-probabilities are the most likely entries of it, and the token entropy
  is its entropy, ``-p log p - (1 - p) log(1 - p) + 2 (1 - p) log 2`` nats.
* **Hidden features** for layers 0..32: token ``x`` at layer ``l`` is a
  vector of :data:`HIDDEN_SIZE` numbers in ``[-1, 1]`` read from the
  SHA-256 of ``l`` and ``x``; ``last@L{l}``, ``mean@L{l}`` and ``sv@L{l}``
  summarise them as the ``hf`` backend does. A layer outside 0..32 makes the
  request an error generation, as ``hf`` does.
* **Failures** become error generations, never exceptions, as with the real
  backends: a prompt matching ``fail_on`` is refused for good (a
  ``FatalBackendError``, as an HTTP 400 would be); with ``fail_every = k``,
  the k-th, 2k-th… request of each :meth:`generate` call fails as an
  overloaded server's would after its retries (``retryable``). Neither is
  part of the backend's key, so a rerun without them resumes the same run,
  and a rerun with them retries only what failed (on other positions, so most
  then pass, as transient failures do).
* :meth:`loglik` is the sum of the canned log-probabilities of the
  continuation's tokens, the same number a generation of that text reports.
* :meth:`score_pairs` (the ``pairs`` capability) is a word-overlap
  stand-in for an NLI classifier with the outputs ``entailment``,
  ``neutral``, ``contradiction`` (:data:`PAIR_LABELS`): with ``o`` the share
  of the hypothesis's distinct :func:`~realitycheck.text.words` found in the
  premise (1 for a hypothesis without words), the outputs are ``o``,
  ``(1 - o) / 2`` and ``(1 - o) / 2``. Declared ``labels`` rename the three
  outputs in that order and are checked like a real model's. A pair whose
  premise or hypothesis matches ``fail_on`` is refused (an error answer).
* :meth:`last_hidden` is the hidden vector of a text's last token, the
  ``last@L{l}`` a generation ending in that token reports.
"""

from __future__ import annotations

import hashlib
import math
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.backends._base import (
    CAPABILITIES,
    Backend,
    Generation,
    GenerationRequest,
    PairScore,
    backend,
)
from realitycheck.backends._pairs import PAIRS, pair_classes, pair_score
from realitycheck.errors import FatalBackendError, RetryableBackendError
from realitycheck.params import (
    AnyOf,
    Constraint,
    InstanceOf,
    Interval,
    NonEmptyStr,
    SequenceOf,
    as_tuple,
    check_arg,
    param,
)
from realitycheck.text import words

__all__ = ["HIDDEN_SIZE", "LAYERS", "PAIR_LABELS", "MockBackend", "prompt_text", "tokenize"]

HIDDEN_SIZE = 8
"""Size of the mock's hidden-state vectors."""
LAYERS = 32
"""The mock's last layer (0 = embeddings), so layers 0..32 exist."""
PAIR_LABELS = ("entailment", "neutral", "contradiction")
"""The label names of the mock's pair classifier, in output order."""
_RULE = "=>"
_TOKEN = re.compile(r"\s*\S+")
_LOG2 = math.log(2.0)


def prompt_text(request: GenerationRequest) -> str:
    """Return the text the mock reads: the prompt, or the messages' contents joined by newlines."""
    return request.prompt or "\n".join(m.get("content", "") for m in request.messages)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into the mock's tokens: non-space runs, each with the space before it."""
    return _TOKEN.findall(text)


def _token_count(text: str) -> int:
    r"""Return ``len(tokenize(text))``, counted by ``str.split`` instead of the regex.

    A token is a run of non-space characters (with the space before it), and
    ``str.split()`` splits on exactly the characters ``\s`` matches (both
    follow ``str.isspace``), so there are as many tokens as parts. On a
    qa_judge prompt of 1,251 characters: 5.5 microseconds instead of 28.
    """
    return len(text.split())


def _as_text(value: Any) -> Any:
    """Return a number as the text typed (``reply=1889`` on the command line reads as an int)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _as_texts(value: Any) -> Any:
    """Return a list (or one value) as a tuple, numbers as the text typed."""
    value = as_tuple(value)
    return tuple(_as_text(v) for v in value) if isinstance(value, tuple) else value


def _as_rules(value: Any) -> Any:
    """Return a TOML table ``{ PATTERN = REPLY }`` as ``PATTERN=>REPLY`` rules."""
    if isinstance(value, Mapping):
        if any(_RULE in str(p) for p in value):
            return value  # cannot be written as rules: refused by the constraint
        return tuple(f"{_as_text(p)}{_RULE}{_as_text(r)}" for p, r in value.items())
    return _as_texts(value)


def _regex_problem(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"{pattern!r} is not a regular expression ({exc})."
    return ""


def _rule_problem(rule: Any) -> str:
    """Return what is wrong with a ``PATTERN=>REPLY`` rule, or ``""``."""
    if not isinstance(rule, str):
        return "it is not a str."
    pattern, sep, reply = rule.partition(_RULE)
    if not sep or not pattern:
        return f"it has no pattern before {_RULE!r}."
    problem = _regex_problem(pattern)
    if problem:
        return problem
    compiled = re.compile(pattern)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(reply) if f is not None]
        if "" in fields:
            return "its reply has {}: number the groups, {1}, {2}..."
        reply.format(*[""] * (compiled.groups + 1), **dict.fromkeys(compiled.groupindex, ""))
    except (ValueError, IndexError, KeyError) as exc:
        return (
            f"its reply names what its pattern lacks ({type(exc).__name__}: {exc}); "
            f"the pattern has groups {{0}} to {{{compiled.groups}}}"
            + "".join(f", {{{name}}}" for name in compiled.groupindex)
            + "."
        )
    return ""


class _Rules(Constraint):
    """A list of reply rules ``PATTERN=>REPLY``; the hint names the first bad one and why."""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, tuple) and not any(map(_rule_problem, value))

    def describe(self) -> str:
        return (
            f"a list of rules 'PATTERN{_RULE}REPLY' (a regular expression, then a reply that "
            "names only its groups: {1}, {name}; {{ and }} for braces)"
        )

    def hint(self, value: Any) -> str:
        rules = _as_rules(value)
        if isinstance(rules, Mapping):
            return f"A pattern holds {_RULE!r}."
        if not isinstance(rules, tuple):
            return ""
        for i, rule in enumerate(rules):
            problem = _rule_problem(rule)
            if problem:
                return f"Rule {i} ({rule!r}): {problem}"
        return ""


class _Regex(Constraint):
    """A string that compiles as a regular expression."""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and not _regex_problem(value)

    def describe(self) -> str:
        return "a regular expression (a str)"

    def hint(self, value: Any) -> str:
        return _regex_problem(value) if isinstance(value, str) else ""


def _as_logprob(value: Any) -> Any:
    """Return one number as a float, a list of several as a tuple (one of one as a float)."""
    if isinstance(value, list | tuple):
        return _as_logprob(value[0]) if len(value) == 1 else tuple(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


_LOGPROB = Interval(float, -math.inf, 0, closed="neither")
_REQUESTS = SequenceOf(InstanceOf(GenerationRequest))
_PAIRS = SequenceOf(SequenceOf(InstanceOf(str), length=2))
_TEXTS = SequenceOf(InstanceOf(str))


@backend("mock")
@dataclass(frozen=True, kw_only=True)
class MockBackend(Backend):
    r"""Scripted replies with every capability, for dry runs and tests (no model, no network).

    See the module documentation for exactly what it answers. Every
    parameter can be typed in a backend key, e.g.
    ``mock[reply=Paris,sample_replies=Paris+Lyon,logprob=-0.1+-2]``; a value
    holding ``,``, ``+``, brackets or quotes goes in double quotes, with each
    backslash doubled: ``mock[replies="number (\\d+)=>Answer{1}"]``.

    Args:
        model: The model name written on the responses.
        reply: What it answers when no rule of ``replies`` matches.
        replies: Rules ``PATTERN=>REPLY`` (or a mapping pattern → reply), tried
            in order; the first whose pattern is found in the prompt text answers.
        sample_replies: What sampled sequences cycle through (empty: the reply).
        logprob: Log-probability of each generated token (< 0); a list is cycled.
        fail_every: Fail every k-th request of each call, retryably (0 = never).
        fail_on: Refuse prompts in which this regular expression is found ("" = none).
    """

    capabilities: ClassVar[frozenset[str]] = CAPABILITIES

    model: str = param("mock", NonEmptyStr())
    reply: str = param("mock reply", InstanceOf(str), convert=_as_text)
    replies: tuple[str, ...] = param((), _Rules(), convert=_as_rules)
    sample_replies: tuple[str, ...] = param(
        (), SequenceOf(InstanceOf(str, name="a str")), convert=_as_texts
    )
    logprob: float | tuple[float, ...] = param(
        -0.5, AnyOf(_LOGPROB, SequenceOf(_LOGPROB, min_length=2)), convert=_as_logprob
    )
    fail_every: int = param(0, Interval(int, 0), in_key=False)
    fail_on: str = param("", _Regex(), in_key=False)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Answer each request, in order; a failure is a generation with ``error`` set.

        Raises:
            InvalidInputError: If an element of ``requests`` is not a GenerationRequest.
        """
        check_arg(requests, _REQUESTS, name="requests", owner="mock.generate")
        return [self._answer(request, position) for position, request in enumerate(requests)]

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Return the sum of the canned log-probabilities of each continuation's tokens.

        Raises:
            InvalidInputError: If ``pairs`` is not a list of (prompt, continuation) strings.
            FatalBackendError: If a prompt matches ``fail_on``.
        """
        return [math.fsum(values) for values in self.loglik_tokens(pairs)]

    def loglik_tokens(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, ...]]:
        """Return the canned log-probability of each token (:func:`tokenize`) of each continuation.

        Raises:
            InvalidInputError: If ``pairs`` is not a list of (prompt, continuation) strings.
            FatalBackendError: If a prompt matches ``fail_on``.
        """
        check_arg(pairs, _PAIRS, name="pairs", owner="mock.loglik")
        out = []
        for prompt, continuation in pairs:
            if self.fail_on and re.search(self.fail_on, prompt):
                raise FatalBackendError(self._refusal())
            out.append(self._token_logprobs(len(tokenize(continuation))))
        return out

    def score_pairs(
        self, pairs: Sequence[tuple[str, str]], *, labels: Sequence[str] = ()
    ) -> list[PairScore]:
        """Return the word-overlap stand-in for an NLI classifier (see the module docs).

        Raises:
            InvalidInputError: If ``pairs`` is not a list of (premise, hypothesis)
                strings, or the declared ``labels`` do not fit the three outputs.
        """
        check_arg(pairs, PAIRS, name="pairs", owner="mock.score_pairs")
        classes = pair_classes(self.model, PAIR_LABELS, labels)
        out = []
        for premise, hypothesis in pairs:
            if self.fail_on and re.search(self.fail_on, f"{premise}\n{hypothesis}"):
                out.append(PairScore(error=f"FatalBackendError: {self._refusal()}"))
                continue
            wanted = set(words(hypothesis))
            share = len(wanted & set(words(premise))) / len(wanted) if wanted else 1.0
            out.append(pair_score(classes, (share, (1 - share) / 2, (1 - share) / 2)))
        return out

    def last_hidden(self, texts: Sequence[str], *, layer: int = -1) -> list[tuple[float, ...]]:
        """Return the mock's hidden vector of each text's last token at ``layer`` (-1 = 32).

        The same vector as ``last@L{layer}`` of a generation ending in that
        token; a text without a token gets the zero vector.

        Raises:
            InvalidInputError: If ``texts`` is not a list of strings or ``layer`` is out of range.
            FatalBackendError: If a text matches ``fail_on``.
        """
        check_arg(texts, _TEXTS, name="texts", owner="mock.last_hidden")
        check_arg(layer, Interval(int, -1, LAYERS), name="layer", owner="mock.last_hidden")
        chosen = LAYERS if layer == -1 else layer
        out = []
        for text in texts:
            if self.fail_on and re.search(self.fail_on, text):
                raise FatalBackendError(self._refusal())
            tokens = tokenize(text)
            out.append(tuple(_vector(chosen, tokens[-1])) if tokens else (0.0,) * HIDDEN_SIZE)
        return out

    def _refusal(self) -> str:
        return f"HTTP 400: the request was refused (the mock's fail_on={self.fail_on!r} matched)"

    def _answer(self, request: GenerationRequest, position: int) -> Generation:
        text = prompt_text(request)
        if self.fail_on and re.search(self.fail_on, text):
            return _failure(FatalBackendError(self._refusal()))
        if self.fail_every and (position + 1) % self.fail_every == 0:
            return _failure(
                RetryableBackendError(
                    "HTTP 503: server overloaded (the mock fails request "
                    f"{position + 1} of this call: fail_every={self.fail_every})"
                )
            )
        bad = [layer for layer in request.hidden_layers if not 0 <= layer <= LAYERS]
        if bad:
            return Generation(
                error=f"hidden layers {bad} are out of range 0..{LAYERS} for the mock backend"
            )
        own = self._reply_to(text)
        texts, reasons, tokens = [], [], []
        for i in range(request.n):
            cut, reason, toks = _limit(self._sequence(own, request, i, text), request)
            texts.append(cut)
            reasons.append(reason)
            tokens.append(tuple(toks))
        logprobs = [self._token_logprobs(len(t)) for t in tokens]
        features: dict[str, Any] = {}
        if request.logprobs:
            features["token_logprobs"] = tuple(logprobs)
            features["token_entropies"] = tuple(tuple(map(_entropy, lps)) for lps in logprobs)
        if request.top_logprobs > 0:
            features["top_logprobs"] = tuple(
                _top(t, lps, request.top_logprobs) for t, lps in zip(tokens, logprobs, strict=True)
            )
        if request.hidden_layers:
            features["hidden"] = tuple(_hidden(t, request.hidden_layers) for t in tokens)
        if features:
            features["tokens"] = tuple(tokens)
        return Generation(
            texts=tuple(texts),
            finish_reasons=tuple(reasons),
            usage={
                "prompt_tokens": _token_count(text),
                "completion_tokens": sum(len(t) for t in tokens),
            },
            **features,
        )

    def _reply_to(self, text: str) -> str:
        for rule in self.replies:
            pattern, _, reply = rule.partition(_RULE)
            match = re.search(pattern, text)
            if match is not None:
                groups = match.groups(default="")
                return reply.format(match.group(0), *groups, **match.groupdict(default=""))
        return self.reply

    def _sequence(self, own: str, request: GenerationRequest, i: int, text: str) -> str:
        sampled = request.decoding not in ("greedy", "beam") and request.temperature > 0
        if not sampled or not self.sample_replies:
            return own
        k = (request.seed or 0) + i
        digest = hashlib.sha256(f"{k}\n{text}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        if u < request.temperature:
            return self.sample_replies[k % len(self.sample_replies)]
        return own

    def _token_logprobs(self, count: int) -> tuple[float, ...]:
        canned = self.logprob if isinstance(self.logprob, tuple) else (self.logprob,)
        return tuple(canned[t % len(canned)] for t in range(count))


def _failure(exc: RetryableBackendError | FatalBackendError) -> Generation:
    return Generation(
        error=f"{type(exc).__name__}: {exc}", retryable=isinstance(exc, RetryableBackendError)
    )


def _limit(text: str, request: GenerationRequest) -> tuple[str, str, list[str]]:
    """Cut ``text`` at the first stop string, then to ``max_tokens``; return it, why, its tokens."""
    cuts = [text.find(s) for s in request.stop if s in text]
    if cuts:
        text = text[: min(cuts)]
    tokens = tokenize(text)
    if len(tokens) > request.max_tokens:
        tokens = tokens[: request.max_tokens]
        return "".join(tokens), "length", tokens
    return text, "stop", tokens


def _top(
    tokens: Sequence[str], logprobs: Sequence[float], k: int
) -> tuple[Mapping[str, float], ...]:
    """Return the ``k`` most likely entries of the mock's distribution at each token."""
    out = []
    for token, lp in zip(tokens, logprobs, strict=True):
        rest = math.log1p(-math.exp(lp))
        entries = [(token, lp)] + [(f"<alt{j}>", rest - j * _LOG2) for j in range(1, k + 1)]
        entries.sort(key=lambda e: -e[1])
        out.append(dict(entries[:k]))
    return tuple(out)


def _entropy(logprob: float) -> float:
    """Entropy (nats) of the mock's next-token distribution with ``p = exp(logprob)`` chosen."""
    p = math.exp(logprob)
    return -p * logprob - (1 - p) * math.log1p(-p) + 2 * (1 - p) * _LOG2


def _hidden(tokens: Sequence[str], layers: Sequence[int]) -> Mapping[str, tuple[float, ...]]:
    import numpy as np

    out: dict[str, tuple[float, ...]] = {}
    for layer in layers:
        if not tokens:
            out.update({f"{kind}@L{layer}": () for kind in ("last", "mean", "sv")})
            continue
        h = np.array([_vector(layer, token) for token in tokens])
        centred = h - h.mean(axis=1, keepdims=True)
        out[f"last@L{layer}"] = tuple(float(v) for v in h[-1])
        out[f"mean@L{layer}"] = tuple(float(v) for v in h.mean(axis=0))
        out[f"sv@L{layer}"] = tuple(float(v) for v in np.linalg.svd(centred, compute_uv=False))
    return out


def _vector(layer: int, token: str) -> list[float]:
    digest = hashlib.sha256(f"{layer}\n{token}".encode()).digest()
    return [b / 127.5 - 1.0 for b in digest[:HIDDEN_SIZE]]
