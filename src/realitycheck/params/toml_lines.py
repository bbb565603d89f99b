"""A TOML file's tables read as params dataclasses, with the line of each key in messages.

:mod:`tomllib` reports line numbers for syntax errors only; a value that parses
but is wrong (an unknown key, a bad type) is located here by scanning the text
for its table header and key (:func:`locate`). The search is best effort: when
the exact key is not found, the closest enclosing table's header line is
returned, and ``None`` when nothing matches.

A table of settings is a frozen dataclass whose fields are declared with
:func:`realitycheck.params.param` (default, constraint, doc), like a
component's; :meth:`TomlFile.section` reads it: unknown keys are refused with
close matches, each value is checked by its field's constraints and every
mistake has the one message shape of :mod:`realitycheck.params`, prefixed by
the file, the line and the key path::

    study.toml, line 7, field 'run.batch_size': The 'batch_size' parameter of
    [run] must be an int >= 1. Got 0 instead.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from realitycheck.errors import InvalidInputError, UnknownComponentError, did_you_mean
from realitycheck.params import OrNone, check_arg, constraints_of, converter_of, param_error

__all__ = ["TomlFile", "dotted", "locate", "read_toml", "section_keys", "syntax_error_line"]

T = TypeVar("T")

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


def section_keys(cls: type) -> tuple[str, ...]:
    """Return the keys of the TOML table read as dataclass ``cls`` (its init fields, in order)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


def dotted(keys: Sequence[str | int]) -> str:
    """Return a key path as written in messages: ``datasets[1].params.path``."""
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")


def _named(keys: Sequence[str | int], top: str) -> tuple[str, str]:
    """Name a key and the table holding it, for the message: ``('batch_size', '[run]')``.

    An array's item is named by its index: ``('spec[1]', '[datasets]')``.
    """
    at = len(keys) - 1
    while at > 0 and isinstance(keys[at], int):
        at -= 1
    name = dotted([str(keys[at]), *keys[at + 1 :]]) if keys else ""
    table = [k for k in keys[:at] if isinstance(k, str)]
    return name, f"[{'.'.join(table)}]" if table else top


_KINDS: dict[type, str] = {
    str: "a str",
    int: "an int",
    bool: "a bool",
    list: "an array",
    dict: "a table",
    float: "a float",
}


class TomlFile:
    """One parsed TOML file: its values checked, each mistake raised at its key's line.

    Args:
        path: The file (named in every message; relative paths in it are relative to it).
        text: Its text (to find the line of a key).
        top: What its top-level keys belong to, in messages (``the run config``).
    """

    def __init__(self, path: Path, text: str, top: str = "the file") -> None:
        self.path = path
        self.text = text
        self.top = top

    def fail(self, message: str, keys: Sequence[str | int]) -> InvalidInputError:
        """Return the error ``message`` at ``keys`` (file, line of the key, key path)."""
        return InvalidInputError(
            message, path=self.path, line=locate(self.text, keys), field=dotted(keys) or None
        )

    def bad_value(
        self, keys: Sequence[str | int], expected: str, value: Any, hint: str = ""
    ) -> InvalidInputError:
        """Return the one-shape error for a bad value at ``keys`` (``must be {expected}``)."""
        name, owner = _named(keys, self.top)
        error = param_error(name, owner, expected, value, hint=hint)
        return self.fail(str(error), keys)

    def table(
        self,
        value: Any,
        keys: Sequence[str | int],
        allowed: Sequence[str],
        hint: Callable[[str], str] | None = None,
    ) -> dict:
        """Return ``value``, a table whose keys are all ``allowed`` (``hint`` adds to a refusal)."""
        if not isinstance(value, dict):
            raise self.bad_value(keys, "a table", value)
        for key in value:
            if key in allowed:
                continue
            more = did_you_mean(key, allowed) + (hint(key) if hint is not None else "")
            raise self.fail(
                f"Unknown key {key!r}.{more} Allowed here: {', '.join(allowed)}.", [*keys, key]
            )
        return value

    def typed(self, value: Any, kind: type | tuple[type, ...], keys: Sequence[str | int]) -> Any:
        """Return ``value`` if it is one of the TOML types ``kind`` (a bool is no int)."""
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            ok = False
        else:
            ok = isinstance(value, kinds)
        if not ok:
            expected = " or ".join(_KINDS.get(k, k.__name__) for k in kinds)
            raise self.bad_value(keys, expected, value)
        return value

    def build(self, keys: Sequence[str | int], make: Callable[[], T]) -> T:
        """Return ``make()``; its bad-input error is raised again at ``keys``."""
        try:
            return make()
        except (InvalidInputError, UnknownComponentError) as exc:
            raise self.fail(str(exc), keys) from None

    def path_of(self, value: str, keys: Sequence[str | int]) -> Path:
        """Return the path ``value``, relative to this file's folder unless absolute."""
        self.typed(value, str, keys)
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.path.parent / path

    def value(self, cls: type, name: str, value: Any, keys: Sequence[str | int]) -> Any:
        """Return ``value`` converted and checked by the field ``name`` of ``cls``."""
        field = next(f for f in dataclasses.fields(cls) if f.name == name)
        # TOML has no null: a key present has a value, so "or None" is no choice here.
        constraints = [c.inner if isinstance(c, OrNone) else c for c in constraints_of(field)]
        try:
            return check_arg(
                value,
                *constraints,
                name=name,
                owner=_named(keys, self.top)[1],
                convert=converter_of(field),
            )
        except InvalidInputError as exc:
            raise self.fail(str(exc), keys) from None

    def section(
        self,
        cls: type[T],
        value: Any,
        keys: Sequence[str | int],
        *,
        hint: Callable[[str], str] | None = None,
        skip: Sequence[str] = (),
        **given: Any,
    ) -> T:
        """Read the table ``value`` (``None``: absent) as the settings dataclass ``cls``.

        Each key is a field of ``cls``, checked by its declared constraints;
        a key left out takes the field's default. ``skip`` names fields that are
        not keys of the table (filled by ``given``, which are passed as they are).

        Raises:
            InvalidInputError: An unknown key (with close matches), or a bad value, in
                the one message shape, naming the file, the line and the key path.
        """
        allowed = [k for k in section_keys(cls) if k not in skip]
        table = self.table({} if value is None else value, keys, allowed, hint)
        values = {k: self.value(cls, k, v, [*keys, k]) for k, v in table.items()}
        return self.build(keys, lambda: cls(**values, **given))


def read_toml(path: str | Path, what: str) -> tuple[TomlFile, Mapping[str, Any]]:
    """Read a UTF-8 TOML file; ``what`` names it in messages (``The run config``)."""
    import tomllib

    file = Path(path)
    try:
        text = file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"{what} file does not exist.", path=file) from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{what} must be UTF-8 text.", path=file) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(
            f"The file is not valid TOML: {exc}", path=file, line=syntax_error_line(str(exc))
        ) from None
    return TomlFile(file, text, what[:1].lower() + what[1:]), raw
