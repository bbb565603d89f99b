"""Small readers shared by the dataset modules.

Each reader says where bad input is (file, line, field) through
:class:`~realitycheck.errors.InvalidInputError`; nothing is skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from realitycheck.errors import InvalidInputError

__all__ = [
    "TOO_DEEP",
    "IdMaker",
    "as_object",
    "field_of",
    "read_json",
    "read_jsonl",
    "read_text",
    "spec_json",
    "split_lines",
]


def read_text(path: Path) -> str:
    """Return the text of a UTF-8 file as is (no newline translation).

    Raises:
        InvalidInputError: Naming the file when it is not UTF-8.
    """
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"The file must be UTF-8 text. Got an undecodable byte at offset {exc.start} instead.",
            path=path,
        ) from None


def split_lines(text: str) -> list[str]:
    """Split on newlines (LF or CRLF) only; other Unicode line breaks stay inside fields."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSON-lines file.

    Raises:
        InvalidInputError: On a line that is not JSON or not a JSON object.
    """
    for lineno, line in enumerate(split_lines(read_text(path)), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"Each line must be a JSON object. Got invalid JSON ({exc.msg}) instead.",
                path=path,
                line=lineno,
            ) from None
        except RecursionError:
            raise InvalidInputError(TOO_DEEP, path=path, line=lineno) from None
        if not isinstance(obj, dict):
            raise InvalidInputError(
                f"Each line must be a JSON object. Got {type(obj).__name__} instead.",
                path=path,
                line=lineno,
            )
        yield lineno, obj


def read_json(path: Path) -> Any:
    """Return the content of a JSON file.

    Raises:
        InvalidInputError: When the file is not valid JSON (with its line).
    """
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"The file must be valid JSON. Got an error ({exc.msg}) instead.",
            path=path,
            line=exc.lineno,
        ) from None
    except RecursionError:
        raise InvalidInputError(TOO_DEEP, path=path) from None


TOO_DEEP = (
    "The JSON is nested too deeply to read (lists or objects inside one another "
    "about a thousand levels deep); flatten it or drop the deep field."
)
"""The message of a JSON value that Python's parser cannot read for its depth."""


_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "an object"}


def field_of(
    obj: Mapping[str, Any],
    name: str,
    kind: type | tuple[type, ...],
    *,
    path: Path,
    line: int | None,
    prefix: str = "",
) -> Any:
    """Return ``obj[name]``, checking that it is present and of type ``kind``.

    Args:
        obj: The parsed object.
        name: The key to read.
        kind: The accepted type (or types).
        path: The file, for the error message.
        line: The line, for the error message.
        prefix: Path of ``obj`` inside the line (``responses[2].``) for the field name.

    Raises:
        InvalidInputError: When the key is missing or of another type.
    """
    where = f"{prefix}{name}"
    if name not in obj:
        keys = ", ".join(sorted(obj)) or "none"
        raise InvalidInputError(
            f"The field is missing. Present fields: {keys}.", path=path, line=line, field=where
        )
    value = obj[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        wanted = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
        raise InvalidInputError(
            f"The field must be {wanted}. Got {type(value).__name__} {_short(value)} instead.",
            path=path,
            line=line,
            field=where,
        )
    return value


def as_object(
    value: Any, what: str, *, path: Path, line: int | None = None, field: str | None = None
) -> dict[str, Any]:
    """Return ``value``, checking that it is a JSON object (a dict).

    Raises:
        InvalidInputError: "Each {what} must be an object. Got {type} instead.",
            naming ``path``, ``line`` and ``field`` where given.
    """
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"Each {what} must be an object. Got {type(value).__name__} instead.",
            path=path,
            line=line,
            field=field,
        )
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class IdMaker:
    """Hands out unique ids, suffixing repeats deterministically (``x``, ``x#2``, ``x#3``)."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def make(self, base: str) -> str:
        """Return ``base``, or ``base#k`` when ``base`` was handed out ``k - 1`` times before."""
        count = self._seen.get(base, 0) + 1
        self._seen[base] = count
        return base if count == 1 else f"{base}#{count}"

    @property
    def repeats(self) -> int:
        """How many ids needed a suffix."""
        return sum(c - 1 for c in self._seen.values())


def spec_json(name: str, params: Mapping[str, Any], *, source: Mapping[str, Any]) -> str:
    """Return the spec JSON of a recorded component, with the dataset it came from."""
    return json.dumps(
        {"name": name, "params": dict(params), "version": "1", "dataset": dict(source)},
        sort_keys=True,
        default=str,
    )
