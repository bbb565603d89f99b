"""The claim split: its prompt, its one request, and the reading of its reply."""

from __future__ import annotations

import functools
import json
import re
import string
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from realitycheck.backends import Backend, Generation, GenerationRequest

__all__ = [
    "OTHER_KIND",
    "SPLIT_MAX_TOKENS",
    "SPLIT_TEMPLATE",
    "TASK_KINDS",
    "Split",
    "json_values",
    "parse_claims",
    "read_split",
    "split_prompt",
    "split_request",
    "split_schema",
    "split_template",
    "task_kind",
]

SPLIT_TEMPLATE = "claim_split.v1.txt"
"""The name of the split prompt (``realitycheck/claims/prompts/``)."""
SPLIT_MAX_TOKENS = 1024
"""Most tokens of a split reply unless told otherwise (a long response has many claims)."""

TASK_KINDS = {
    "rag_qa": "an answer to the request, written from the passages given as the source",
    "summary": "a summary of the document given as the source",
    "data2text": "a description written from the structured data given as the source",
    "dialogue": "a reply in a conversation, written from the knowledge given as the source",
}
"""This project's fixed description of a grounded task's response, by ``Example.task``."""
OTHER_KIND = "a text written from the material given as the source"
"""The description of the response of any other task."""

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


@functools.cache
def split_template() -> str:
    """Return the text of the split prompt template (placeholders ``$kind``, ``$response``)."""
    path = resources.files("realitycheck.claims").joinpath("prompts", SPLIT_TEMPLATE)
    return path.read_text(encoding="utf-8")


def task_kind(task: str) -> str:
    """Return the description of a response to ``task`` the prompts use (not user text)."""
    return TASK_KINDS.get(task, OTHER_KIND)


def split_prompt(task: str, text: str) -> str:
    """Return the prompt that asks for the claims of ``text``, a response to ``task``.

    The response is inserted as a JSON string between data markers, so it
    reads as quoted material and cannot close the quote or pose as an
    instruction.
    """
    response = json.dumps(text, ensure_ascii=False)
    return string.Template(split_template()).substitute(kind=task_kind(task), response=response)


def split_schema() -> dict[str, Any]:
    """Return the JSON Schema of a split reply: ``{"claims": [str, ...]}``."""
    return {
        "type": "object",
        "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
        "required": ["claims"],
        "additionalProperties": False,
    }


def split_request(
    backend: Backend,
    prompt: str,
    *,
    structured: bool = True,
    temperature: float = 0.0,
    seed: int = 0,
    max_tokens: int = SPLIT_MAX_TOKENS,
) -> GenerationRequest:
    """Return the one request that asks ``backend`` for the claims of a split ``prompt``.

    Chat messages where the backend takes them (an ``openai`` backend in
    ``completions`` mode takes a prompt only), else a raw prompt; with
    ``structured`` and a backend that can constrain a reply, the JSON Schema
    of :func:`split_schema`; greedy at temperature 0, else sampled. The
    defaults are ``claim_judge``'s, so a detector that splits with them asks
    what the labeler asks: the same call-cache key, one call for both.
    """
    from realitycheck.backends import GenerationRequest

    chat = "chat" in backend.capabilities and getattr(backend, "mode", "chat") != "completions"
    text: dict[str, Any] = (
        {"messages": ({"role": "user", "content": prompt},)} if chat else {"prompt": prompt}
    )
    if structured and chat and "json_schema" in backend.capabilities:
        text["json_schema"] = json.dumps(split_schema(), sort_keys=True)
    return GenerationRequest(
        **text,
        decoding="sampling" if temperature > 0 else "greedy",
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
    )


def json_values(text: str) -> list[Any]:
    """Return every JSON list or object in ``text`` (whole, in code fences, or inside prose)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    for chunk in [text, *_FENCE.findall(text)]:
        position = 0
        while True:
            starts = [i for i in (chunk.find("[", position), chunk.find("{", position)) if i >= 0]
            if not starts:
                break
            start = min(starts)
            try:
                value, end = decoder.raw_decode(chunk, start)
            except json.JSONDecodeError:
                position = start + 1
                continue
            if isinstance(value, list | dict):
                found.append(value)
            position = end
    return found


def parse_claims(text: str) -> list[str] | None:
    """Return the claims a split reply lists, or ``None`` when it gives no list.

    Accepted: a JSON object with a ``claims`` list of strings, or a bare JSON
    list of strings, alone, in a code fence or inside prose (the last one
    found wins). Blank claims are dropped; an empty list is a valid answer
    (no claims). Anything else, a truncated list included, is ``None``.
    """
    for value in reversed(json_values(text)):
        items = value.get("claims") if isinstance(value, dict) else value
        if isinstance(items, list) and all(isinstance(item, str) for item in items):
            return [item.strip() for item in items if item.strip()]
    return None


@dataclass(frozen=True)
class Split:
    """One split reply as read.

    Attributes:
        claims: The claims, in order (empty: the response makes no factual
            claim), or ``None`` when the reply gives no list.
        reason: Why there is no list (``truncated``: the length limit cut the
            reply; ``no claim list``), or ``""``.
        reply: The raw reply.
    """

    claims: tuple[str, ...] | None
    reason: str
    reply: str


def read_split(generation: Generation) -> Split:
    """Return the claims of a split answer (:func:`parse_claims` of its first reply).

    ``generation`` must be an answer, not a failed call (``error`` unset).
    """
    reply = generation.texts[0] if generation.texts else ""
    claims = parse_claims(reply)
    if claims is not None:
        return Split(tuple(claims), "", reply)
    cut = bool(generation.finish_reasons) and generation.finish_reasons[0] == "length"
    return Split(None, "truncated" if cut else "no claim list", reply)
