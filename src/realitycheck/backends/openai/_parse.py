"""Reading OpenAI-style response bodies (chat and completions) into generations.

The body is parsed as plain JSON rather than through the SDK's models, so
servers that add fields or omit optional ones (vLLM, Ollama, llama.cpp) read
the same way. A body without the expected shape raises
:class:`~realitycheck.errors.RetryableBackendError` (a truncated or garbled
answer is worth asking again).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from realitycheck.backends import Generation
from realitycheck.errors import RetryableBackendError

__all__ = ["Choice", "assemble", "parse_choices"]


@dataclass(frozen=True)
class Choice:
    """One returned sequence; the log-prob fields are ``None`` when the server sent none."""

    text: str
    finish_reason: str
    tokens: tuple[str, ...] | None = None
    token_logprobs: tuple[float, ...] | None = None
    top_logprobs: tuple[Mapping[str, float], ...] | None = None


def parse_choices(data: Mapping[str, Any], *, chat: bool) -> tuple[list[Choice], dict[str, int]]:
    """Return the choices (in ``index`` order) and the token usage of one response body.

    Raises:
        RetryableBackendError: The body is not a chat / completions response.
    """
    raw = data.get("choices")
    if not isinstance(raw, list):
        error = data.get("error")
        said = f" It says: {str(error)[:300]}" if error else ""
        raise RetryableBackendError(f"The response has no 'choices' list.{said}")
    try:
        ordered = sorted(raw, key=lambda c: int(c.get("index", 0)))
        choices = [_chat_choice(c) if chat else _completion_choice(c) for c in ordered]
        usage = _usage(data.get("usage"))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise RetryableBackendError(
            f"The response does not have the shape of a {'chat ' if chat else ''}completion "
            f"({type(exc).__name__}: {exc})."
        ) from None
    return choices, usage


def _chat_choice(c: Mapping[str, Any]) -> Choice:
    message = c.get("message") or {}
    text = message.get("content") or ""
    logprobs = c.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    finish = str(c.get("finish_reason") or "")
    if not isinstance(content, list):
        return Choice(str(text), finish)
    tokens = tuple(str(t["token"]) for t in content)
    values = tuple(_float(t["logprob"]) for t in content)
    tops = tuple(
        {str(a["token"]): _float(a["logprob"]) for a in (t.get("top_logprobs") or [])}
        for t in content
    )
    return Choice(str(text), finish, tokens, values, tops)


def _completion_choice(c: Mapping[str, Any]) -> Choice:
    text = str(c.get("text") or "")
    finish = str(c.get("finish_reason") or "")
    logprobs = c.get("logprobs")
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("tokens"), list):
        return Choice(text, finish)
    tokens = tuple(str(t) for t in logprobs["tokens"])
    values = tuple(_float(v) for v in logprobs.get("token_logprobs") or [])
    if len(values) != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {len(values)} token_logprobs")
    raw_tops = logprobs.get("top_logprobs") or [None] * len(tokens)
    tops = tuple({str(k): _float(v) for k, v in (top or {}).items()} for top in raw_tops)
    return Choice(text, finish, tokens, values, tops)


def _float(value: Any) -> float:
    """A log-prob; ``None`` (no value for that token) becomes NaN, never 0."""
    return math.nan if value is None else float(value)


def _usage(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    out = {}
    for name in ("prompt_tokens", "completion_tokens"):
        value = raw.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    if out:
        out["total_tokens"] = sum(out.values())
    return out


def assemble(
    choices: Sequence[Choice], *, usage: Mapping[str, int], logprobs: bool, top_logprobs: bool
) -> Generation:
    """Build the generation from the choices of one or more calls.

    Token fields are filled only when asked for and present for every sequence,
    so ``tokens[i]`` always belongs to ``texts[i]``.
    """
    has_logprobs = logprobs and all(c.token_logprobs is not None for c in choices)
    has_tops = has_logprobs and top_logprobs and all(c.top_logprobs is not None for c in choices)
    return Generation(
        texts=tuple(c.text for c in choices),
        finish_reasons=tuple(c.finish_reason for c in choices),
        tokens=tuple(c.tokens or () for c in choices) if has_logprobs else (),
        token_logprobs=tuple(c.token_logprobs or () for c in choices) if has_logprobs else (),
        top_logprobs=tuple(c.top_logprobs or () for c in choices) if has_tops else (),
        usage=dict(usage),
    )
