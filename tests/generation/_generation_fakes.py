"""A fake backend and toy examples for the generation tests, registered in a private registry only.

Its answers are a pure function of the request, so reruns and cached answers
can be compared with fresh ones; every request it receives is logged in
``CALLS``. ``explode_after`` makes it raise after that many ``generate`` calls
(a run killed mid-way); ``fail_every`` turns every k-th request into an error
generation. Both are left out of its key, so a healthy rerun is "the same"
backend and resumes the broken run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import ClassVar

from realitycheck.backends import Backend, Generation
from realitycheck.records import Example
from realitycheck.registry import Registry

CALLS: list = []
fake_backends: Registry[Backend] = Registry("fake_backends", "realitycheck.backends")


class Killed(RuntimeError):
    """Stands for the process dying in the middle of a run."""


def _prompt_of(request) -> str:
    return request.prompt or "\n".join(m["content"] for m in request.messages)


@fake_backends.register("fake")
@dataclass(frozen=True, kw_only=True)
class FakeBackend(Backend):
    """Answers from a hash of the request; logs every request."""

    model: str = "fake-model"
    explode_after: int = field(default=-1, metadata={"in_key": False})
    fail_every: int = field(default=0, metadata={"in_key": False})

    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"chat", "completion", "n", "logprobs", "top_logprobs", "entropy", "hidden", "beam"}
    )

    def generate(self, requests):
        if 0 <= self.explode_after <= len(BATCHES):
            raise Killed("killed")
        BATCHES.append(requests)
        out = []
        for request in requests:
            CALLS.append(request)
            if self.fail_every and len(CALLS) % self.fail_every == 0:
                out.append(Generation(error="HTTP 503: server overloaded", usage={"attempts": 4}))
                continue
            out.append(_answer(request))
        return out


@fake_backends.register("fake_plain")
@dataclass(frozen=True, kw_only=True)
class PlainBackend(FakeBackend):
    """Completion only, one sequence per request, no features."""

    capabilities: ClassVar[frozenset[str]] = frozenset({"completion"})


BATCHES: list = []


def _answer(request) -> Generation:
    digest = hashlib.sha256(
        (_prompt_of(request) + repr(request.seed) + str(request.temperature)).encode()
    ).hexdigest()
    if request.temperature <= 0.5:
        texts = tuple(f"answer {digest[:6]}" for _ in range(request.n))
    else:
        texts = tuple(f"sample {digest[:4]} {i}" for i in range(request.n))
    tokens = tuple(tuple(t.split()) for t in texts)
    with_features = request.logprobs
    hidden = tuple(
        {
            f"{kind}@L{layer}": (0.5, -0.5)
            for layer in request.hidden_layers
            for kind in ("last", "mean")
        }
        for _ in texts
    )
    return Generation(
        texts=texts,
        tokens=tokens if with_features else (),
        token_logprobs=tuple(tuple(-0.25 for _ in t) for t in tokens) if with_features else (),
        token_entropies=tuple(tuple(1.0 for _ in t) for t in tokens) if with_features else (),
        hidden=hidden if request.hidden_layers else (),
        finish_reasons=tuple("stop" for _ in texts),
        usage={"prompt_tokens": 10, "completion_tokens": 2 * request.n},
    )


def make_examples(n: int, *, dataset: str = "toy", task: str = "qa") -> list[Example]:
    return [
        Example(
            example_id=f"{dataset}/{i}",
            dataset=dataset,
            task=task,
            question=f"What is the name of thing number {i}?",
            context=f"Thing number {i} is called Name{i}." if task != "qa" else "",
            references=(f"Name{i}", f"N{i}"),
        )
        for i in range(n)
    ]
