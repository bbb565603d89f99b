"""The backend protocol: one verb, ``generate(requests) -> generations``, plus ``loglik``.

A backend declares what it can supply (:data:`CAPABILITIES`): a detector or
labeler that needs a capability the chosen backend lacks fails before any call
(:func:`require`), naming the capability and the backends that have it.

Every request is a frozen, JSON-able value; its :meth:`GenerationRequest.cache_key`
together with the backend's spec addresses the shared call cache, so a request
is never paid for twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal

from realitycheck.errors import InvalidInputError
from realitycheck.params import (
    InstanceOf,
    Interval,
    OneOf,
    SequenceOf,
    check_params,
    param,
    param_error,
)
from realitycheck.registry import Component, Registry

__all__ = [
    "CAPABILITIES",
    "DECODINGS",
    "Backend",
    "Generation",
    "GenerationRequest",
    "PairScore",
    "backend",
    "backends",
    "require",
    "require_pairs",
    "require_teacher_forcing",
    "teacher_force",
]

CAPABILITIES = frozenset(
    {
        "chat",  # takes chat messages
        "completion",  # takes a raw prompt
        "n",  # several return sequences per request
        "logprobs",  # token log-probabilities of the generated tokens
        "top_logprobs",  # top-k alternatives per generated token
        "entropy",  # token entropies over the full vocabulary
        "hidden",  # hidden-state features of chosen layers
        "loglik",  # log-likelihood of a fixed continuation
        "beam",  # beam search
        "json_schema",  # constrains a reply to a JSON Schema (structured output)
        "pairs",  # scores (premise, hypothesis) pairs with a sequence-pair classifier (NLI)
    }
)
DECODINGS = ("greedy", "beam", "sampling", "top_k", "top_p")
Dtype = Literal["auto", "float32", "float16", "bfloat16"]
"""The weight types of the local backends (``hf``, ``vllm``); ``auto`` lets them choose."""


@dataclass(frozen=True, kw_only=True)
class GenerationRequest:
    """One call to a model.

    Attributes:
        prompt: The raw prompt (completion style); empty when ``messages`` are given.
        messages: Chat messages ``({"role": ..., "content": ...}, ...)``.
        n: Number of return sequences.
        decoding: One of :data:`DECODINGS`.
        temperature: Sampling temperature (ignored by greedy and beam).
        top_p: Nucleus mass for ``top_p`` decoding (default 0.95 in the plans).
        top_k: Candidates for ``top_k`` decoding (default 40 in the plans).
        num_beams: Beams for ``beam`` decoding.
        max_tokens: Most new tokens.
        stop: Stop strings.
        seed: Seed, for backends that take one.
        logprobs: Whether to return token log-probabilities.
        top_logprobs: How many alternatives per token to return (0 = none).
        hidden_layers: Layers whose hidden-state features to return (white-box only).
        json_schema: A JSON Schema (as JSON text) the reply must follow, for
            backends with the ``json_schema`` capability; others ignore it.
            Left out of the payload, and so of the cache key, when empty.
        tag: Free text the caller uses to find the answer again (not sent to the model).
    """

    prompt: str = ""
    messages: tuple[Mapping[str, str], ...] = ()
    n: int = param(1, Interval(int, 1))
    decoding: str = param("greedy", OneOf(DECODINGS))
    temperature: float = param(0.0, Interval(float, 0))
    top_p: float = 1.0
    top_k: int = param(0, Interval(int, 0))
    num_beams: int = param(1, Interval(int, 1))
    max_tokens: int = param(64, Interval(int, 1))
    stop: tuple[str, ...] = ()
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int = param(0, Interval(int, 0))
    hidden_layers: tuple[int, ...] = ()
    json_schema: str = ""
    tag: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_params(self)
        if bool(self.prompt) == bool(self.messages):
            raise InvalidInputError(
                "A GenerationRequest needs exactly one of 'prompt' and 'messages'. "
                f"Got prompt={self.prompt[:40]!r} and {len(self.messages)} messages."
            )

    def payload(self) -> dict[str, Any]:
        """Return the request as plain JSON-able data (without ``tag``)."""
        # Shallow on purpose: dataclasses.asdict deep-copies every field and was most of
        # the cost of a cache key; every field but ``messages`` is a scalar or a tuple of
        # scalars, which JSON writes the same way.
        data = {f.name: getattr(self, f.name) for f in _PAYLOAD_FIELDS}
        if not data["json_schema"]:
            data.pop("json_schema")  # requests made before it existed keep their cache keys
        data["messages"] = [dict(m) for m in self.messages]
        return data

    def cache_key(self, backend_spec: Mapping[str, Any]) -> str:
        """Return the SHA-256 of the canonical JSON of this request and the backend spec."""
        text = json.dumps(
            {"backend": backend_spec, "request": self.payload()}, sort_keys=True, default=str
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


_PAYLOAD_FIELDS = tuple(f for f in fields(GenerationRequest) if f.name != "tag")
REQUESTS = SequenceOf(InstanceOf(GenerationRequest))
"""What a backend's ``generate`` takes: a list of :class:`GenerationRequest` values."""


@dataclass(frozen=True, kw_only=True)
class Generation:
    """The answer to one request: ``n`` sequences and what the backend measured.

    Per sequence ``i``: ``texts[i]``; where requested and supported,
    ``token_logprobs[i]`` (log-probability of each generated token),
    ``tokens[i]``, ``top_logprobs[i]`` (per token, ``{token: logprob}``),
    ``token_entropies[i]`` (entropy of each next-token distribution, nats) and
    ``hidden[i]`` (feature name → list of floats, e.g. ``"last@L12"``,
    ``"mean@L12"``, ``"sv@L12"``). ``error`` is set, and ``texts``
    empty, when the call failed for good; ``retryable`` then says the failure
    may pass on a later run (rate limit, 5xx, timeout: a
    :class:`~realitycheck.errors.RetryableBackendError` after the backend's own
    retries; a deterministic failure is never retryable). When a request that
    took several calls fails after some of them answered, the answered
    sequences stay in ``texts`` (and their features) beside the ``error``:
    :func:`~realitycheck.backends.cached_generate` keeps them as a partial
    answer and asks only for the rest next time. ``unsupported`` names the
    features the request asked for and the server did not give back
    (``"logprobs"``, ``"top_logprobs"``, ``"n"``, ``"json_schema"``,
    ``"echo"``). A missing feature the answer cannot do without (log-probs,
    next-token alternatives, sequences, an echo) keeps it out of the call cache
    as a complete answer; ``"json_schema"`` alone does not: a reply that did
    not follow the schema is still a usable answer (a judge reads its
    conclusion and records ``schema_followed=false``), so it is cached like
    any other. ``usage`` may
    count the calls that answered (``"calls"``) and the attempts made
    (``"attempts"``). ``cached`` says it came from the cache.
    """

    texts: tuple[str, ...] = ()
    tokens: tuple[tuple[str, ...], ...] = ()
    token_logprobs: tuple[tuple[float, ...], ...] = ()
    top_logprobs: tuple[tuple[Mapping[str, float], ...], ...] = ()
    token_entropies: tuple[tuple[float, ...], ...] = ()
    hidden: tuple[Mapping[str, tuple[float, ...]], ...] = ()
    finish_reasons: tuple[str, ...] = ()
    usage: Mapping[str, int] = field(default_factory=dict)
    error: str = ""
    retryable: bool = False
    unsupported: tuple[str, ...] = ()
    cached: bool = False

    def to_json(self) -> str:
        """Return the generation as JSON text (for the call cache)."""
        # Shallow, as payload(): dataclasses.asdict deep-copies every token's floats
        # first; JSON writes tuples and mappings the same either way.
        data = {f.name: getattr(self, f.name) for f in _GENERATION_FIELDS}
        return json.dumps(data, default=lambda o: dict(o))

    @classmethod
    def from_json(cls, text: str, *, cached: bool = True) -> Generation:
        """Rebuild a generation stored with :meth:`to_json`."""
        data = json.loads(text)

        def tuples(value: Any) -> Any:
            if isinstance(value, list):
                return tuple(tuples(v) for v in value)
            return value

        out = {k: tuples(v) if k not in ("usage",) else v for k, v in data.items()}
        out["hidden"] = tuple(
            {name: tuple(vec) for name, vec in h.items()} for h in data.get("hidden", [])
        )
        return cls(**out, cached=cached)


_GENERATION_FIELDS = tuple(f for f in fields(Generation) if f.name != "cached")


@dataclass(frozen=True, kw_only=True)
class PairScore:
    """A sequence-pair classifier's answer for one (premise, hypothesis) pair.

    Attributes:
        entailment: P(entailment), or for a single-logit cross-encoder its
            consistency score ``sigmoid(logit)``; in [0, 1], higher = the
            premise supports the hypothesis. ``None`` when the call failed.
        neutral: P(neutral), where the classifier has that class.
        contradiction: P(contradiction), where the classifier has that class.
        error: Why the pair could not be scored (never cached).
        cached: Whether the answer came from the call cache or a duplicate pair.
    """

    entailment: float | None = None
    neutral: float | None = None
    contradiction: float | None = None
    error: str = ""
    cached: bool = False

    def top(self) -> str:
        """Return the most probable of the classes this answer has (``""`` on an error).

        A single-logit answer's top class is ``entailment`` when its
        consistency is at least 0.5, else ``not_entailment``; so is a
        two-class (entailment / not entailment) answer's.
        """
        if self.entailment is None:
            return ""
        known = {"entailment": self.entailment}
        known.update({k: v for k, v in self._others().items() if v is not None})
        if len(known) == 1:
            return "entailment" if self.entailment >= 0.5 else "not_entailment"
        return max(known, key=lambda k: known[k])

    def _others(self) -> dict[str, float | None]:
        return {"neutral": self.neutral, "contradiction": self.contradiction}

    def to_json(self) -> str:
        """Return the answer as JSON text (for the call cache)."""
        data = asdict(self)
        data.pop("cached")
        data.pop("error")
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str, *, cached: bool = True) -> PairScore:
        """Rebuild an answer stored with :meth:`to_json`."""
        return cls(**json.loads(text), cached=cached)


@dataclass(frozen=True, kw_only=True)
class Backend(Component):
    """A model that answers :class:`GenerationRequest` s.

    Subclasses set ``capabilities`` (a subset of :data:`CAPABILITIES`) and
    implement :meth:`generate`; those with ``"loglik"`` implement :meth:`loglik`,
    those with ``"pairs"`` :meth:`score_pairs` and those with ``"hidden"``
    :meth:`last_hidden`.
    A failed request becomes a :class:`Generation` with ``error`` set, never an
    exception that loses the other requests' answers.
    """

    capabilities: ClassVar[frozenset[str]] = frozenset()
    remote: ClassVar[bool] = False
    """Whether its answers come from a server: its calls wait on the network, not this
    machine's cores, and it may be handed batches from several threads at once."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Answer each request, in order."""
        raise NotImplementedError

    def warm_up(self) -> None:
        """Start, in the background, what the first call will need (by default nothing).

        Called by the stages as soon as the components are built, so that
        slow set-up (importing a client library) overlaps loading the data.
        Never fails: a problem shows on the first real call.
        """

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Return log p(continuation | prompt) for each ``(prompt, continuation)``."""
        raise InvalidInputError(f"The backend {self.key!r} cannot score fixed continuations.")

    def score_pairs(
        self, pairs: Sequence[tuple[str, str]], *, labels: Sequence[str] = ()
    ) -> list[PairScore]:
        """Score each ``(premise, hypothesis)`` with a sequence-pair classifier, in order.

        Call it through :func:`~realitycheck.backends.cached_pairs`, which
        caches the answers. ``labels`` declares the classifier's label names
        in output order (empty = its own); a backend checks them
        (:func:`~realitycheck.backends.pair_classes`) before scoring any pair.
        """
        raise InvalidInputError(f"The backend {self.key!r} cannot score sequence pairs.")

    def last_hidden(self, texts: Sequence[str], *, layer: int = -1) -> list[tuple[float, ...]]:
        """Return the hidden state of each text's last token at ``layer`` (-1 = the last layer).

        Backends with the ``hidden`` capability implement it: the text is read
        as a raw prompt (with the tokenizer's special tokens, e.g. BOS), nothing
        is generated.
        """
        raise InvalidInputError(f"The backend {self.key!r} cannot return hidden states.")

    def loglik_tokens(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, ...]]:
        """Return ``log p(c_t | prompt, c_<t)`` for each token ``c_t`` of each continuation.

        The sum of a pair's values is its :meth:`loglik`; their number is the
        continuation's token count (what per-token normalisation divides by).
        """
        raise InvalidInputError(f"The backend {self.key!r} cannot score fixed continuations.")


backends: Registry[Backend] = Registry("backends", "realitycheck.backends")
backend = backends.register


def require(needs: frozenset[str] | set[str], chosen: Backend, *, who: str) -> None:
    """Fail before any call if ``chosen`` lacks a capability that ``who`` needs.

    Raises:
        InvalidInputError: Naming the missing capabilities and the backends that have them.
    """
    missing = sorted(set(needs) & CAPABILITIES - chosen.capabilities)
    if not missing:
        return
    able = [name for name in backends.names() if set(missing) <= backends.get(name).capabilities]
    raise InvalidInputError(
        f"{who} needs {', '.join(missing)}, which the backend {chosen.key!r} cannot supply. "
        f"Backends that can: {', '.join(able) or 'none installed'}."
    )


def require_pairs(classifier: Backend, owner: str) -> None:
    """Fail unless ``classifier`` can score sequence pairs; ``owner`` names the component.

    Raises:
        ParamError: On the ``classifier`` parameter, naming the backends that can.
    """
    if "pairs" not in classifier.capabilities:
        raise param_error(
            "classifier",
            owner,
            "a backend with the 'pairs' capability (hf, vllm, mock)",
            got=repr(classifier.key),
        )


def require_teacher_forcing(backend: Backend, *, who: str) -> None:
    """Fail unless ``backend`` can teacher-force answers it did not generate.

    Such a backend implements ``teacher_force(requests, answers)``, which
    :func:`teacher_force` calls.

    Raises:
        InvalidInputError: Naming ``who`` and the backends that can.
    """
    if callable(getattr(backend, "teacher_force", None)):
        return
    able = [
        n for n in backends.names() if callable(getattr(backends.get(n), "teacher_force", None))
    ]
    raise InvalidInputError(
        f"{who} needs token log-probabilities or hidden states of answers the backend did not "
        f"generate, and the backend {backend.key!r} cannot read fixed answers (teacher "
        f"forcing). Backends that can: {', '.join(able) or 'none installed'}."
    )


def teacher_force(
    backend: Backend, requests: Sequence[GenerationRequest], answers: Sequence[str]
) -> list[Generation]:
    """Return what ``backend``'s model makes of ``answers[i]`` read as its reply to ``requests[i]``.

    Nothing is generated: each answer is teacher-forced after the request's
    prompt, and each :class:`~realitycheck.backends.Generation` holds that
    one sequence (``texts == (answer,)``) with the features the request asks
    for, laid out as at generation time: ``tokens``, ``token_logprobs`` and
    ``token_entropies`` (with ``logprobs``), ``top_logprobs`` and ``hidden``
    (with ``hidden_layers``). An answer that could not be measured gets a
    generation with ``error`` set. This is how white-box detectors score
    answers a run did not generate, through a proxy model's view of them.

    Raises:
        InvalidInputError: If the backend cannot read fixed answers
            (:func:`require_teacher_forcing`), or ``requests`` and ``answers``
            differ in length.
    """
    require_teacher_forcing(backend, who="teacher_force")
    if len(requests) != len(answers):
        raise InvalidInputError(
            f"teacher_force needs one answer per request. Got {len(answers)} answers for "
            f"{len(requests)} requests."
        )
    method = backend.teacher_force  # type: ignore[attr-defined]
    return list(method(requests, answers))
