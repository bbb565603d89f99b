"""Sampling plans: how many answers to draw for each prompt, and how.

A plan draws one *best answer* at a low temperature (default 0.1), which
becomes the :class:`~realitycheck.records.Response`, plus ``n_samples``
stochastic samples (default 10 at temperature 1.0) that attach to it, as in the
uncertainty-based hallucination detection literature. Decoding strategies:
``greedy``, ``beam`` (``num_beams``, default 3), ``sampling`` (ancestral),
``top_k`` (default 40) and ``top_p`` (default 0.95).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.backends import DECODINGS, Backend, GenerationRequest, require
from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.generation._prompts import Prompt
from realitycheck.generation._rewrites import PLAN_VARIANT
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    OneOf,
    OrNone,
    SequenceOf,
    as_tuple,
    param,
    param_error,
)
from realitycheck.registry import Component, nested, parse_key
from realitycheck.retrievers import Retriever

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "FORMATS",
    "PLANS",
    "SAMPLE_DECODINGS",
    "PlanRequests",
    "SamplingPlan",
    "make_plan",
    "usable_capabilities",
]

FORMATS = ("auto", "chat", "completion")
SAMPLE_DECODINGS = ("sampling", "top_k", "top_p")
DEFAULT_MAX_TOKENS = {
    "qa": 64,
    "open": 256,
    "rag_qa": 256,
    "summary": 512,
    "data2text": 512,
    "dialogue": 128,
}
_ONE_LINE_TASKS = ("qa", "dialogue")  # a completion prompt's answer ends at a newline
_FEATURES = frozenset({"logprobs", "top_logprobs", "entropy", "hidden"})
PLANS: dict[str, dict[str, Any]] = {
    "default": {},
    "greedy": {"n_samples": 0, "decoding": "greedy"},
    "beam": {"n_samples": 0, "decoding": "beam"},
}


@dataclass(frozen=True, kw_only=True)
class SamplingPlan(Component):
    """How to answer each prompt: a best answer plus stochastic samples.

    A config object (like a component, it has a ``spec`` and a ``key``; the
    key leaves out ``variants``, so adding a variant keeps the others' answers).

    Args:
        n_samples: Stochastic samples per prompt (0 = best answer only).
        temperature: Temperature of the samples.
        best_temperature: Temperature of the best answer (ignored by greedy and beam).
        decoding: Decoding of the best answer: greedy, beam, sampling, top_k or top_p.
        sample_decoding: Decoding of the samples: sampling, top_k or top_p.
        top_k: Candidates kept by ``top_k`` decoding.
        top_p: Probability mass kept by ``top_p`` decoding.
        num_beams: Beams of ``beam`` decoding.
        max_tokens: Most new tokens; ``None`` = by task (64 for qa, up to 512 for summaries).
        stop: Stop strings; ``None`` = a newline for completion-style qa and dialogue
            (one answer, one turn), none otherwise.
        format: ``chat``, ``completion`` or ``auto`` (chat when the backend takes it).
        logprobs: Ask for token log-probabilities; ``None`` = whenever the backend can.
        top_logprobs: Alternatives per token to ask for (0 = none).
        hidden_layers: Layers whose hidden-state features to ask for (white-box backends).
        variants: Prompt variants to answer (``zero_shot``, ``few_shot``, ``@2`` wordings,
            or a variant that rewrites the question such as ``paraphrase[backend=...]``;
            see :mod:`realitycheck.generation._rewrites`).
        few_shot_k: Demonstrations in a few-shot prompt.
        retriever: Passages to prepend to each question's prompt (in-context
            retrieval augmentation, e.g. ``bm25[corpus=passages.jsonl,k=3]``); the
            question is the query and the ids of the passages are stored in each
            response's meta. ``None`` = no retrieval.
        seed: Base seed of sampled requests, shifted per prompt by a hash of its
            text (see :meth:`requests`); greedy and beam requests carry none.
            ``None`` sends unseeded requests (faster batching on some backends, not
            reproducible), except that samples drawn one per request still get
            distinct seeds ``1 + i``.
    """

    n_samples: int = param(10, Interval(int, 0))
    temperature: float = param(1.0, Interval(float, 0))
    best_temperature: float = param(0.1, Interval(float, 0))
    decoding: str = param("sampling", OneOf(DECODINGS))
    sample_decoding: str = param("sampling", OneOf(SAMPLE_DECODINGS))
    top_k: int = param(40, Interval(int, 1))
    top_p: float = param(0.95, Interval(float, 0, 1, closed="right"))
    num_beams: int = param(3, Interval(int, 1))
    max_tokens: int | None = param(None, OrNone(Interval(int, 1)))
    stop: tuple[str, ...] | None = param(
        None, OrNone(SequenceOf(NonEmptyStr(blank=True))), convert=as_tuple
    )
    format: str = param("auto", OneOf(FORMATS))
    logprobs: bool | None = param(None, OrNone(InstanceOf(bool)))
    top_logprobs: int = param(0, Interval(int, 0))
    hidden_layers: tuple[int, ...] = param((), SequenceOf(Interval(int)), convert=as_tuple)
    variants: tuple[str, ...] = param(
        ("zero_shot",),
        SequenceOf(PLAN_VARIANT, min_length=1, unique=True),
        convert=as_tuple,
        in_key=False,
    )
    few_shot_k: int = param(5, Interval(int, 1))
    retriever: Retriever | None = nested("retrievers")
    seed: int | None = param(0, OrNone(Interval(int)))

    name: ClassVar[str] = "plan"
    family: ClassVar[str] = "plans"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_samples and self.temperature <= 0:
            raise param_error("temperature", self.name, "> 0 when n_samples > 0", self.temperature)
        if self.decoding in SAMPLE_DECODINGS and self.best_temperature <= 0:
            raise param_error(
                "best_temperature",
                self.name,
                f"> 0 with {self.decoding} decoding; use decoding='greedy' for a "
                "deterministic answer",
                self.best_temperature,
            )

    def check(self, backend: Backend, *, needs: Mapping[str, Set[str]] | None = None) -> None:
        """Fail before any call if ``backend`` cannot do what this plan asks.

        Args:
            backend: The model to generate with.
            needs: What each consumer of the responses (detector key → its
                ``needs``) reads: ``samples`` needs ``n_samples >= 1``; ``logprobs``,
                ``entropy`` and ``hidden`` need the backend's capability and a plan
                that asks for them.

        Raises:
            InvalidInputError: Naming the missing capability and the backends that have it,
                or the plan parameter to change.
        """
        wanted = set()
        if self.decoding == "beam":
            wanted.add("beam")
        if self.logprobs:
            wanted.add("logprobs")
        if self.top_logprobs:
            wanted.add("top_logprobs")
        if self.hidden_layers:
            wanted.add("hidden")
        if self.format != "auto":
            wanted.add(self.format)
        require(wanted, backend, who=f"The sampling plan {self.key!r}")
        self.format_for(usable_capabilities(backend))
        for who, what in (needs or {}).items():
            require(set(what) & _FEATURES, backend, who=who)
            if "samples" in what and not self.n_samples:
                raise InvalidInputError(
                    f"{who} needs samples, but the sampling plan draws none (n_samples = 0)."
                )
            if {"logprobs", "entropy"} & set(what) and self.logprobs is False:
                raise InvalidInputError(
                    f"{who} needs token log-probabilities, but the sampling plan sets "
                    "logprobs = false."
                )
            if "hidden" in what and not self.hidden_layers:
                raise InvalidInputError(
                    f"{who} needs hidden-state features, but the sampling plan asks for none; "
                    "set hidden_layers to the layers it reads."
                )

    def format_for(self, capabilities: Set[str]) -> str:
        """Return the prompt format used with a backend of these capabilities."""
        if self.format != "auto":
            if self.format not in capabilities:
                raise InvalidInputError(
                    f"The sampling plan {self.key!r} needs {self.format} prompts, which the "
                    "backend as configured does not take (e.g. openai in completions mode "
                    "takes raw prompts only)."
                )
            return self.format
        for fmt in ("chat", "completion"):
            if fmt in capabilities:
                return fmt
        raise InvalidInputError(
            "The backend takes neither chat messages nor raw prompts (it declares neither "
            "the 'chat' nor the 'completion' capability)."
        )

    def requests(
        self, prompt: Prompt, *, task: str, capabilities: Set[str], tag: str = ""
    ) -> PlanRequests:
        """Return the requests answering one prompt: the best answer and the samples.

        Seeds are per prompt: ``s = (seed + h) mod 2**31`` where ``h`` comes from
        the SHA-256 of the prompt text, so different questions draw independent
        samples while the same prompt always gets the same seeds (and the call
        cache answers it again). The best answer uses ``s``; samples are one
        request with ``n = n_samples`` and seed ``s + 1`` when the backend
        returns several sequences per request, else ``n_samples`` requests with
        seeds ``s + 1`` .. ``s + n_samples`` (distinct, so the cache never folds
        them into one).
        """
        deterministic = self.decoding in ("greedy", "beam")
        fmt = self.format_for(capabilities)
        text_or_messages: dict[str, Any] = (
            {"messages": prompt.messages()} if fmt == "chat" else {"prompt": prompt.text()}
        )
        seed = None if self.seed is None else prompt_seed(self.seed, prompt.text())
        base = seed if seed is not None else 0
        if self.stop is not None:
            stop = self.stop
        else:
            stop = ("\n",) if fmt == "completion" and task in _ONE_LINE_TASKS else ()
        logprobs = "logprobs" in capabilities if self.logprobs is None else self.logprobs
        common: dict[str, Any] = {
            **text_or_messages,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS.get(task, 256),
            "stop": stop,
            "logprobs": logprobs,
            "top_logprobs": self.top_logprobs,
            "hidden_layers": self.hidden_layers,
        }
        best = GenerationRequest(
            **_decoding_args(common, self.decoding),
            n=1,
            decoding=self.decoding,
            temperature=0.0 if self.decoding in ("greedy", "beam") else self.best_temperature,
            num_beams=self.num_beams if self.decoding == "beam" else 1,
            seed=None if deterministic else seed,
            tag=f"{tag}#best",
        )
        samples: tuple[GenerationRequest, ...] = ()
        if self.n_samples:
            one = dict(
                _decoding_args(common, self.sample_decoding),
                decoding=self.sample_decoding,
                temperature=self.temperature,
            )
            if "n" in capabilities:
                samples = (
                    GenerationRequest(
                        **one,
                        n=self.n_samples,
                        seed=None if seed is None else seed + 1,
                        tag=f"{tag}#samples",
                    ),
                )
            else:
                samples = tuple(
                    GenerationRequest(**one, n=1, seed=base + 1 + i, tag=f"{tag}#sample{i}")
                    for i in range(self.n_samples)
                )
        return PlanRequests(best=best, samples=samples)


def prompt_seed(seed: int, text: str) -> int:
    """Return the seed of one prompt: ``seed`` shifted by a hash of the prompt text."""
    offset = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)
    return (seed + offset) % 2**31


def usable_capabilities(backend: Backend) -> frozenset[str]:
    """Return the backend's capabilities as configured.

    A backend set to one endpoint (``mode="completions"`` on ``openai``) takes
    raw prompts only, whatever its class declares.
    """
    caps = backend.capabilities
    if getattr(backend, "mode", None) == "completions":
        return caps - {"chat"}
    return caps


def _decoding_args(common: dict[str, Any], decoding: str) -> dict[str, Any]:
    """Keep top_k / top_p only for the decoding that uses them (neutral values otherwise)."""
    out = dict(common)
    if decoding != "top_k":
        out["top_k"] = 0
    if decoding != "top_p":
        out["top_p"] = 1.0
    return out


@dataclass(frozen=True, kw_only=True)
class PlanRequests:
    """The requests of one prompt: ``best`` answers it, ``samples`` draw the samples."""

    best: GenerationRequest
    samples: tuple[GenerationRequest, ...]

    def all(self) -> tuple[GenerationRequest, ...]:
        """Return the best-answer request followed by the sample requests."""
        return (self.best, *self.samples)


def make_plan(text: str = "default", **overrides: Any) -> SamplingPlan:
    """Build a plan from a preset name with parameters, e.g. ``default[n_samples=5]``.

    Presets: ``default`` (10 samples at temperature 1.0 plus a best answer at
    0.1), ``greedy`` and ``beam`` (a best answer only). ``overrides`` win over
    the text's parameters.

    Raises:
        InvalidInputError: On an unknown preset or parameter (with close matches).
    """
    name, params = parse_key(text)
    if name not in PLANS:
        hint = did_you_mean(name, PLANS)
        raise InvalidInputError(
            f"There is no sampling plan named {name!r}.{hint} Available: {', '.join(PLANS)}."
        )
    allowed = [f.name for f in dataclasses.fields(SamplingPlan) if f.init]
    merged = {**PLANS[name], **params, **overrides}
    for key in merged:
        if key not in allowed:
            hint = did_you_mean(key, allowed)
            raise InvalidInputError(
                f"A sampling plan has no parameter {key!r}.{hint} "
                f"Its parameters: {', '.join(allowed)}.",
                field=key,
            )
    return SamplingPlan(**merged)
