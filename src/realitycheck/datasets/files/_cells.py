"""One cell of a user's row read as a field's value, for the ``files`` dataset.

A column is read as it is, or, dotted (``sentences.sentence``), as one key of
each object in a list cell; a text field joins those items with spaces.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from realitycheck.errors import InvalidInputError

__all__ = ["CellReader", "item_path"]


def item_path(entry: str, row: dict[str, Any]) -> tuple[str, str]:
    """Split ``claims.label`` into the column ``claims`` and the item key ``label``.

    A column whose own name has the dot wins; so does a name without one.
    """
    if entry in row or "." not in entry:
        return entry, ""
    column, key = entry.split(".", 1)
    return column, key


class CellReader:
    """Reads the cells of one file's rows by field, naming file, line and column on errors.

    Attributes:
        path: The file read.
        mapping: Field -> column.
    """

    path: Path
    mapping: dict[str, str]

    def cell(self, row: dict[str, Any], field: str, line: int) -> Any:
        """Return the cell of ``field``; a dotted column gives a tuple, one value per item."""
        column = self.mapping.get(field)
        if column is None:
            return None
        if column not in row:
            base, key = item_path(column, row)
            if key and base in row:
                return self._items_at(row[base], key, line, column)
            raise InvalidInputError(
                "The row has no such column.", path=self.path, line=line, field=column
            )
        return row[column]

    def _items_at(self, value: Any, key: str, line: int, column: str) -> tuple[Any, ...]:
        """Return ``item[key]`` for each object of a list cell (``sentences.sentence``)."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ()
        if not isinstance(value, list):
            raise InvalidInputError(
                f"The cell must be a list of objects with the key {key!r}. Got "
                f"{type(value).__name__} instead.",
                path=self.path,
                line=line,
                field=column,
            )
        for i, item in enumerate(value):
            if not isinstance(item, dict) or key not in item:
                raise InvalidInputError(
                    f"Item {i} of the list must be an object with the key {key!r}. Got "
                    f"{type(item).__name__} {str(item)[:60]!r} instead.",
                    path=self.path,
                    line=line,
                    field=column,
                )
        return tuple(item[key] for item in value)

    def text_cell(self, row: dict[str, Any], field: str, line: int) -> str:
        """Return the cell of ``field`` as text; a dotted column's texts joined by spaces."""
        value = self.cell(row, field, line)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        if isinstance(value, tuple):
            bad = [i for i, v in enumerate(value) if not isinstance(v, str)]
            if bad:
                raise InvalidInputError(
                    f"Every item must be text. Item {bad[0]} is {value[bad[0]]!r}.",
                    path=self.path,
                    line=line,
                    field=self.mapping[field],
                )
            return " ".join(v.strip() for v in value if v.strip())
        if not isinstance(value, str | int | float):
            raise InvalidInputError(
                f"The cell must be text. Got {type(value).__name__} instead.",
                path=self.path,
                line=line,
                field=self.mapping[field],
            )
        return str(value)

    def _raw(self, row: dict[str, Any], column: str, line: int) -> Any:
        if column not in row:
            raise InvalidInputError(
                "The row has no such column.", path=self.path, line=line, field=column
            )
        return row[column]
