"""The ``[choice]`` table of a run config: answer MCQ datasets by likelihood, under variants.

::

    [choice]                       # with a [backend]; instead of a [plan]
    normalisation = "token"        # token | char | none
    template = "qa"                # plain | qa | letters
    shots = 6                      # fixed demonstrations of the base prompt
    variants = [                   # a key, or a table {name, params}; default ["default"]
        "default",
        "shuffle_demos[seed=1]",
        { name = "k_shot", params = { k = 3, seed = 2 } },
    ]

The backend must score continuations: ``hf``, ``vllm`` (on a GPU: ``name =
"vllm"``, ``params = { model = "PATH" }``; options are scored from the
engine's prompt log-probs) or ``openai`` with ``mode = "completions"`` (a
server that echoes prompt log-probs). Each dataset entry's ``limit`` takes
the first questions; demonstrations come from the whole dataset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from realitycheck.errors import InvalidInputError
from realitycheck.generation import ChoicePlan, PromptVariant, variants

__all__ = ["CHOICE_KEYS", "ChoiceSettings", "parse_choice"]

CHOICE_KEYS = ("normalisation", "template", "shots", "variants")


class _Reader(Protocol):
    def fail(self, message: str, keys: Sequence[str | int]) -> InvalidInputError: ...

    def table(self, value: Any, keys: Sequence[str | int], allowed: Sequence[str]) -> dict: ...

    def typed(
        self, value: Any, kind: type | tuple[type, ...], keys: Sequence[str | int]
    ) -> Any: ...

    def build(self, keys: Sequence[str | int], make: Callable[[], Any]) -> Any: ...


@dataclass(frozen=True, kw_only=True)
class ChoiceSettings:
    """How a run answers its MCQ datasets: the plan and the prompt variants."""

    plan: ChoicePlan
    variants: tuple[PromptVariant, ...]


def parse_choice(reader: _Reader, raw: Mapping[str, Any]) -> ChoiceSettings:
    """Build the ``[choice]`` table's plan and variants, naming the key of any mistake."""
    table = dict(reader.table(raw, ["choice"], CHOICE_KEYS))
    entries = reader.typed(table.pop("variants", ["default"]), list, ["choice", "variants"])
    if not entries:
        raise reader.fail("Expected at least one variant (e.g. 'default').", ["choice", "variants"])
    built = []
    for i, entry in enumerate(entries):
        keys: list[str | int] = ["choice", "variants", i]
        reader.typed(entry, (str, dict), keys)
        if isinstance(entry, dict):
            reader.table(entry, keys, ("name", "params"))
            make = partial(variants.create_from_spec, entry)
        else:
            make = partial(variants.create_from_key, entry)
        built.append(reader.build(keys, make))
    for key, value in table.items():
        reader.build(["choice", key], partial(ChoicePlan, **{key: value}))
    plan = reader.build(["choice"], partial(ChoicePlan, **table))
    return ChoiceSettings(plan=plan, variants=tuple(built))
