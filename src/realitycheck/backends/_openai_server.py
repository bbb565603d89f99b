"""What an OpenAI-compatible server really does, learned from its replies.

Servers that speak the protocol differ in what they honour. ``transformers
serve`` ignores ``logprobs``, ``n`` and ``response_format``; llama.cpp's
``llama-server`` caps ``n`` at its slot count and ignores ``echo``;
``llama-cpp-python`` drops log-probs unless ``top_logprobs`` is sent and
refuses ``json_schema``; OpenAI refuses ``top_k``. :class:`ServerFacts` holds
what this process has learned about one server and model (the ``n`` cap, the
structured-output form that works, a refused ``top_k``), so every later call
of the run is sent in the form that works. :func:`missing_features` says which
asked-for features a reply lacks; :func:`warn_once` logs one warning per
server, model and feature.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from realitycheck.backends._base import GenerationRequest
from realitycheck.backends._openai_parse import Choice

__all__ = [
    "STRUCTURED_FORMS",
    "ServerFacts",
    "facts_for",
    "forget_servers",
    "missing_features",
    "response_format",
    "warn_once",
]

STRUCTURED_FORMS = ("json_schema", "json_object_schema", "json_object", "text")
"""The structured-output forms tried in turn: a JSON Schema; a JSON object with the schema
beside it (``llama-cpp-python``'s server refuses ``json_schema`` but constrains
``json_object`` to a ``schema`` sent with it); any JSON object; plain text."""
logger = logging.getLogger("realitycheck.backends.openai")


@dataclass
class ServerFacts:
    """What this process has learned about one server and model.

    Attributes:
        n_cap: The most sequences one call may ask for (``None``: no cap seen).
        structured: Index in :data:`STRUCTURED_FORMS` of the form to send.
        top_k_refused: The server refused the ``top_k`` field.
        logprobs_refused: The server refused token log-probabilities outright.
        warned: The features a warning was already logged for.
    """

    n_cap: int | None = None
    structured: int = 0
    top_k_refused: bool = False
    logprobs_refused: bool = False
    warned: set[str] = field(default_factory=set)


_FACTS: dict[tuple[str, str], ServerFacts] = {}
_LOCK = threading.Lock()


def facts_for(base_url: str, model: str) -> ServerFacts:
    """Return the facts learned so far about ``model`` on ``base_url`` (one object per pair)."""
    with _LOCK:
        return _FACTS.setdefault((base_url, model), ServerFacts())


def forget_servers() -> None:
    """Forget everything learned about every server (a test starts afresh)."""
    with _LOCK:
        _FACTS.clear()


def warn_once(base_url: str, model: str, feature: str, message: str) -> None:
    """Log ``message`` as a warning, once per server, model and feature in this process."""
    facts = facts_for(base_url, model)
    with _LOCK:
        if feature in facts.warned:
            return
        facts.warned.add(feature)
    logger.warning("%s (model %s): %s", base_url, model, message)


def response_format(schema_text: str, form: str) -> dict[str, Any] | None:
    """Return the ``response_format`` field for ``form`` (``None`` for plain text)."""
    if form == "json_schema":
        schema = json.loads(schema_text)
        return {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": schema, "strict": True},
        }
    if form == "json_object_schema":
        return {"type": "json_object", "schema": json.loads(schema_text)}
    if form == "json_object":
        return {"type": "json_object"}
    return None


def missing_features(
    request: GenerationRequest, choices: Sequence[Choice], *, chat: bool, form: str
) -> tuple[str, ...]:
    """Return the features ``request`` asked for that the reply's ``choices`` lack.

    Args:
        request: What was asked.
        choices: Every sequence returned for it (all calls).
        chat: Chat mode (``json_schema`` is only sent there).
        form: The structured-output form that was sent.
    """
    out: list[str] = []
    if request.logprobs or request.top_logprobs:
        if any(c.token_logprobs is None for c in choices):
            out.append("logprobs")
            if request.top_logprobs:
                out.append("top_logprobs")
        elif request.top_logprobs and any(
            c.token_logprobs and not any(c.top_logprobs or ()) for c in choices
        ):
            out.append("top_logprobs")
    if request.json_schema and chat:
        if form != "json_schema" or any(_ignored_schema(c) for c in choices):
            out.append("json_schema")
    return tuple(out)


def _ignored_schema(choice: Choice) -> bool:
    """Whether a reply is not a JSON object (the server ignored the schema).

    A reply cut off by the length limit cannot be parsed; it followed the
    schema as far as it went when it opens an object.
    """
    text = choice.text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    if choice.finish_reason == "length":
        return not text.startswith("{")
    try:
        return not isinstance(json.loads(text), dict)
    except ValueError:
        return True
