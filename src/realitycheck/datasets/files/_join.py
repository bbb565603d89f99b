"""Columns that come from outside a row: the file's path fields and side files joined to it.

A side file (``join=scores.json``) adds its columns to the rows of the main
file, by an id column both have (``join_on=id``, or ``join_on=id:qid`` when
the side file names it otherwise) or by position (``join_on=position``: row k
with row k). A value given twice, by the row and by its path or a side file,
must agree: an empty or missing cell takes the other's value, and two
different values are an error naming both files and lines, never a choice.
Each column that came from elsewhere remembers where (:class:`Origins`), so an
error in it names that file and line.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from realitycheck.datasets import FORMATS, read_rows
from realitycheck.datasets.files._paths import PLACEHOLDER, placeholders
from realitycheck.errors import InvalidInputError
from realitycheck.params import as_tuple, param_error

if TYPE_CHECKING:
    from realitycheck.datasets.files import Files

__all__ = [
    "POSITION",
    "JoinKey",
    "Origins",
    "SideFile",
    "add_path_fields",
    "check_join",
    "join_key",
    "relocated",
    "values_column",
]

logger = logging.getLogger(__name__)

POSITION = "position"
"""``join_on=position``: row k of the side file goes with row k of the main file."""

_Rows = list[tuple[int, dict[str, Any]]]
Origins = list[dict[str, tuple[Path, int | None, str]]]
"""Per row: column -> (file, line, how) for each value that did not come from the row."""


@dataclass(frozen=True)
class JoinKey:
    """How a side file lines up: ``main`` and ``side`` id columns, or both empty (position)."""

    main: str = ""
    side: str = ""

    @property
    def by_position(self) -> bool:
        """Whether rows pair by position."""
        return not self.main

    def __str__(self) -> str:
        if self.by_position:
            return POSITION
        return self.main if self.main == self.side else f"{self.main}:{self.side}"


def join_key(join_on: str) -> JoinKey:
    """Parse ``join_on``: ``position``, ``column`` (both files) or ``main_column:side_column``.

    A column that is really named ``position`` is written ``position:position``.
    """
    text = join_on.strip()
    if text == POSITION:
        return JoinKey()
    main, _, side = text.partition(":")
    return JoinKey(main.strip(), (side or main).strip())


def values_column(template: str) -> str:
    """Return the column of a side file of plain values: its name as written in ``join``.

    The name without the extension and without placeholders
    (``phd_benchmark_score.json`` gives ``phd_benchmark_score``,
    ``{model}_selfcheck.json`` gives ``selfcheck``), or ``value`` when
    nothing is left (``scores/{model}.json``), so every side file of one
    ``join`` gives the same column.
    """
    stem = Path(template).name
    stem = stem[: -len(Path(stem).suffix)] if Path(stem).suffix else stem
    return PLACEHOLDER.sub("", stem).strip("_-. ") or "value"


def check_join(files: Files) -> None:
    """Refuse ``join`` and ``join_on`` that do not go together.

    Raises:
        InvalidInputError: In the one parameter-error shape, naming the parameter.
    """
    name = files.name
    if files.join and not files.join_on.strip():
        raise param_error(
            "join_on",
            name,
            f"{POSITION!r}, an id column of both files, or main_column:side_column when "
            "'join' names a side file",
            files.join_on,
        )
    if files.join_on and not files.join:
        raise param_error("join", name, "a side file when 'join_on' is set", files.join)
    if not files.join:
        return
    key = join_key(files.join_on)
    if files.join_on.strip() != POSITION and (
        not key.main or not key.side or files.join_on.count(":") > 1
    ):
        raise param_error(
            "join_on", name, f"{POSITION!r}, a column, or main_column:side_column", files.join_on
        )
    for side in files.join:
        if Path(side).suffix.lower() not in FORMATS:
            raise param_error("join", name, f"side files ending in one of {FORMATS}", files.join)
        for main in as_tuple(files.path):
            missing = [p for p in placeholders(side) if p not in placeholders(str(main))]
            if missing:
                raise param_error(
                    "join",
                    name,
                    "side files whose {placeholders} are among those of 'path'",
                    files.join,
                    hint=f"{{{missing[0]}}} is not in the path {str(main)!r}.",
                )


def _id(value: Any) -> str | None:
    """Return an id cell as text (``3``, ``3.0`` and ``"3"`` alike); None when empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return value.strip() or None
    return ""  # a list or an object: not an id


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _same(a: Any, b: Any) -> bool:
    """Whether two cells say the same (``3`` and ``"3"`` do; text is compared stripped)."""
    if a == b:
        return True
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return _id(a) == _id(b)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def add_path_fields(
    rows: _Rows, fields: dict[str, str], path: Path, shown: str
) -> tuple[list[str], Origins]:
    """Put the path's fields into every row; return the columns added and where each came from.

    Raises:
        InvalidInputError: A row's own cell of a field's name differs from the path's value.
    """
    origins: Origins = []
    for line, row in rows:
        origin: dict[str, tuple[Path, int | None, str]] = {}
        for name, value in fields.items():
            own = row.get(name)
            if not _empty(own) and not _same(own, value):
                raise InvalidInputError(
                    f"The row's {name!r} is {_short(own)} but the path {shown!r} gives "
                    f"{{{name}}} = {value!r}; a value given twice must agree. Rename the "
                    f"placeholder (e.g. {{{name}_dir}}) or the column.",
                    path=path,
                    line=line,
                    field=name,
                )
            row[name] = value
            origin[name] = (path, None, f"{{{name}}} of the path {shown!r}")
        origins.append(origin)
    return list(fields), origins


class SideFile:
    """One side file, read once; with ``join_on`` an id column, its rows by id.

    Args:
        path: The side file (JSON, JSONL, CSV/TSV or Parquet, by its extension).
        key: The join columns (empty: by position).
        key_column: The column of the keys of a JSON object keyed by id.
        values: The column of a JSON list (or object keyed by id) of plain
            values, such as SelfCheckGPT's scores ``[0.07, 0.08, ...]``
            (:func:`values_column`).

    Raises:
        InvalidInputError: The file cannot be read, lacks the join column, or
            repeats an id (naming both lines).
    """

    def __init__(self, path: Path, key: JoinKey, key_column: str, values: str) -> None:
        self.path = path
        self.key = key
        self.columns, self.rows = read_rows(path, key_column=key_column, values=values)
        self.index: dict[str, tuple[int, dict[str, Any]]] = {}
        self.used: set[str] = set()
        if key.by_position:
            return
        if key.side not in self.columns:
            raise InvalidInputError(
                f"The side file has no column {key.side!r} to join on (join_on={str(key)!r}). "
                f"Available: {', '.join(self.columns) or 'none'}.",
                path=path,
                field=key.side,
            )
        for line, row in self.rows:
            ident = _id(row.get(key.side))
            if not ident:
                raise InvalidInputError(
                    "The id to join on is empty or not text or a number.",
                    path=path,
                    line=line,
                    field=key.side,
                )
            if ident in self.index:
                raise InvalidInputError(
                    f"The id {ident!r} repeats the one on line {self.index[ident][0]}; a side "
                    "file joined by id needs one row per id.",
                    path=path,
                    line=line,
                    field=key.side,
                )
            self.index[ident] = (line, row)

    @property
    def added(self) -> list[str]:
        """The columns the side file adds (all but its join column)."""
        return [c for c in self.columns if self.key.by_position or c != self.key.side]

    def join(self, rows: _Rows, path: Path, origins: Origins) -> list[str]:
        """Add this file's columns to ``rows`` of the main file ``path``, in place.

        Returns:
            The columns added.

        Raises:
            InvalidInputError: By position, the two files differ in length; by
                id, a row has no id or an id the side file lacks; a value in
                both files differs.
        """
        if self.key.by_position:
            if len(self.rows) != len(rows):
                raise InvalidInputError(
                    f"The side file has {len(self.rows)} rows but {path.name} has {len(rows)}; "
                    "joined by position (join_on=position), row k of one goes with row k of "
                    "the other, so both must have as many. Join on an id column if they "
                    "cover different rows.",
                    path=self.path,
                    field="join",
                )
            pairs = list(zip(rows, self.rows, strict=True))
        else:
            pairs = [((line, row), self._find(line, row, path)) for line, row in rows]
        for ((line, row), (side_line, side_row)), origin in zip(pairs, origins, strict=True):
            for column in self.added:
                value = side_row.get(column)
                own = row.get(column)
                if not _empty(own) and not _empty(value) and not _same(own, value):
                    raise InvalidInputError(
                        f"The column {column!r} is {_short(own)} on line {line} of {path.name} "
                        f"but {_short(value)} here; a value given twice must agree. Rename "
                        "or drop the column in one of the files.",
                        path=self.path,
                        line=side_line,
                        field=column,
                    )
                if _empty(own):
                    row[column] = value
                    origin[column] = (self.path, side_line, f"the side file joined on {self.key}")
        return self.added

    def _find(self, line: int, row: dict[str, Any], path: Path) -> tuple[int, dict[str, Any]]:
        ident = _id(row.get(self.key.main))
        if not ident:
            raise InvalidInputError(
                f"The row has no id to join the side file {self.path.name} on (join_on="
                f"{str(self.key)!r}).",
                path=path,
                line=line,
                field=self.key.main,
            )
        found = self.index.get(ident)
        if found is None:
            some = ", ".join(repr(k) for k in list(self.index)[:3])
            raise InvalidInputError(
                f"The id {ident!r} is not in the side file {self.path} (column "
                f"{self.key.side!r}; {len(self.index)} ids, such as {some}). Every row must "
                "find its row there.",
                path=path,
                line=line,
                field=self.key.main,
            )
        self.used.add(ident)
        return found

    def unused_warning(self) -> str:
        """Return (and log) a warning counting the side rows no main row matched; "" if none.

        A side file may cover more than the rows read (one scores file for all
        models, a glob reading some of them); the rows it has beyond them
        misalign nothing, since ids carry the pairing, so they are counted,
        not refused.
        """
        if self.key.by_position:
            return ""
        unused = [(ln, ident) for ident, (ln, _) in self.index.items() if ident not in self.used]
        if not unused:
            return ""
        lines = ", ".join(str(line) for line, _ in unused[:5]) + (", …" if len(unused) > 5 else "")
        warning = (
            f"Warning: {len(unused)} of {len(self.index)} rows of the side file {self.path.name} "
            f"(lines {lines}) match no row read; they were not used."
        )
        logger.warning(warning)
        return warning


def relocated(exc: InvalidInputError, origin: tuple[Path, int | None, str]) -> InvalidInputError:
    """Return ``exc`` naming the file and line a value came from (a side file, the path)."""
    bare = str(InvalidInputError("", path=exc.path, line=exc.line, field=exc.field))
    message = str(exc)[len(bare) :] if str(exc).startswith(bare) else str(exc)
    path, line, how = origin
    return InvalidInputError(
        f"{message} (The value comes from {how}, for line {exc.line} of "
        f"{Path(exc.path or '').name}.)",
        path=path,
        line=line,
        field=exc.field,
    )
