"""The records of a ``.json`` file: one list, a list under a path, or one list per stratum."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from realitycheck.datasets._io import read_json
from realitycheck.errors import InvalidInputError, did_you_mean

__all__ = ["STRATUM", "json_records"]

STRATUM = "stratum"
"""The column that holds a record's stratum (its list's key) with ``records=*``."""


def json_records(
    path: Path, records: str = ""
) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """Return the columns and ``(record number, record)`` pairs of a JSON file.

    Args:
        path: The file.
        records: Dotted keys to the list (``data.items``); a last part ``*``
            (``*`` alone, or ``data.*``) takes an object of lists, one per
            stratum, and adds the list's key as the :data:`STRATUM` column.
            Empty: the file is a list, or an object with exactly one list.

    Raises:
        InvalidInputError: When the path does not lead to a list of objects.
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
        groups = [("", _only_list(node, path) if not parts else node)]
    out: list[tuple[int, dict[str, Any]]] = []
    for stratum, items in groups:
        where = ".".join([*parts, stratum]) if stratum else (records or "the top level")
        if not isinstance(items, list):
            raise InvalidInputError(
                f"The records at {where!r} must be a list of objects. Got {_kind(items)} instead.",
                path=path,
                field="records",
            )
        for item in items:
            number = len(out) + 1
            if not isinstance(item, dict):
                raise InvalidInputError(
                    f"Each record must be an object. Got {_kind(item)} in the list at "
                    f"{where!r} instead.",
                    path=path,
                    line=number,
                )
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


def _only_list(node: Any, path: Path) -> Any:
    """Return the file's list of records when no path is given: the file, or its one list."""
    if isinstance(node, list):
        return node
    if isinstance(node, dict):
        lists = [k for k, v in node.items() if isinstance(v, list)]
        if len(lists) == 1:
            return node[lists[0]]
        raise InvalidInputError(
            f"The JSON object holds {len(lists)} lists ({', '.join(lists) or 'none'}), not one; "
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
