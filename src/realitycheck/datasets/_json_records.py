"""The records of a ``.json`` file: a list or an object keyed by id, under a path or per stratum."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from realitycheck.datasets._io import read_json
from realitycheck.errors import InvalidInputError, did_you_mean

__all__ = ["KEY_COLUMN", "STRATUM", "json_records"]

STRATUM = "stratum"
"""The column that holds a record's stratum (its list's key) with ``records=*``."""
KEY_COLUMN = "id"
"""The default column of each key of an object of records keyed by id."""


def json_records(
    path: Path, records: str = "", *, key_column: str = KEY_COLUMN, values: str = ""
) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """Return the columns and ``(record number, record)`` pairs of a JSON file.

    Records are a list of objects, or an object of objects keyed by id
    (``{"428": {...}, "431": {...}}``, MIND's HELM files), whose keys go into the
    column ``key_column``.

    Args:
        path: The file.
        records: Dotted keys to the records (``data.items``); a last part ``*``
            (``*`` alone, or ``data.*``) takes an object of lists, one per
            stratum, and adds the list's key as the :data:`STRATUM` column.
            Empty: the file is a list, an object with exactly one list, or an
            object of objects keyed by id.
        key_column: The column that holds each key of an object keyed by id.
        values: The column of each plain value (a number, a text) in a list or
            keyed object of them (a side file of scores: ``[0.07, 0.08]``);
            empty: a plain value is an error.

    Raises:
        InvalidInputError: When the path does not lead to records, or a record's
            own ``key_column`` differs from its key.
    """
    data = read_json(path)
    parts = [p for p in records.split(".")] if records else []
    strata = bool(parts) and parts[-1] == "*"
    if strata:
        parts = parts[:-1]
    node = _walk(data, parts, path, records)
    if strata:
        if not isinstance(node, dict) or not node:
            raise InvalidInputError(
                f"records={records!r} needs an object with one list of records per stratum. "
                f"Got {_kind(node)} instead.",
                path=path,
                field="records",
            )
        groups = list(node.items())
    else:
        groups = [("", _only_list(node, path, values) if not parts else node)]
    out: list[tuple[int, dict[str, Any]]] = []
    for stratum, items in groups:
        where = ".".join([*parts, stratum]) if stratum else (records or "the top level")
        for key, item in _items(items, where, path, values):
            number = len(out) + 1
            if not isinstance(item, dict):
                if not values:
                    raise InvalidInputError(
                        f"Each record must be an object. Got {_kind(item)} in the "
                        f"{'object' if key is not None else 'list'} at {where!r} instead.",
                        path=path,
                        line=number,
                    )
                item = {values: item}
            if key is not None:
                item = _keyed(item, key, key_column, path, number)
            if strata:
                if STRATUM in item:
                    raise InvalidInputError(
                        f"The record has its own {STRATUM!r} key, which records=* would "
                        "overwrite with the stratum name; rename it in the file.",
                        path=path,
                        line=number,
                        field=STRATUM,
                    )
                item = {**item, STRATUM: stratum}
            out.append((number, item))
    columns = list(dict.fromkeys(k for _, row in out for k in row))
    return columns, out


def _keyed(item: dict[str, Any], key: str, column: str, path: Path, number: int) -> dict[str, Any]:
    """Return a keyed record with its key in ``column`` (first), refusing a different own one."""
    own = item.get(column)
    if own is not None and str(own) != key:
        raise InvalidInputError(
            f"The record's own {column!r} is {own!r} but its key in the object is {key!r}; "
            "the key goes into that column. Set key_column= to another name to keep both.",
            path=path,
            line=number,
            field=column,
        )
    return {column: key, **{k: v for k, v in item.items() if k != column}}


def _items(items: Any, where: str, path: Path, values: str) -> list[tuple[str | None, Any]]:
    """Return ``(key, record)`` pairs: key None for a list, the id for a keyed object."""
    if isinstance(items, list):
        return [(None, item) for item in items]
    if isinstance(items, dict) and _is_keyed(items, values):
        return [(str(k), v) for k, v in items.items()]
    raise InvalidInputError(
        f"The records at {where!r} must be a list of objects or an object of objects keyed "
        f"by id. Got {_kind(items)}{_mixed(items)} instead.",
        path=path,
        field="records",
    )


def _is_keyed(node: dict[str, Any], values: str) -> bool:
    """Whether ``node`` is records keyed by id: all objects (or, with ``values``, all plain)."""
    if not node:
        return False
    if all(isinstance(v, dict) for v in node.values()):
        return True
    return bool(values) and not any(isinstance(v, dict | list) for v in node.values())


def _mixed(node: Any) -> str:
    """Describe what an object holds when it is neither records nor keyed records."""
    if not isinstance(node, dict) or not node:
        return ""
    kinds = sorted({_kind(v) for v in node.values()})
    return f" (its values are {' and '.join(kinds)})"


def _walk(data: Any, parts: list[str], path: Path, records: str) -> Any:
    """Follow the dotted keys of ``records`` from the top of the file."""
    node = data
    for depth, key in enumerate(parts):
        here = ".".join(parts[:depth]) or "the top level"
        if not isinstance(node, dict):
            raise InvalidInputError(
                f"The records path {records!r} goes through {here!r}, which holds "
                f"{_kind(node)}, not an object with a key {key!r}.",
                path=path,
                field="records",
            )
        if key not in node:
            keys = [str(k) for k in node]
            hint = did_you_mean(key, keys)
            raise InvalidInputError(
                f"The records path {records!r} does not exist: {here!r} has no key {key!r}."
                f"{hint} Keys: {', '.join(keys[:20]) or 'none'}.",
                path=path,
                field="records",
            )
        node = node[key]
    return node


def _only_list(node: Any, path: Path, values: str = "") -> Any:
    """Return the file's records when no path is given: the file, its one list, or itself.

    An object with exactly one list gives that list; an object whose values are
    all objects is records keyed by id.
    """
    if isinstance(node, list):
        return node
    if isinstance(node, dict):
        lists = [k for k, v in node.items() if isinstance(v, list)]
        if len(lists) == 1:
            return node[lists[0]]
        if not lists and _is_keyed(node, values):
            return node
        held = (
            f"holds {len(lists)} lists ({', '.join(lists)}), not one"
            if lists
            else f"holds no list and is not an object of records keyed by id{_mixed(node)}"
        )
        raise InvalidInputError(
            f"The JSON object {held}; "
            "name the list of records with records=KEY (dotted for nested objects, "
            "e.g. records=data.items), or records=* for one list per stratum.",
            path=path,
            field="records",
        )
    raise InvalidInputError(
        f"The file must hold a list of records or an object holding one. Got {_kind(node)} "
        "instead.",
        path=path,
    )


def _kind(value: Any) -> str:
    """Return a short description of a JSON value's type."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)
