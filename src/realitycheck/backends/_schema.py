"""Whether a reply follows a JSON Schema: the part of JSON Schema the judges send.

A backend checks every reply to a request that carried a ``json_schema``
against it, whatever ``response_format`` form the server was sent (a server
may honour the schema beside ``json_object``, or ignore ``response_format``
altogether): only a reply that did not follow it is named in
``Generation.unsupported``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["follows_schema", "parsed_schema", "reply_follows"]

_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def follows_schema(value: Any, schema: Mapping[str, Any]) -> bool:
    """Return whether ``value`` (parsed JSON) follows ``schema``.

    Covers ``type`` (object, array, string, integer, number, boolean),
    ``properties``, ``required``, ``additionalProperties: false``, ``items``
    and ``enum``; other keywords are not checked.
    """
    kind = schema.get("type")
    if kind in _TYPES and (
        not isinstance(value, _TYPES[kind])
        or (kind in ("integer", "number") and isinstance(value, bool))
    ):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        if any(name not in value for name in schema.get("required", ())):
            return False
        if schema.get("additionalProperties") is False and set(value) - set(properties):
            return False
        return all(follows_schema(value[k], properties[k]) for k in value if k in properties)
    if isinstance(value, list) and "items" in schema:
        return all(follows_schema(item, schema["items"]) for item in value)
    return True


@functools.lru_cache(maxsize=64)
def parsed_schema(json_schema: str) -> Any:
    """Return ``json_schema`` parsed, once per text (a run sends one schema many times).

    The value is shared between callers: read it, never change it.
    """
    return json.loads(json_schema)


def reply_follows(text: str, json_schema: str) -> bool:
    """Return whether the reply ``text`` is one JSON value that follows ``json_schema``.

    A reply in a Markdown code fence (```` ```json ... ``` ````) is read inside it.
    """
    text = text.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3].removeprefix("json").strip()
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return follows_schema(value, parsed_schema(json_schema))
