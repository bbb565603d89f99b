r"""The text form of a component, ``name[key=value,...]``: read and written here only.

Grammar::

    key    := name [ "[" param ( "," param )* "]" ]
    param  := field "=" value
    value  := item ( "+" item )*         two or more items are a list
            | "()"                       the empty list
    item   := '"' text '"'              always a string; \\" and \\\\ inside
            | key                        a nested component, e.g. openai[model=gpt-4o-mini]
            | bare                       true/false, none/null, an int, a float, else a string

Commas, ``+`` and brackets inside quotes or inside a nested ``[...]`` belong
to the value, so ``judge=openai[model="a,b"]`` is one parameter. A bare item
may not contain ``,``, ``+``, brackets or quotes; :func:`format_value` quotes
every string that would not read back as itself, so ``parse_key(c.key)``
always gives back ``c``'s parameters.

Examples::

    rouge_l[threshold=0.5]
    files[path=my.csv,positive=yes+1]
    semantic_entropy[equivalence=llm,judge=openai[model=gpt-4o-mini]]
    files[path="my data, v2.csv"]
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from realitycheck.errors import InvalidInputError

__all__ = ["format_value", "parse_key", "split_keys", "split_top"]

_NAME = re.compile(r"[A-Za-z0-9_.:\-]+")
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SPECIAL = frozenset(',+[]"')


def _unquoted(text: str, what: str) -> Iterator[tuple[int, str, int]]:
    """Yield ``(index, char, depth)`` of each character outside quotes.

    ``depth`` counts the brackets open before the character (a ``[`` is at the
    depth outside it, its ``]`` likewise).

    Raises:
        InvalidInputError: On an unbalanced bracket or an unterminated quote.
    """
    where = f" in {what!r}" if what else ""
    depth, quoted, escaped = 0, False, False
    for i, ch in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
            continue
        if ch == '"':
            quoted = True
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InvalidInputError(f"An unmatched ']' at position {i}{where}.")
        yield i, ch, depth
        if ch == "[":
            depth += 1
    if quoted:
        raise InvalidInputError(f'A quote (") is not closed{where}.')
    if depth:
        raise InvalidInputError(f"A '[' is not closed{where}.")


def split_top(text: str, sep: str, *, what: str = "") -> list[str]:
    """Split ``text`` at each ``sep`` outside quotes and brackets.

    Raises:
        InvalidInputError: On an unbalanced bracket or an unterminated quote.
    """
    parts: list[str] = []
    start = 0
    for i, ch, depth in _unquoted(text, what):
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _closing(text: str, what: str) -> int:
    """Return the index of the ``]`` that closes the ``[`` at ``text[0]``."""
    return next(i for i, ch, depth in _unquoted(text, what) if ch == "]" and depth == 0)


def _unquote(text: str, whole: str) -> str:
    out, i = [], 1
    while i < len(text) - 1:
        ch = text[i]
        if ch == "\\":
            i += 1
            if i >= len(text) - 1 or text[i] not in '\\"':
                raise InvalidInputError(
                    f'Inside quotes only \\" and \\\\ are escapes. Got {text!r} in {whole!r}.'
                )
            ch = text[i]
        elif ch == '"':
            raise InvalidInputError(
                f"A quoted value must be quoted as a whole. Got {text!r} in {whole!r} instead."
            )
        out.append(ch)
        i += 1
    return "".join(out)


def _read_bare(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _parse_item(text: str, whole: str) -> Any:
    text = text.strip()
    if text.startswith('"'):
        if len(text) < 2 or not text.endswith('"'):
            raise InvalidInputError(
                f"A quoted value must be quoted as a whole. Got {text!r} in {whole!r} instead."
            )
        return _unquote(text, whole)
    if "[" in text or "]" in text:
        name = _NAME.match(text)
        if name is None or not text.endswith("]") or text[name.end()] != "[":
            raise InvalidInputError(
                "Brackets in a value must hold a nested component, as name[key=value,...]; "
                f"quote other text. Got {text!r} in {whole!r} instead."
            )
        parse_key(text)  # fail here, with the outer key named, if the nested key is malformed
        return text
    if '"' in text:
        raise InvalidInputError(
            f"A quoted value must be quoted as a whole. Got {text!r} in {whole!r} instead."
        )
    return _read_bare(text)


def _parse_value(text: str, whole: str) -> Any:
    text = text.strip()
    if text == "()":
        return []
    items = split_top(text, "+", what=whole)
    if len(items) == 1:
        return _parse_item(text, whole)
    if any(not item.strip() for item in items):
        raise InvalidInputError(
            f'A list (a+b) must not have an empty item; quote it as "". Got {text!r} in '
            f"{whole!r} instead."
        )
    return [_parse_item(item, whole) for item in items]


def parse_key(text: str) -> tuple[str, dict[str, Any]]:
    """Split ``name[k=v,k2=v2]`` into the name and its parameters.

    Values are read as bool, int, float or string; ``a+b`` is a list, ``()``
    the empty list, ``"..."`` a string as written, and ``name[...]`` a nested
    component, kept as its key text for the registry to build (see the module
    docstring for the grammar).

    Raises:
        InvalidInputError: If the text is not of that shape.
    """
    if not isinstance(text, str):
        raise InvalidInputError(
            f"A component key must be a string such as rouge_l[threshold=0.5]. Got {text!r}."
        )
    stripped = text.strip()
    match = _NAME.match(stripped)
    rest = stripped[match.end() :].strip() if match else ""
    if match is None or (rest and not (rest.startswith("[") and rest.endswith("]"))):
        raise InvalidInputError(
            f"A component must be written as name or name[key=value,...]. Got {text!r} instead."
        )
    name = match.group(0)
    params: dict[str, Any] = {}
    if not rest:
        return name, params
    if _closing(rest, text) != len(rest) - 1:  # the first '[' must close at the end
        raise InvalidInputError(
            f"A component must be written as name or name[key=value,...]. Got {text!r} instead."
        )
    inner = rest[1:-1]
    if not inner.strip():
        return name, params
    for part in split_top(inner, ",", what=text):
        if "=" not in part:
            raise InvalidInputError(
                f"Each parameter of {text!r} must be key=value. Got {part!r} instead."
            )
        field, value = part.split("=", 1)
        field = field.strip()
        if not _FIELD.match(field):
            raise InvalidInputError(
                f"A parameter name in {text!r} must be an identifier. Got {field!r} instead."
            )
        if field in params:
            raise InvalidInputError(f"The parameter {field!r} is given twice in {text!r}.")
        params[field] = _parse_value(value, text)
    return name, params


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _format_item(value: Any) -> str:
    key = getattr(value, "key", None)
    if isinstance(key, str) and hasattr(value, "spec"):
        return key  # a nested component
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    if not text or _SPECIAL & set(text) or text != text.strip() or _read_bare(text) != text:
        return _quote(text)
    return text


def format_value(value: Any) -> str:
    """Write one parameter value so that :func:`parse_key` reads it back unchanged.

    A component is written as its key; a list or tuple as ``a+b`` (``()`` when
    empty; one item is written alone); a string is quoted when it would not
    read back as itself.
    """
    if isinstance(value, list | tuple):
        if not value:
            return "()"
        return "+".join(_format_item(v) for v in value)
    return _format_item(value)


def split_keys(text: str) -> list[str]:
    """Split a comma-separated list of keys, keeping commas inside ``[...]`` and quotes.

    ``"rouge_l[threshold=0.5,use_stemmer=true], bleu"`` gives the two keys; empty
    items are dropped.
    """
    return [part.strip() for part in split_top(text, ",", what=text) if part.strip()]
