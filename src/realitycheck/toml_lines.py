"""Find the line of a key in a TOML file, for error messages.

:mod:`tomllib` reports line numbers for syntax errors only; a value that parses
but is wrong (an unknown key, a bad type) is located here by scanning the text
for its table header and key. The search is best effort: when the exact key is
not found, the closest enclosing table's header line is returned, and ``None``
when nothing matches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["locate", "syntax_error_line"]

_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([^\]]+?)\s*\]\]")
_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]")
_KEY = re.compile(
    r"""^\s*((?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*'))*)\s*="""
)
_LINE_IN_MESSAGE = re.compile(r"line (\d+)")


def _names(dotted: str) -> tuple[str, ...]:
    parts = re.findall(r"""[A-Za-z0-9_\-]+|"[^"]*"|'[^']*'""", dotted)
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in parts)


def locate(text: str, keys: Sequence[str | int]) -> int | None:
    """Return the 1-based line defining ``keys`` (e.g. ``("datasets", 1, "name")``)."""
    target = tuple(keys)
    arrays: dict[tuple[str, ...], int] = {}
    header: tuple[str, ...] = ()
    best, best_len = None, 0

    def indexed(names: tuple[str, ...]) -> tuple[str | int, ...]:
        out: list[str | int] = []
        for i in range(len(names)):
            out.append(names[i])
            if names[: i + 1] in arrays:
                out.append(arrays[names[: i + 1]])
        return tuple(out)

    for lineno, line in enumerate(text.splitlines(), start=1):
        found: tuple[str | int, ...] | None = None
        if match := _ARRAY_HEADER.match(line):
            header = _names(match.group(1))
            arrays[header] = arrays.get(header, -1) + 1
            found = indexed(header)
        elif match := _HEADER.match(line):
            header = _names(match.group(1))
            found = indexed(header)
        elif match := _KEY.match(line):
            path = indexed(header)
            found = path + _names(match.group(1))
        if found is None:
            continue
        if found == target:
            return lineno
        if len(found) > best_len and target[: len(found)] == found:
            best, best_len = lineno, len(found)
    return best


def syntax_error_line(message: str) -> int | None:
    """Return the line number a :class:`tomllib.TOMLDecodeError` message names, if any."""
    match = _LINE_IN_MESSAGE.search(message)
    return int(match.group(1)) if match else None
