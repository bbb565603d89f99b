"""``qa_judge``: an LLM grades a QA answer against the references as correct, incorrect or refuse.

The judge of "The Illusion of Progress: Re-evaluating Hallucination Detection
in LLMs" (seed paper 000, §3): an LLM reads
the question, the gold answers and the response, and answers one of three
verdicts; a refusal counts as a hallucination there. The prompt
(``prompts/qa_judge.v1.txt``) is this project's own wording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from realitycheck.labelers._base import labeler
from realitycheck.labelers._judge import (
    INVALID,
    POLICIES,
    Judge,
    Unjudgeable,
    prompt_sha256_param,
    quote,
    substitute,
)
from realitycheck.params import OneOf, param
from realitycheck.records import Example, Response

__all__ = ["QAJudge"]

TEMPLATE = "qa_judge.v1.txt"


@labeler("qa_judge")
@dataclass(frozen=True, kw_only=True)
class QAJudge(Judge):
    """An LLM grades a QA response as correct, incorrect or refuse against the references.

    ``category`` is ``correct``, ``incorrect``, ``refuse`` or ``invalid`` (no
    reply could be parsed). ``incorrect`` is hallucinated and ``correct`` is
    not; a refusal is hallucinated by default, as in the paper, or left out
    (``hallucinated=None``, a note in ``raw``, no error) with
    ``refusal_as="excluded"``. ``score`` in ``[0, 1]`` is the share of the
    replies that count as hallucinated (higher = more likely hallucinated).
    A response without references, or with empty text, gets an error. See
    :class:`~realitycheck.labelers.Judge` for ``raw``, repeats and
    failures, e.g. ``qa_judge[judge=openai[model=gpt-4o-mini]]``.

    Args:
        judge: The backend that grades (required), e.g. ``openai[model=gpt-4o-mini]``.
        invalid_as: What a label none of whose replies could be read becomes:
            ``excluded`` (the default: ``hallucinated=None``, the reason as error)
            or ``hallucinated``; the replies are counted as unreadable either way.
        refusal_as: What a ``refuse`` verdict becomes: ``hallucinated`` or ``excluded``.
        repeats: How many times each response is graded; the majority decides.
        temperature: The judge's sampling temperature (0: greedy).
        seed: Seed of the first repeat; repeat k uses ``seed + k``.
        max_tokens: Most tokens of a reply.
        structured: Ask for a reply that follows a JSON Schema where the backend
            can constrain it (``openai`` in chat mode); ``False`` for servers that cannot.
        prompt_sha256: SHA-256 of the prompt template (set; written in the spec).
    """

    refusal_as: Literal["hallucinated", "excluded"] = param("hallucinated", OneOf(POLICIES))
    prompt_sha256: str = prompt_sha256_param((TEMPLATE,))

    needs: ClassVar[frozenset[str]] = frozenset({"references"})
    verdicts: ClassVar[tuple[str, ...]] = ("incorrect", "refuse", "correct")
    hallucinated_verdicts: ClassVar[frozenset[str]] = frozenset({"incorrect", "refuse"})
    field: ClassVar[str] = "verdict"

    def prompt(self, response: Response, example: Example | None) -> str:
        """Return the grading prompt for ``response``.

        Raises:
            Unjudgeable: If the example has no references or the response is empty.
        """
        if example is None or not example.references:
            raise Unjudgeable("no reference answers to grade against")
        if not response.text.strip():
            raise Unjudgeable("the response is empty")
        return substitute(
            TEMPLATE,
            question=quote(example.question),
            references=quote(example.references),
            response=quote(response.text),
        )

    def outcome(self, verdict: str) -> bool | None:
        """Return whether ``verdict`` means hallucinated (``None``: left out by a policy)."""
        if verdict == "refuse" and self.refusal_as == "excluded":
            return None
        return super().outcome(verdict)

    def note(self, verdict: str) -> str:
        """Return why ``verdict`` was left out, or ``""``."""
        if verdict == "refuse" and self.refusal_as == "excluded":
            return "the judge found a refusal; excluded by refusal_as='excluded'"
        return super().note(verdict) if verdict == INVALID else ""
