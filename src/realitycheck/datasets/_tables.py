"""Read a user's JSONL, CSV/TSV or Parquet file into rows with their line numbers."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from realitycheck.datasets._io import read_jsonl, read_text
from realitycheck.errors import InvalidInputError

__all__ = ["FORMATS", "cell_text", "read_rows"]

FORMATS = (".jsonl", ".csv", ".tsv", ".parquet")


def read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """Return the column names and ``(line, row)`` pairs of a table file.

    ``line`` is the 1-based line of the row in a JSONL, CSV or TSV file (the
    header is line 1) and the 1-based row number in a Parquet file.

    Raises:
        InvalidInputError: On an unknown extension or a malformed row.
    """
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = list(read_jsonl(path))
        columns = list(dict.fromkeys(k for _, row in rows for k in row))
        return columns, rows
    if suffix in (".csv", ".tsv"):
        return _read_csv(path, "\t" if suffix == ".tsv" else ",")
    if suffix == ".parquet":
        return _read_parquet(path)
    raise InvalidInputError(
        f"The file must end in one of {FORMATS}. Got {path.suffix or 'no extension'!r} instead.",
        path=path,
    )


def _read_csv(path: Path, delimiter: str) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    reader = csv.reader(
        io.StringIO(read_text(path).lstrip("\ufeff"), newline=""), delimiter=delimiter
    )
    try:
        header = next(reader)
    except StopIteration:
        raise InvalidInputError("The file is empty; it needs a header line.", path=path) from None
    except csv.Error as exc:
        raise InvalidInputError(
            f"The header is not valid CSV ({exc}).", path=path, line=1
        ) from None
    _refuse_repeated_columns(header, path)
    rows = []
    start = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InvalidInputError(
                f"The row is not valid CSV ({exc}).", path=path, line=start
            ) from None
        if cells:
            if len(cells) != len(header):
                raise InvalidInputError(
                    f"Each row must have {len(header)} fields like the header. "
                    f"Got {len(cells)} instead.",
                    path=path,
                    line=start,
                )
            rows.append((start, dict(zip(header, cells, strict=True))))
        start = reader.line_num + 1
    return header, rows


def _read_parquet(path: Path) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    import pyarrow.parquet as pq  # a core dependency, imported only when needed

    try:
        _refuse_repeated_columns(pq.read_schema(path).names, path)
        table = pq.read_table(path)
    except InvalidInputError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InvalidInputError(
            f"The file is not a readable Parquet table ({exc}).", path=path
        ) from None
    return list(table.column_names), list(enumerate(table.to_pylist(), start=1))


def _refuse_repeated_columns(header: list[str], path: Path) -> None:
    """Raise when two columns share a name (a row would silently keep only the last)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(header, start=1):
        if name in seen:
            raise InvalidInputError(
                f"The header has two columns named {name!r} (columns {seen[name]} and {i}); "
                "rename one so it is clear which to read.",
                path=path,
                line=1,
                field=name,
            )
        seen[name] = i


def cell_text(value: Any) -> str | None:
    """Return a cell as comparable text: ``None`` when empty, numbers without ``.0``.

    Booleans become ``true``/``false`` and text is stripped and lower-cased, so
    ``True``, ``"TRUE"`` and ``"true"`` compare equal, as do ``1``, ``1.0``, ``"1"`` and
    ``"1.0"``.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)
    text = str(value).strip().lower()
    try:
        number = float(text)
    except ValueError:
        return text or None
    return str(int(number)) if math.isfinite(number) and number.is_integer() else text
