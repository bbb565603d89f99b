"""Choice by likelihood: the plan, an MCQ prompt's text, its options' scores and the choice.

A multiple-choice question is answered without generating: each option is
scored as a continuation of the prompt, ``LL(o) = sum_t log p(o_t | prompt,
o_<t)``, and the option with the highest normalised score is chosen
(Muhlgay et al., 2024, FACTOR; the paper behind the prompt-multiplicity study
uses the same length-normalised choice). The normalisation is stated with
every choice:

* ``token`` (default): ``LL(o) / T(o)``, the mean log-probability per token of
  the continuation (``T`` tokens as the backend tokenised them);
* ``char``: ``LL(o) / C(o)``, per character of the option text (without the
  space that joins it to the prompt), as lm-evaluation-harness's ``acc_norm``;
* ``none``: the unnormalised sum ``LL(o)``.

Ties go to the lowest option index. TruthfulQA's MC2 score is the normalised
probability mass of the true options, ``sum_{o true} e^LL(o) / sum_o e^LL(o)``
on the unnormalised sums (Lin et al., 2022), computed stably in log space.

Templates (how a prompt's parts become the text the options continue):

* ``plain``: demonstrations as ``question answer`` paragraphs, then the
  question; each option follows after a space (none when the question ends
  in white space). Suits FACTOR, whose prompt is a prefix.
* ``qa``: ``Q: question`` / ``A: answer`` paragraphs, then ``Q: question`` and
  ``A:``; each option follows after a space. Suits TruthfulQA.
* ``letters``: the options are listed in the prompt as ``A. option`` lines in
  the prompt's order and ``Answer:`` follows; the continuations are the
  letters `` A``, `` B``… A chosen letter maps back to the option it labelled.

An instruction, when a prompt has one, is the first paragraph in every template.
Retrieved passages, when a prompt has them, come right before the question
(after the demonstrations, which get none), in the retrieval block of
:func:`realitycheck.retrievers.prepend_passages` (Ram et al., 2023).

A :class:`ChoicePlan` names the normalisation, the template, the fixed
demonstrations of the :func:`base_prompt` and the retriever; the choose stage
(:func:`realitycheck.pipeline.choose`) asks a backend under it. This module
loads no array library, so the command line builds ``choose``'s options from
the plan's fields.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from realitycheck.errors import InvalidInputError
from realitycheck.params import Interval, OneOf, param
from realitycheck.records import Example
from realitycheck.registry import Component, nested
from realitycheck.retrievers import Passage, Retriever, prepend_passages

__all__ = [
    "NORMALISATIONS",
    "TEMPLATES",
    "ChoicePlan",
    "McqPrompt",
    "OptionScore",
    "base_prompt",
    "choose_option",
    "demo_of",
    "render",
    "true_mass",
]

NORMALISATIONS = ("token", "char", "none")
TEMPLATES = ("plain", "qa", "letters")


@dataclass(frozen=True, kw_only=True)
class ChoicePlan(Component):
    """How to answer multiple-choice questions by likelihood.

    Args:
        normalisation: ``token`` (log-likelihood per token, the default),
            ``char`` (per character of the option, as lm-eval's ``acc_norm``)
            or ``none`` (the sum).
        template: ``plain``, ``qa`` or ``letters`` (see
            :func:`realitycheck.generation.render`).
        shots: Fixed demonstrations of the base prompt: the first ``shots``
            questions of the same dataset, other than the question itself.
        retriever: Passages shown before each question (in-context retrieval
            augmentation, e.g. ``bm25[corpus=passages.jsonl,k=3]``); the
            example's question is the query. ``None`` = no retrieval.
        top_logprobs: Alternatives per token of the chosen option to keep in
            its features (0 = none), where the backend reads fixed answers.
    """

    normalisation: str = param("token", OneOf(NORMALISATIONS))
    template: str = param("plain", OneOf(TEMPLATES))
    shots: int = param(0, Interval(int, 0))
    retriever: Retriever | None = nested("retrievers")
    top_logprobs: int = param(0, Interval(int, 0))

    name: ClassVar[str] = "choice"
    family: ClassVar[str] = "plans"


@dataclass(frozen=True, kw_only=True)
class McqPrompt:
    """One question as a prompt variant shows it.

    Attributes:
        question: The question (or prefix) text, paraphrased where a variant did so.
        order: The options' original indices in the order the prompt shows them.
        instruction: An instruction paragraph ("" = none).
        demos: Demonstrations, ``(question, answer)`` texts, in order.
        demo_ids: The example ids of the demonstrations.
        paraphrased: Whether ``question`` is a paraphrase of the example's.
        passages: Retrieved passages, best first, shown before the question.
    """

    question: str
    order: tuple[int, ...]
    instruction: str = ""
    demos: tuple[tuple[str, str], ...] = ()
    demo_ids: tuple[str, ...] = ()
    paraphrased: bool = False
    passages: tuple[Passage, ...] = ()


@dataclass(frozen=True, kw_only=True)
class OptionScore:
    """The likelihood of one option (by its original index) as a continuation.

    Attributes:
        index: The option's index in the example's ``choices``.
        loglik: ``sum_t log p(o_t | prompt, o_<t)`` (natural log, <= 0).
        n_tokens: Continuation tokens scored.
        n_chars: Characters of the option text.
    """

    index: int
    loglik: float
    n_tokens: int
    n_chars: int

    @property
    def per_token(self) -> float:
        """``loglik / n_tokens`` (NaN when no token was scored)."""
        return self.loglik / self.n_tokens if self.n_tokens else math.nan

    @property
    def per_char(self) -> float:
        """``loglik / n_chars``."""
        return self.loglik / self.n_chars if self.n_chars else math.nan

    def value(self, normalisation: str) -> float:
        """Return the score the choice compares under ``normalisation``."""
        if normalisation == "token":
            return self.per_token
        if normalisation == "char":
            return self.per_char
        return self.loglik

    def as_dict(self) -> dict[str, float | int]:
        """Return every figure of the option, for a response's ``meta``."""
        return {
            "index": self.index,
            "sum": self.loglik,
            "per_token": self.per_token,
            "per_char": self.per_char,
            "n_tokens": self.n_tokens,
            "n_chars": self.n_chars,
        }


def demo_of(example: Example) -> tuple[str, str]:
    """Return a question as a demonstration: its question and its first correct option."""
    return example.question, example.references[0] if example.references else ""


def base_prompt(
    example: Example,
    pool: Sequence[Example],
    shots: int,
    passages: Sequence[Passage] = (),
) -> McqPrompt:
    """Return the base prompt: options in order, ``shots`` demonstrations, ``passages``.

    The demonstrations are the first ``shots`` questions of ``pool`` other
    than ``example``; a prompt variant varies this prompt.
    """
    demos = [e for e in pool if e.example_id != example.example_id][:shots]
    return McqPrompt(
        question=example.question,
        order=tuple(range(len(example.choices))),
        demos=tuple(demo_of(e) for e in demos),
        demo_ids=tuple(e.example_id for e in demos),
        passages=tuple(passages),
    )


def choose_option(scores: Sequence[OptionScore], normalisation: str) -> int:
    """Return the original index of the best option (ties: the lowest index; NaN never wins).

    Raises:
        InvalidInputError: If ``normalisation`` is unknown or no option has a finite score.
    """
    if normalisation not in NORMALISATIONS:
        raise InvalidInputError(
            f"The normalisation must be one of {NORMALISATIONS}. Got {normalisation!r} instead."
        )
    finite = [s for s in scores if not math.isnan(s.value(normalisation))]
    if not finite:
        raise InvalidInputError("No option has a score to compare.")
    best = max(finite, key=lambda s: (s.value(normalisation), -s.index))
    return best.index


def true_mass(logliks: Sequence[float], gold: Sequence[int]) -> float:
    """Return ``sum_{i in gold} e^l_i / sum_i e^l_i`` (TruthfulQA MC2), stably."""
    top = max(logliks)
    weights = [math.exp(v - top) for v in logliks]
    return math.fsum(weights[i] for i in set(gold)) / math.fsum(weights)


def _letter(position: int) -> str:
    return string.ascii_uppercase[position]


def render(prompt: McqPrompt, choices: Sequence[str], template: str) -> tuple[str, list[str]]:
    """Return the context text and the continuations, in the prompt's option order.

    Raises:
        InvalidInputError: If ``template`` is unknown, or ``letters`` meets more than 26 options.
    """
    if template not in TEMPLATES:
        raise InvalidInputError(
            f"The template must be one of {TEMPLATES}. Got {template!r} instead."
        )
    parts = [prompt.instruction] if prompt.instruction else []
    shown = [choices[i] for i in prompt.order]
    if template == "qa":
        parts += [f"Q: {q}\nA: {a}" for q, a in prompt.demos]
        parts.append(prepend_passages(f"Q: {prompt.question}\nA:", prompt.passages))
        return "\n\n".join(parts), [" " + option for option in shown]
    if template == "letters":
        if len(shown) > len(string.ascii_uppercase):
            raise InvalidInputError(
                f"The letters template labels at most 26 options. Got {len(shown)}."
            )
        parts += [f"{q}\nAnswer: {a}" for q, a in prompt.demos]
        listed = "\n".join(f"{_letter(k)}. {option}" for k, option in enumerate(shown))
        question = f"{prompt.question}\n{listed}\nAnswer:"
        parts.append(prepend_passages(question, prompt.passages))
        return "\n\n".join(parts), [f" {_letter(k)}" for k in range(len(shown))]
    parts += [f"{q} {a}" for q, a in prompt.demos]
    parts.append(prepend_passages(prompt.question, prompt.passages))
    join = "" if prompt.question[-1:].isspace() else " "
    return "\n\n".join(parts), [join + option for option in shown]
