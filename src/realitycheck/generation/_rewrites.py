"""Prompt variants of the generate stage that rewrite the question, such as ``paraphrase[...]``.

A prompt variant of the generate stage (``SamplingPlan.variants``) is a style
(``zero_shot``, ``few_shot@2``: see :mod:`realitycheck.generation._prompts`) or
the key of a registered variant that rewrites questions
(:attr:`~realitycheck.generation.PromptVariant.rewrites_questions`), such as
``paraphrase[backend=hf_seq2seq[model=PATH]]``, the variant ``choose`` uses on
multiple-choice questions (Ganesh et al., seed paper 004). Such a variant
answers each example's zero-shot prompt (first wording) with its question
rewritten: the question of ``qa`` and ``rag_qa``, the request of ``open``, the
partner's last message of ``dialogue``. With a retriever in the plan, the
rewritten question is the query. A response of the variant has

* ``prompt_variant``: the variant's key as the built component writes it
  (defaults left out), so two spellings of one variant are one variant;
* the id ``<example_id>/<name>-<hash>/<generation>``, ``hash`` the first 8 hex
  digits of the SHA-256 of that key (keys can be long and hold paths);
* ``meta["paraphrase"]``: the rewritten question, as ``choose`` stores it, so
  the prompt can be rebuilt without the rewriting backend.

The rewriting calls go through the shared call cache, so a rerun pays for
none. A call that failed is a row of ``generation_errors`` like a failed
answer (retried by the next run when its failure may pass); a dialogue that
has no message yet (the model opens it) has nothing to rewrite and is skipped,
counted in the report and the manifest.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from realitycheck.backends import CallCache, Generation
from realitycheck.errors import InvalidInputError, UnknownComponentError
from realitycheck.generation._prompts import STYLES, VARIANT, parse_variant
from realitycheck.generation._variants import NotRewritten, PromptVariant, Rewritten, variants
from realitycheck.params import Constraint
from realitycheck.records import Example
from realitycheck.registry import parse_key

__all__ = [
    "BASE_STYLE",
    "PLAN_VARIANT",
    "REWRITE_TASKS",
    "Rewrites",
    "check_rewritable",
    "rewrite_examples",
    "rewriter",
    "variant_part",
]

REWRITE_TASKS = ("qa", "open", "rag_qa", "dialogue")
"""Tasks whose prompts have a question a variant can rewrite."""
BASE_STYLE = "zero_shot"
"""The prompt a rewriting variant answers, with the question rewritten."""


@functools.lru_cache(maxsize=64)
def _built(key: str) -> PromptVariant:
    component = variants.create_from_key(key)
    if not component.rewrites_questions:
        rewriting = [n for n in variants.names() if variants.get(n).rewrites_questions]
        raise InvalidInputError(
            f"The prompt variant {component.name!r} varies multiple-choice prompts only "
            f"(realitycheck choose). The generate stage takes a style ({', '.join(STYLES)}, "
            f"optionally with @2 or @3) or a variant that rewrites the question: "
            f"{', '.join(rewriting)}."
        )
    return component


def rewriter(variant: str) -> PromptVariant | None:
    """Return the rewriting variant a plan variant names, or ``None`` for a style.

    Raises:
        InvalidInputError: Neither a style nor a variant key, bad parameters,
            or a variant that cannot rewrite questions.
        UnknownComponentError: An unknown nested component (with close matches).
    """
    if VARIANT.accepts(variant):
        return None
    name = variant.partition("[")[0].strip()
    if name not in variants:
        parse_variant(variant)  # raises the style's message ("one_shot", "zero_shot@9")
    return _built(variant)


class _PlanVariant(Constraint):
    """A prompt variant of the generate stage: a style or a variant that rewrites questions."""

    def accepts(self, value: object) -> bool:
        """Return whether ``value`` is a style, or the key of a rewriting variant."""
        if not isinstance(value, str):
            return False
        try:
            rewriter(value)
        except (InvalidInputError, UnknownComponentError):
            return False
        return True

    def describe(self) -> str:
        """Return the styles and rewriting variants accepted."""
        return (
            f"{VARIANT.describe()}, or the key of a variant that rewrites the question "
            "(e.g. paraphrase[backend=...])"
        )

    def hint(self, value: Any) -> str:
        """Return why a variant key was refused (an unknown name, a bad parameter)."""
        if not isinstance(value, str) or ("[" not in value and value not in variants):
            return ""
        try:
            rewriter(value)
        except (InvalidInputError, UnknownComponentError) as exc:
            return str(exc)
        return ""


PLAN_VARIANT = _PlanVariant()
"""What each of ``SamplingPlan.variants`` must be (a :mod:`realitycheck.params` constraint)."""


def variant_part(key: str) -> str:
    """Return the variant's part of a response id: a style as is, else ``<name>-<hash>``."""
    if VARIANT.accepts(key):
        return key
    name = parse_key(key)[0]
    return f"{name}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:8]}"


@dataclass
class Rewrites:
    """What one rewriting variant made of the examples it was asked to vary.

    Attributes:
        examples: Each rewritten example (by id): a copy with the new question.
        failed: Each example whose rewrite failed (by id), with why.
        skipped: The ids of examples without a question to rewrite.
        generations: The rewriting backend's answers (for the usage).
    """

    examples: dict[str, Example] = field(default_factory=dict)
    failed: dict[str, NotRewritten] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    generations: list[Generation] = field(default_factory=list)


def check_rewritable(variant: PromptVariant, examples: Sequence[Example]) -> None:
    """Fail before any call on an example whose task has no question to rewrite.

    Raises:
        InvalidInputError: Naming the example, its task and the tasks that can be rewritten.
    """
    for example in examples:
        if example.task not in REWRITE_TASKS:
            raise InvalidInputError(
                f"The prompt variant {variant.key!r} rewrites the question, which only "
                f"{', '.join(REWRITE_TASKS)} prompts have; example {example.example_id!r} "
                f"has task {example.task!r}."
            )


def rewrite_examples(
    variant: PromptVariant, examples: Sequence[Example], *, cache: CallCache | None
) -> Rewrites:
    """Rewrite every example's question with ``variant`` (one batch of cached calls)."""
    out = Rewrites()
    asked = [e for e in examples if e.question.strip()]
    out.skipped = [e.example_id for e in examples if not e.question.strip()]
    if not asked:
        return out
    for example, outcome in zip(
        asked, variant.rewrite([e.question for e in asked], cache=cache), strict=True
    ):
        if outcome.generation is not None:
            out.generations.append(outcome.generation)
        if isinstance(outcome, Rewritten):
            out.examples[example.example_id] = dataclasses.replace(example, question=outcome.text)
        else:
            out.failed[example.example_id] = outcome
    return out
