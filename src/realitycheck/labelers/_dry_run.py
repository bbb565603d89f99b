"""What a judge would send and cost, worked out without calling anything (``label --dry-run``).

Tokens are estimated, not counted: no tokenizer of the judge's model is at
hand before a call, so a prompt is taken to be ``ceil(characters / 4)``
tokens, the usual rule of thumb for English text under the BPE tokenizers of
current chat models (expect ±25%; more for code and non-Latin scripts). A
reply is taken at its ``max_tokens``, so the cost is an upper bound on the
completion side.

A few-shot judge (``fewshot_judge``, ``optimized_judge``) shows graded
responses of the calibration split, so its plan needs the labels of the
responses (``labels``); ``optimized_judge`` also searches its prompt first:
those calls are counted in the totals and, apart, as ``search_requests``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from realitycheck.labelers._fewshot import ShotJudge
from realitycheck.labelers._judge import Judge, Unjudgeable, cost_at
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["CHARS_PER_TOKEN", "CallPlan", "estimate_tokens", "plan_calls"]

CHARS_PER_TOKEN = 4
"""Characters per token assumed by :func:`estimate_tokens`."""


def estimate_tokens(text: str) -> int:
    """Return the estimated token count of ``text``: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True, kw_only=True)
class CallPlan:
    """The calls a judge would make for some responses, and their estimated size and cost.

    Attributes:
        labeler: The judge's key.
        responses: Responses it would judge.
        unjudgeable: Responses it cannot be asked about (no reference, empty text).
        requests: Calls it would make (``repeats`` per judged response, and
            the prompt search's).
        cached: Of those, calls answered for free: by the call cache, or by an
            identical call of the same run.
        prompt_tokens: Estimated prompt tokens of the calls to pay for.
        completion_tokens: Most completion tokens of those calls (``max_tokens`` each).
        price_per_1k: The backend's prices per 1,000 prompt and completion
            tokens, or ``None`` when it has none.
        cost: At most this much at those prices, or ``None`` without prices.
        prompts: The exact prompts of the first few judged responses.
        search_requests: Of ``requests``, the calls of a prompt search made
            before any response is judged (``optimized_judge``; 0 for others).
    """

    labeler: str
    responses: int
    unjudgeable: int
    requests: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    price_per_1k: tuple[float, float] | None
    cost: float | None
    prompts: tuple[str, ...]
    search_requests: int = 0


def _prompts(
    judge: Judge,
    responses: Sequence[Response],
    examples: Mapping[str, Example],
    labels: Iterable[Label] | None,
) -> tuple[list[str], list[str | None]]:
    """The search prompts and, per response, its prompt (``None``: not asked)."""
    if isinstance(judge, ShotJudge):
        pool = judge.pool(responses, examples, labels or ())
        return judge.planned_prompts(responses, examples, pool)
    prompts: list[str | None] = []
    for response in responses:
        try:
            prompts.append(judge.prompt(response, examples.get(response.example_id)))
        except Unjudgeable:
            prompts.append(None)
    return [], prompts


def plan_calls(
    judge: Judge,
    responses: Sequence[Response],
    examples: Mapping[str, Example],
    *,
    cache: CallCache | None = None,
    show: int = 3,
    labels: Iterable[Label] | None = None,
) -> CallPlan:
    """Work out what ``judge.label(responses, examples, cache=cache)`` would send, calling nothing.

    Args:
        judge: The judge.
        responses: The responses it would judge.
        examples: Their examples, by ``example_id``.
        cache: The call cache to look the requests up in (read only).
        show: How many prompts to keep, from the first judged responses.
        labels: The labels of the responses, for a few-shot judge: those of
            its ``reference`` labeler grade the worked examples it shows,
            drawn from the calibration split of ``responses``.
    """
    from realitycheck.backends import call_identity

    identity = call_identity(judge.judge)
    search, planned = _prompts(judge, responses, examples, labels)
    prompts: list[str] = []
    keys: dict[str, int] = {}  # distinct requests, with the estimated prompt tokens of each
    requests = unjudgeable = search_requests = 0
    for asked in search:
        for request in judge.requests(asked):
            search_requests += 1
            keys[request.cache_key(identity)] = estimate_tokens(asked)
    for prompt in planned:
        if prompt is None:
            unjudgeable += 1
            continue
        if len(prompts) < show:
            prompts.append(prompt)
        tokens = estimate_tokens(prompt)
        for request in judge.requests(prompt):
            requests += 1
            keys[request.cache_key(identity)] = tokens
    if len(prompts) < show:
        prompts.extend(search[: show - len(prompts)])
    requests += search_requests
    hits = set(cache.get_many(keys)) if cache is not None else set()
    to_pay = [tokens for key, tokens in keys.items() if key not in hits]
    prompt_tokens = sum(to_pay)
    completion_tokens = len(to_pay) * judge.max_tokens
    price = getattr(judge.judge, "price_per_1k", None)
    price = (float(price[0]), float(price[1])) if price is not None and any(price) else None
    cost = cost_at(price, prompt_tokens, completion_tokens)
    return CallPlan(
        labeler=judge.key,
        responses=len(responses) - unjudgeable,
        unjudgeable=unjudgeable,
        requests=requests,
        cached=requests - len(to_pay),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        price_per_1k=price,
        cost=cost,
        prompts=tuple(prompts),
        search_requests=search_requests,
    )
