"""Prompt variants of multiple-choice questions: registered, seeded, identified by their key.

A variant turns the base prompt of each question (:class:`McqPrompt`: the
question, the options' order, the stage's fixed demonstrations, no
instruction) into an equivalent prompt. Its key (``shuffle_options[seed=3]``)
identifies it exactly: everything random is drawn from a generator seeded by
the SHA-256 of the key and the example id, so a question's variant does not
depend on which other questions are in the run, and a rerun draws the same.

A variant that cannot apply to a question (no demonstrations to shuffle, no
other question to draw from, a failed paraphrase) returns :class:`Skipped`
with the reason; the stage records it and goes on.

Built in: ``default`` (the base prompt), ``shuffle_demos`` (Lu et al., 2022),
``shuffle_options`` (Zheng et al., 2023; the gold index follows its option),
``k_shot`` (k demonstrations drawn per question from the same dataset,
never the question itself), ``instruction`` (a wording read from a user
file) and ``paraphrase`` (the question rewritten by any backend, through the
call cache; the paraphrase is stored with each response). Third-party
packages add variants through the ``realitycheck.variants`` entry-point group.

A variant that rewrites the question alone (``rewrites_questions = True``,
implementing :meth:`PromptVariant.rewrite`) also varies the free-form prompts
of the generate stage: ``generate --variant 'paraphrase[backend=...]'``
answers each question's zero-shot prompt with the question rewritten (see
:mod:`realitycheck.generation._rewrites`). The same request goes to the same
backend either way, so ``choose`` and ``generate`` share one cached paraphrase
of a question.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from realitycheck.backends import (
    Backend,
    CallCache,
    Generation,
    GenerationRequest,
    cached_generate,
)
from realitycheck.errors import InvalidInputError
from realitycheck.generation._choice import McqPrompt, demo_of
from realitycheck.generation._prompts import delimit
from realitycheck.params import Interval, NonEmptyStr, param, required
from realitycheck.records import Example
from realitycheck.registry import Component, Registry, nested

__all__ = [
    "Default",
    "Instruction",
    "KShot",
    "NotRewritten",
    "Paraphrase",
    "PromptVariant",
    "RewriteOutcome",
    "Rewritten",
    "ShuffleDemos",
    "ShuffleOptions",
    "Skipped",
    "variant",
    "variants",
]


@dataclass(frozen=True)
class Skipped:
    """Why a variant did not apply to one question."""

    reason: str


Outcome = McqPrompt | Skipped


@dataclass(frozen=True)
class Rewritten:
    """A question rewritten by a variant, with the calls that rewrote it.

    Attributes:
        text: The new question.
        generation: The backend's answer it was read from (``None`` without a call).
    """

    text: str
    generation: Generation | None = None


@dataclass(frozen=True)
class NotRewritten(Skipped):
    """Why a question could not be rewritten, and whether retrying may help.

    Attributes:
        retryable: The call failed for a reason that may pass (a rerun retries it).
        generation: The backend's answer (``None`` without a call).
    """

    retryable: bool = False
    generation: Generation | None = None


RewriteOutcome = Rewritten | NotRewritten


@dataclass(frozen=True, kw_only=True)
class PromptVariant(Component):
    """A way to rewrite a multiple-choice prompt into an equivalent one.

    Subclasses implement :meth:`vary` (one question at a time) or override
    :meth:`apply` (a whole batch, e.g. to call a backend once). One that
    rewrites the question only sets :attr:`rewrites_questions` and implements
    :meth:`rewrite`, which the generate stage uses too.
    """

    rewrites_questions: ClassVar[bool] = False
    """Whether :meth:`rewrite` is implemented (the variant can vary generate's prompts)."""

    def rewrite(
        self, questions: Sequence[str], *, cache: CallCache | None = None
    ) -> list[RewriteOutcome]:
        """Return each question rewritten (a :class:`Rewritten`), or why it could not be.

        Args:
            questions: The questions' texts.
            cache: The shared call cache (for variants that call a backend).
        """
        raise NotImplementedError(f"The {self.name!r} variant does not rewrite questions.")

    def apply(
        self,
        prompts: Sequence[McqPrompt],
        examples: Sequence[Example],
        *,
        pool: Mapping[str, Sequence[Example]],
        cache: CallCache | None = None,
    ) -> list[Outcome]:
        """Return each question's varied prompt, or why the variant skips it.

        Args:
            prompts: The base prompt of each question.
            examples: The questions, in the same order.
            pool: The examples of each dataset, to draw demonstrations from.
            cache: The shared call cache (for variants that call a backend).
        """
        return [
            self.vary(p, e, pool=pool.get(e.dataset, ()), rng=self.rng(e.example_id))
            for p, e in zip(prompts, examples, strict=True)
        ]

    def vary(
        self,
        prompt: McqPrompt,
        example: Example,
        *,
        pool: Sequence[Example],
        rng: np.random.Generator,
    ) -> Outcome:
        """Return one question's varied prompt, or why the variant skips it."""
        raise NotImplementedError

    def rng(self, example_id: str) -> np.random.Generator:
        """Return the generator of one question: seeded by this variant's key and the id."""
        digest = hashlib.sha256(f"{self.key}\n{example_id}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "big"))


variants: Registry[PromptVariant] = Registry("variants", "realitycheck.generation._variants")
variant = variants.register


@variant("default")
@dataclass(frozen=True, kw_only=True)
class Default(PromptVariant):
    """The base prompt, unchanged (the benchmark's default prompt structure)."""

    def vary(
        self, prompt: McqPrompt, example: Example, *, pool: Sequence[Example], rng: Any
    ) -> Outcome:
        """Return ``prompt`` as it is."""
        return prompt


@variant("shuffle_demos")
@dataclass(frozen=True, kw_only=True)
class ShuffleDemos(PromptVariant):
    """The prompt's demonstrations in a random order (Lu et al., 2022).

    Skips a question whose prompt has fewer than two demonstrations.

    Args:
        seed: Seed of the order (one seed, one variant).
    """

    seed: int = param(0, Interval(int, 0))

    def vary(
        self, prompt: McqPrompt, example: Example, *, pool: Sequence[Example], rng: Any
    ) -> Outcome:
        """Return ``prompt`` with its demonstrations permuted."""
        if len(prompt.demos) < 2:
            return Skipped(
                f"no demonstrations to shuffle (the prompt has {len(prompt.demos)}; "
                "give the stage shots >= 2)"
            )
        order = rng.permutation(len(prompt.demos))
        return dataclasses.replace(
            prompt,
            demos=tuple(prompt.demos[i] for i in order),
            demo_ids=tuple(prompt.demo_ids[i] for i in order),
        )


@variant("shuffle_options")
@dataclass(frozen=True, kw_only=True)
class ShuffleOptions(PromptVariant):
    """The options in a random order; the gold index follows its option.

    Only the ``letters`` template shows the order to the model; with the
    others the options are scored independently, so the order changes only
    which option wins an exact tie.

    Args:
        seed: Seed of the order (one seed, one variant).
    """

    seed: int = param(0, Interval(int, 0))

    def vary(
        self, prompt: McqPrompt, example: Example, *, pool: Sequence[Example], rng: Any
    ) -> Outcome:
        """Return ``prompt`` with its options permuted."""
        order = rng.permutation(len(prompt.order))
        return dataclasses.replace(prompt, order=tuple(prompt.order[i] for i in order))


@variant("k_shot")
@dataclass(frozen=True, kw_only=True)
class KShot(PromptVariant):
    """``k`` demonstrations drawn at random per question from the same dataset.

    The question itself is never drawn. They replace the base prompt's
    demonstrations. Skips a question whose dataset holds fewer than ``k``
    other questions.

    Args:
        k: Demonstrations per prompt.
        seed: Seed of the draw (one seed, one variant).
    """

    k: int = param(3, Interval(int, 1))
    seed: int = param(0, Interval(int, 0))

    def vary(
        self, prompt: McqPrompt, example: Example, *, pool: Sequence[Example], rng: Any
    ) -> Outcome:
        """Return ``prompt`` with ``k`` demonstrations drawn from ``pool``."""
        others = [e for e in pool if e.example_id != example.example_id]
        if len(others) < self.k:
            return Skipped(f"only {len(others)} other questions to draw {self.k} from")
        picked = [others[i] for i in rng.choice(len(others), size=self.k, replace=False)]
        return dataclasses.replace(
            prompt,
            demos=tuple(demo_of(e) for e in picked),
            demo_ids=tuple(e.example_id for e in picked),
        )


def _wording(path: str, line: int) -> str:
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(
            f"Cannot read the instruction file: {exc}", path=file, field="file"
        ) from None
    if line > len(lines) or not lines[line - 1].strip():
        raise InvalidInputError(
            f"Line {line} of the instruction file holds no wording "
            f"(the file has {len(lines)} lines; one wording per non-empty line).",
            path=file,
            line=line,
            field="line",
        )
    return lines[line - 1].strip()


@variant("instruction")
@dataclass(frozen=True, kw_only=True)
class Instruction(PromptVariant):
    """An instruction wording, read from a user file, as the prompt's first paragraph.

    The file holds one wording per line; ``line`` picks one. The wording is
    read when the variant is built (a missing file or an empty line is an
    error then) and written into every stored prompt.

    Args:
        file: A UTF-8 text file of wordings, one per line.
        line: The line (1-based) of the wording to use.
    """

    file: str = required(NonEmptyStr())
    line: int = param(1, Interval(int, 1))

    def __post_init__(self) -> None:
        super().__post_init__()
        _wording(self.file, self.line)

    def vary(
        self, prompt: McqPrompt, example: Example, *, pool: Sequence[Example], rng: Any
    ) -> Outcome:
        """Return ``prompt`` with the file's wording as its instruction."""
        return dataclasses.replace(prompt, instruction=_wording(self.file, self.line))


PARAPHRASE_PROMPT = (
    "Rewrite the text between the tags in other words. Keep its meaning and every fact, "
    "name and number in it, and keep its form: a question stays a question and an "
    "unfinished sentence stays unfinished. Reply with the rewritten text alone."
)
"""The request sent to the paraphrasing backend, followed by the delimited text."""


@variant("paraphrase")
@dataclass(frozen=True, kw_only=True)
class Paraphrase(PromptVariant):
    """The question rewritten by a backend (an LLM, or any backend that generates).

    One request per question (:data:`PARAPHRASE_PROMPT` followed by the
    question between ``<question>`` tags), sent through the shared call
    cache, so a rerun pays for none; the paraphrase is stored with every
    response of the variant, so a run can be rebuilt without the backend.
    Sampled at ``temperature`` with ``seed`` (greedy at temperature 0), so
    seeds give different paraphrases. Skips a question whose call failed or
    came back empty.

    Args:
        backend: The backend that paraphrases (nested, e.g. ``openai[model=...]``).
        seed: Seed of the sampled paraphrase (one seed, one variant).
        temperature: Sampling temperature (0 = greedy).
        max_tokens: Most tokens of a paraphrase.
    """

    backend: Backend = nested("backends", default=dataclasses.MISSING, doc="the paraphraser")
    rewrites_questions: ClassVar[bool] = True
    seed: int = param(0, Interval(int, 0))
    temperature: float = param(1.0, Interval(float, 0))
    max_tokens: int = param(256, Interval(int, 1))

    def request(self, question: str) -> GenerationRequest:
        """Return the request that paraphrases ``question``."""
        greedy = self.temperature == 0
        return GenerationRequest(
            prompt=f"{PARAPHRASE_PROMPT}\n\n{delimit('question', question)}\n",
            decoding="greedy" if greedy else "sampling",
            temperature=self.temperature,
            seed=None if greedy else self.seed,
            max_tokens=self.max_tokens,
        )

    def rewrite(
        self, questions: Sequence[str], *, cache: CallCache | None = None
    ) -> list[RewriteOutcome]:
        """Return each question paraphrased (one cached call per question), or why not.

        A failed call is a :class:`NotRewritten` that keeps the call's
        ``retryable``; an empty reply is one that is not retryable (the
        cache would give it back).
        """
        requests = [self.request(q) for q in questions]
        answers = cached_generate(self.backend, requests, cache=cache)
        out: list[RewriteOutcome] = []
        for answer in answers:
            text = answer.texts[0].strip() if answer.texts else ""
            if answer.error or not text:
                out.append(
                    NotRewritten(
                        f"the paraphrase failed: {answer.error or 'empty reply'}",
                        retryable=bool(answer.error) and answer.retryable,
                        generation=answer,
                    )
                )
            else:
                out.append(Rewritten(text, generation=answer))
        return out

    def apply(
        self,
        prompts: Sequence[McqPrompt],
        examples: Sequence[Example],
        *,
        pool: Mapping[str, Sequence[Example]],
        cache: CallCache | None = None,
    ) -> list[Outcome]:
        """Return each prompt with its question paraphrased (one cached call per question)."""
        rewritten = self.rewrite([p.question for p in prompts], cache=cache)
        out: list[Outcome] = []
        for prompt, outcome in zip(prompts, rewritten, strict=True):
            if isinstance(outcome, Rewritten):
                out.append(dataclasses.replace(prompt, question=outcome.text, paraphrased=True))
            else:
                out.append(Skipped(outcome.reason))
        return out
