"""The public ``mock`` backend, scripted for the generation tests, and toy examples.

:class:`FakeBackend` is a thin subclass of :class:`~realitycheck.backends.mock.MockBackend`
(registered in a private registry only): it answers thing ``i`` of
:func:`make_examples` with ``answer i``, samples say ``sample one`` / ``two`` /
``three``, and everything else comes from the mock (token features, hidden
states, ``fail_every``). What it adds is test-only: every request it receives
is logged in ``CALLS`` (and every ``generate`` call in ``BATCHES``), and
``explode_after`` makes it raise after that many ``generate`` calls (a run
killed mid-way). ``explode_after`` and the mock's ``fail_every`` are left out of
its key, so a healthy rerun is "the same" backend and resumes the broken run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from realitycheck.backends import Backend
from realitycheck.backends.mock import MockBackend
from realitycheck.records import Example
from realitycheck.registry import Registry

CALLS: list = []
BATCHES: list = []
fake_backends: Registry[Backend] = Registry("fake_backends", "realitycheck.backends")


class Killed(RuntimeError):
    """Stands for the process dying in the middle of a run."""


@fake_backends.register("fake")
@dataclass(frozen=True, kw_only=True)
class FakeBackend(MockBackend):
    """The mock with every capability; logs every request; can be killed mid-run."""

    model: str = "fake-model"
    reply: str = "answer"
    replies: tuple[str, ...] = (r"(?s).*thing number (\d+)=>answer {1}",)
    sample_replies: tuple[str, ...] = ("sample one", "sample two", "sample three")
    explode_after: int = field(default=-1, metadata={"in_key": False})

    def generate(self, requests):
        if 0 <= self.explode_after <= len(BATCHES):
            raise Killed("killed")
        BATCHES.append(requests)
        CALLS.extend(requests)
        return super().generate(requests)


@fake_backends.register("fake_plain")
@dataclass(frozen=True, kw_only=True)
class PlainBackend(FakeBackend):
    """Completion only, one sequence per request, no features."""

    capabilities: ClassVar[frozenset[str]] = frozenset({"completion"})


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
