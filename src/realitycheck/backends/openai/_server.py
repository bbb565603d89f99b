"""What an OpenAI-compatible server really does, learned from its replies.

Servers that speak the protocol differ in what they honour. ``transformers
serve`` ignores ``logprobs``, ``n`` and ``response_format``; llama.cpp's
``llama-server`` caps ``n`` at its slot count and ignores ``echo``;
``llama-cpp-python`` drops log-probs unless ``top_logprobs`` is sent and
refuses ``json_schema``; OpenAI refuses ``top_k``. :class:`ServerFacts` holds
what this process has learned about one server and model (the ``n`` cap, the
structured-output form that works, a refused ``top_k``, a schema ignored), so
every later call of the run is sent in the form that works.
:func:`missing_features` says which asked-for features a reply lacks;
:func:`warn_once` logs one warning per server, model and feature, with the
server's text shown with its control characters escaped.

A reply to a request with a JSON Schema is checked against the schema
whatever form was sent (:func:`~realitycheck.backends.reply_follows`): a
server that follows the schema sent beside ``json_object`` is not said to
ignore it, and only a reply that did not follow it is named ``json_schema``
in ``Generation.unsupported``. Unlike a missing log-prob, that does not keep
the answer out of the call cache: the reply is still read (a judge reads its
conclusion and records ``schema_followed=false``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from realitycheck.backends import GenerationRequest, parsed_schema, reply_follows, server_name
from realitycheck.backends.openai._parse import Choice
from realitycheck.text import escape_controls

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
        top_k_refusal: What the server said when it refused the ``top_k`` field
            (``""``: not refused).
        logprobs_refused: The server refused token log-probabilities outright.
        schema_ignored: A reply did not follow the JSON Schema sent.
        warned: The features a warning was already logged for.
    """

    n_cap: int | None = None
    structured: int = 0
    top_k_refusal: str = ""
    logprobs_refused: bool = False
    schema_ignored: bool = False
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
    """Log ``message`` as a warning, once per server, model and feature in this process.

    The warning names the server (:func:`~realitycheck.backends.server_name`);
    the server's URL, the model and ``message`` (which may quote the server's
    error) are shown with control, escape and bidi characters as ``[U+XXXX]``.
    """
    facts = facts_for(base_url, model)
    with _LOCK:
        if feature in facts.warned:
            return
        facts.warned.add(feature)
    logger.warning("%s: %s", server_name(base_url, model), escape_controls(message))


def response_format(schema_text: str, form: str) -> dict[str, Any] | None:
    """Return the ``response_format`` field for ``form`` (``None`` for plain text)."""
    if form == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": parsed_schema(schema_text), "strict": True},
        }
    if form == "json_object_schema":
        return {"type": "json_object", "schema": parsed_schema(schema_text)}
    if form == "json_object":
        return {"type": "json_object"}
    return None


def missing_features(
    request: GenerationRequest, choices: Sequence[Choice], *, chat: bool
) -> tuple[str, ...]:
    """Return the features ``request`` asked for that the reply's ``choices`` lack.

    ``"json_schema"`` is named when a reply did not follow the request's JSON
    Schema, whichever structured-output form was sent (chat mode only: the
    schema is not sent to ``/completions``).

    Args:
        request: What was asked.
        choices: Every sequence returned for it (all calls).
        chat: Chat mode (``json_schema`` is only sent there).
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
        if any(not _followed(c, request.json_schema) for c in choices):
            out.append("json_schema")
    return tuple(out)


def _followed(choice: Choice, json_schema: str) -> bool:
    """Whether a reply followed the JSON Schema.

    A reply cut off by the length limit cannot be parsed; it followed the
    schema as far as it went when it opens an object.
    """
    if choice.finish_reason == "length":
        text = choice.text.strip()
        if text.startswith("```"):
            text = text.strip("`").removeprefix("json").strip()
        return text.startswith("{")
    return reply_follows(choice.text, json_schema)
