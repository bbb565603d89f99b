"""``faithfulness_judge``: an LLM decides whether a whole response is grounded in its source.

The summary-wise judges of "Benchmarking LLM Faithfulness in RAG with
Evolving Leaderboards" (seed paper 003, §6.2): an LLM reads the source (the
retrieved passages of a RAG answer, the article of a summary, the structured
record of a data-to-text description) and the response, and says whether
every statement of the response is backed by the source. Two styles, each
with its own prompt in this project's own words:

* ``facts`` — in the style of FACTS Grounding (Jacovi et al., 2025): check
  the response statement by statement and answer with one JSON object
  (``prompts/faithfulness_facts.v1.txt``); where the backend can constrain
  a reply to a JSON Schema, it is asked to.
* ``cot`` — in the chain-of-thought style of Luo et al. (2023): reason step
  by step in prose, then give the verdict alone on the last line
  (``prompts/faithfulness_cot.v1.txt``); no JSON Schema is sent, since one
  would forbid the reasoning.

Either reply is read by :func:`realitycheck.labelers.parse_verdict` (its
conclusion: the JSON field, a ``Verdict: …`` line or a concluding sentence,
never a verdict word in the reasoning); a reply that gives no verdict is
counted as unreadable, and a label with no readable reply is ``invalid``
and follows ``invalid_as``. The claim-wise judge is ``claim_judge``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from realitycheck.claims import OTHER_KIND, TASK_KINDS
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

if TYPE_CHECKING:
    from realitycheck.backends import GenerationRequest

__all__ = ["FaithfulnessJudge", "source_fields"]

TEMPLATES = {"facts": "faithfulness_facts.v1.txt", "cot": "faithfulness_cot.v1.txt"}
STYLES = tuple(TEMPLATES)

_KINDS = TASK_KINDS  # one wording of each task for the judges and the claim split
_OTHER_KIND = OTHER_KIND


def source_fields(response: Response, example: Example | None) -> dict[str, str]:
    """Return the prompt fields every grounding judge shares: ``kind``, ``request``, ``source``.

    ``kind`` is this project's fixed description of the task (not user text);
    ``request`` (the question or instruction, possibly empty) and ``source``
    (the example's ``context``) are quoted as JSON strings.

    Raises:
        Unjudgeable: If the example has no context or the response is empty.
    """
    if example is None or not example.context.strip():
        raise Unjudgeable("no source (context) to check the response against")
    if not response.text.strip():
        raise Unjudgeable("the response is empty")
    return {
        "kind": _KINDS.get(example.task, _OTHER_KIND),
        "request": quote(example.question),
        "source": quote(example.context),
    }


@labeler("faithfulness_judge")
@dataclass(frozen=True, kw_only=True)
class FaithfulnessJudge(Judge):
    """An LLM says whether a whole response is supported by its source (summary-wise).

    ``category`` is ``supported``, ``unsupported`` (some statement is
    contradicted by the source or absent from it: hallucinated) or
    ``invalid`` (no reply could be parsed; see ``invalid_as``). ``score``
    in ``[0, 1]`` is the share of the replies that count as hallucinated
    (higher = more likely hallucinated). The source is the example's
    ``context``, with its ``question`` as the request (RAG QA) or none
    (summaries, data-to-text); a response without a context, or with empty
    text, gets an error. See :class:`~realitycheck.labelers.Judge` for
    ``raw``, repeats and failures, e.g.
    ``faithfulness_judge[judge=openai[model=gpt-4o],style=cot]``.

    Args:
        judge: The backend that checks (required), e.g. ``openai[model=gpt-4o-mini]``.
        style: ``facts`` (a JSON verdict after a statement-by-statement check)
            or ``cot`` (step-by-step reasoning, the verdict on the last line).
        invalid_as: What a label none of whose replies could be read becomes:
            ``excluded`` (the default: ``hallucinated=None``, the reason as error)
            or ``hallucinated``; the replies are counted as unreadable either way.
        repeats: How many times each response is judged; the majority decides.
        temperature: The judge's sampling temperature (0: greedy).
        seed: Seed of the first repeat; repeat k uses ``seed + k``.
        max_tokens: Most tokens of a reply (room for the reasoning of ``cot``).
        structured: With ``facts``, ask for a reply that follows a JSON Schema
            where the backend can constrain it; ``cot`` never does.
        prompt_sha256: SHA-256 of the two prompt templates (set; written in the spec).
    """

    style: Literal["facts", "cot"] = param("facts", OneOf(STYLES))
    max_tokens: int = with_default(Judge, "max_tokens", 1024)
    prompt_sha256: str = prompt_sha256_param(tuple(TEMPLATES.values()))

    needs: ClassVar[frozenset[str]] = frozenset({"context"})
    verdicts: ClassVar[tuple[str, ...]] = ("unsupported", "supported")
    hallucinated_verdicts: ClassVar[frozenset[str]] = frozenset({"unsupported"})
    field: ClassVar[str] = "verdict"

    def prompt(self, response: Response, example: Example | None) -> str:
        """Return the prompt of ``style`` for ``response``.

        Raises:
            Unjudgeable: If the example has no context or the response is empty.
        """
        fields = source_fields(response, example)
        return substitute(TEMPLATES[self.style], response=quote(response.text), **fields)

    def requests(self, prompt: str) -> list[GenerationRequest]:
        """Return the requests that ask ``prompt``; ``cot`` sends no JSON Schema."""
        out = super().requests(prompt)
        if self.style == "cot":
            out = [dataclasses.replace(request, json_schema="") for request in out]
        return out
