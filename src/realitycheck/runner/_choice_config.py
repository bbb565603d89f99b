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
        { name = "instruction", params = { file = "wordings.txt" } },  # relative to
    ]                                                                   # this file
    retriever = { name = "bm25", params = { corpus = "passages.jsonl", k = 3 } }
                                   # passages before each question (corpus relative to
                                   # the config file); leave out for no retrieval
    without_retrieval = true       # with a retriever: also answer every question
                                   # without it (both kept, different response ids)

The backend must score continuations: ``hf``, ``vllm`` (on a GPU: ``name =
"vllm"``, ``params = { model = "PATH" }``; options are scored from the
engine's prompt log-probs) or ``openai`` with ``mode = "completions"`` (a
server that echoes prompt log-probs). Several models answer the same
questions when the run config has several ``[[backend]]`` tables. Each
dataset entry's ``limit`` takes the first questions; demonstrations come from
the whole dataset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from realitycheck.generation import ChoicePlan, PromptVariant, variants
from realitycheck.params.toml_lines import TomlFile
from realitycheck.retrievers import Retriever, retrievers

__all__ = ["CHOICE_KEYS", "ChoiceSettings", "build_retriever", "parse_choice"]

CHOICE_KEYS = (
    *(f.name for f in dataclasses.fields(ChoicePlan) if f.init),
    "variants",
    "without_retrieval",
)
"""The keys of ``[choice]``: every field of :class:`ChoicePlan` (declared there once), the
variants and ``without_retrieval``."""


@dataclass(frozen=True, kw_only=True)
class ChoiceSettings:
    """How a run answers its MCQ datasets: the plan and the prompt variants.

    Attributes:
        plan: Normalisation, template, demonstrations and retriever.
        variants: The prompt variants.
        without_retrieval: With a retriever in ``plan``, also answer without it.
    """

    plan: ChoicePlan
    variants: tuple[PromptVariant, ...]
    without_retrieval: bool = False

    @property
    def plans(self) -> tuple[ChoicePlan, ...]:
        """The plans to answer with: ``plan``, then ``plan`` without its retriever if asked."""
        if self.without_retrieval and self.plan.retriever is not None:
            return (self.plan, dataclasses.replace(self.plan, retriever=None))
        return (self.plan,)


def build_retriever(reader: TomlFile, value: Any, where: Sequence[str | int]) -> Retriever:
    """Build a retriever (a key or a table); its corpus and cache_dir are relative to the file."""
    reader.typed(value, (str, dict), where)
    built = reader.build(where, partial(retrievers.build, value))
    moved: dict[str, Any] = {}
    for name in ("corpus", "cache_dir"):
        path = getattr(built, name, None)
        if isinstance(path, str):
            moved[name] = str(reader.path_of(path, where))
    corpus = moved.get("corpus")
    if corpus is not None and not Path(corpus).is_file():
        raise reader.fail(f"The corpus file {corpus} does not exist.", where)
    return dataclasses.replace(built, **moved) if moved else built


def _file_relative(reader: TomlFile, entry: dict, keys: Sequence[str | int]) -> dict:
    """Return a variant table with its ``file`` parameter relative to the config file."""
    params = entry.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("file"), str):
        return entry
    moved = str(reader.path_of(params["file"], [*keys, "params", "file"]))
    return {**entry, "params": {**params, "file": moved}}


def parse_choice(reader: TomlFile, raw: Mapping[str, Any]) -> ChoiceSettings:
    """Build the ``[choice]`` table's plan and variants, naming the key of any mistake."""
    table = dict(reader.table(raw, ["choice"], CHOICE_KEYS))
    entries = reader.typed(table.pop("variants", ["default"]), list, ["choice", "variants"])
    if not entries:
        raise reader.bad_value(["choice", "variants"], "a non-empty array of variants", entries)
    built = []
    for i, entry in enumerate(entries):
        keys: list[str | int] = ["choice", "variants", i]
        reader.typed(entry, (str, dict), keys)
        if isinstance(entry, dict):
            reader.table(entry, keys, ("name", "params"))
            entry = _file_relative(reader, entry, keys)
            make = partial(variants.create_from_spec, entry)
        else:
            make = partial(variants.create_from_key, entry)
        built.append(reader.build(keys, make))
    without = reader.typed(
        table.pop("without_retrieval", False), bool, ["choice", "without_retrieval"]
    )
    if without and "retriever" not in table:
        raise reader.fail(
            "without_retrieval = true needs a retriever to compare with.",
            ["choice", "without_retrieval"],
        )
    if "retriever" in table:
        table["retriever"] = build_retriever(reader, table["retriever"], ["choice", "retriever"])
    for key, value in table.items():
        reader.build(["choice", key], partial(ChoicePlan, **{key: value}))
    plan = reader.build(["choice"], partial(ChoicePlan, **table))
    return ChoiceSettings(plan=plan, variants=tuple(built), without_retrieval=without)
