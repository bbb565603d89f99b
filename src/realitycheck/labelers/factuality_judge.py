"""``factuality_judge``: the five-way A–E comparison of a response with a reference.

From the appendix of "Evaluating Evaluation Metrics – The Mirage of
Hallucination Detection" (Kulkarni et al.; seed paper 001), after the
factuality template of the Autoevals library: an LLM compares the facts of a
response with a reference and picks one option.

* **A** — a subset of the reference, consistent with it: not hallucinated.
* **B** — a superset of the reference (it adds facts), consistent with it:
  **hallucinated** (the added facts are unsupported).
* **C** — the same details as the reference: not hallucinated.
* **D** — disagrees with the reference (or with the dialogue history):
  **hallucinated**.
* **E** — differs, but not in a way that matters for factuality: not
  hallucinated.

The paper counts B and D as hallucinated and the others as benign. The
paper's three references are the three values of ``against``:

* ``answers``: the example's ``references`` with its ``question``
  (``prompts/factuality_answers.v1.txt``, the TruthfulQA prompt);
* ``knowledge``: the knowledge passage (``context``) and dialogue history
  (``question``) (``prompts/factuality_knowledge.v1.txt``, the BEGIN prompt);
* ``expert``: an expert's reply (the first of ``references``) read with the
  knowledge passage and the dialogue history
  (``prompts/factuality_expert.v1.txt``, the FaithDial prompt).

``auto`` (the default) picks per example: a dialogue example with a context
and a reference reply is compared with the expert reply, one with a context
and no references (or any example with a context and no references) with
the knowledge, and every other example with its reference answers. The
prompts are this project's own wording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from realitycheck.labelers._base import labeler
from realitycheck.labelers._judge import (
    Judge,
    Unjudgeable,
    prompt_sha256_param,
    quote,
    substitute,
)
from realitycheck.params import OneOf, param, with_default
from realitycheck.records import Example, Response

__all__ = ["FactualityJudge"]

ANSWERS = "factuality_answers.v1.txt"
KNOWLEDGE = "factuality_knowledge.v1.txt"
EXPERT = "factuality_expert.v1.txt"
AGAINST = ("auto", "answers", "knowledge", "expert")


@labeler("factuality_judge")
@dataclass(frozen=True, kw_only=True)
class FactualityJudge(Judge):
    """An LLM picks A–E comparing a response's facts with a reference; B and D are hallucinated.

    ``category`` is the letter (``A``…``E``) or ``invalid`` (no reply could be
    parsed). B (adds facts beyond the reference) and D (disagrees with it) are
    hallucinated; A (a consistent subset), C (the same facts) and E
    (differences that do not matter) are not. ``score`` in ``[0, 1]`` is the
    share of the replies that chose B or D among those that count (higher =
    more likely hallucinated). ``against`` names the reference (see the
    module docstring); a response whose example lacks what that reference
    needs, or with empty text, gets an error. See
    :class:`~realitycheck.labelers.Judge` for ``raw``, repeats and failures.

    Args:
        judge: The backend that compares (required), e.g. ``openai[model=gpt-4o-mini]``.
        against: The reference: ``answers`` (question + reference answers),
            ``knowledge`` (knowledge passage + dialogue history), ``expert``
            (an expert reply with the knowledge and history) or ``auto``
            (chosen per example).
        invalid_as: What a label none of whose replies could be read becomes:
            ``excluded`` (the default: ``hallucinated=None``, the reason as error)
            or ``hallucinated``; the replies are counted as unreadable either way.
        repeats: How many times each response is judged; the majority decides.
        temperature: The judge's sampling temperature (0: greedy).
        seed: Seed of the first repeat; repeat k uses ``seed + k``.
        max_tokens: Most tokens of a reply (the prompt asks for brief reasoning first).
        structured: Ask for a reply that follows a JSON Schema where the backend
            can constrain it (``openai`` in chat mode); ``False`` for servers that cannot.
        prompt_sha256: SHA-256 of the three prompt templates (set; written in the spec).
    """

    against: str = param("auto", OneOf(AGAINST))
    max_tokens: int = with_default(Judge, "max_tokens", 512)
    prompt_sha256: str = prompt_sha256_param((ANSWERS, KNOWLEDGE, EXPERT))

    verdicts: ClassVar[tuple[str, ...]] = ("D", "B", "A", "C", "E")
    hallucinated_verdicts: ClassVar[frozenset[str]] = frozenset({"B", "D"})
    field: ClassVar[str] = "choice"
    reason_field: ClassVar[str] = "reasoning"
    letters: ClassVar[bool] = True

    def reference_of(self, example: Example) -> str:
        """Return which reference ``example`` is compared with (``against`` resolved).

        Raises:
            Unjudgeable: If the example lacks what that reference needs.
        """
        against = self.against
        if against == "auto":
            if example.context and not example.references:
                against = "knowledge"
            elif example.task == "dialogue" and example.context:
                against = "expert"
            else:
                against = "answers"
        needs = {
            "answers": (example.references, "no reference answers to compare with"),
            "knowledge": (example.context, "no knowledge passage to compare with"),
            "expert": (
                example.references and example.context,
                "an expert comparison needs a reference reply and a knowledge passage",
            ),
        }
        present, missing = needs[against]
        if not present:
            raise Unjudgeable(missing)
        return against

    def prompt(self, response: Response, example: Example | None) -> str:
        """Return the comparison prompt for ``response``.

        Raises:
            Unjudgeable: If the example lacks the reference to compare with, or
                the response is empty.
        """
        if example is None or not (example.references or example.context):
            raise Unjudgeable("no reference answers or knowledge passage to compare with")
        against = self.reference_of(example)
        if not response.text.strip():
            raise Unjudgeable("the response is empty")
        if against == "knowledge":
            return substitute(
                KNOWLEDGE,
                knowledge=quote(example.context),
                history=quote(example.question),
                response=quote(response.text),
            )
        if against == "expert":
            return substitute(
                EXPERT,
                knowledge=quote(example.context),
                history=quote(example.question),
                references=quote(example.references[0]),
                response=quote(response.text),
            )
        return substitute(
            ANSWERS,
            question=quote(example.question),
            references=quote(example.references),
            response=quote(response.text),
        )
