"""Read a user's JSON, JSONL, CSV/TSV or Parquet file into rows with their line numbers.

A CSV file's delimiter is sniffed from its first lines (a tab-separated file
named ``.csv`` loads); a JSON file holds a list of records, directly or under
a ``records`` path (``data.items``), or one list per stratum (``records=*``);
an object of records keyed by id loads with its keys in a column.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from realitycheck.datasets._io import read_jsonl, read_text
from realitycheck.datasets._json_records import KEY_COLUMN, json_records
from realitycheck.errors import InvalidInputError

__all__ = ["DELIMITERS", "FORMATS", "cell_text", "delimiter_hint", "format_of", "read_rows"]

FORMATS = (".json", ".jsonl", ".csv", ".tsv", ".parquet")
"""The file extensions read; ``format=`` names one of them without the dot."""

DELIMITERS = (",", "\t", ";", "|")
"""The delimiters a ``.csv`` file is sniffed for, in order of preference."""

_SAMPLE_CHARS = 65536
_Rows = tuple[list[str], list[tuple[int, dict[str, Any]]]]


def format_of(path: Path, format: str = "") -> str:
    """Return the format of ``path``: ``format`` when given, else its extension without the dot.

    Raises:
        InvalidInputError: When neither names one of :data:`FORMATS`.
    """
    name = (format or path.suffix).lower().lstrip(".")
    if f".{name}" not in FORMATS:
        given = f"format={format!r}" if format else f"the extension {path.suffix or 'none'!r}"
        raise InvalidInputError(
            f"The format must be one of {tuple(f[1:] for f in FORMATS)}. Got {given} instead; "
            "set format= to read a file whose extension says otherwise.",
            path=path,
            field="format",
        )
    return name


def read_rows(
    path: Path,
    *,
    format: str = "",
    records: str = "",
    delimiter: str = "",
    key_column: str = KEY_COLUMN,
    values: str = "",
) -> _Rows:
    """Return the column names and ``(line, row)`` pairs of a table file.

    ``line`` is the 1-based line of the row in a JSONL, CSV or TSV file (the
    header is line 1), the 1-based row number in a Parquet file and the 1-based
    record number in a JSON file (counted across strata with ``records=*``).

    Args:
        path: The file.
        format: ``json``, ``jsonl``, ``csv``, ``tsv`` or ``parquet``; default: the extension.
        records: For JSON, the dotted path to the list of records (``data.items``),
            or ``*`` (``data.*``) for an object holding one list per stratum.
        delimiter: For CSV, the delimiter; default: sniffed among :data:`DELIMITERS`.
        key_column: For JSON, the column of each key of an object of records keyed by id.
        values: For JSON, the column of each plain value in a list of them (a side
            file of scores); empty: a plain value is an error.

    Raises:
        InvalidInputError: On an unknown format or a malformed row.
    """
    kind = format_of(path, format)
    if kind == "json":
        return json_records(path, records, key_column=key_column, values=values)
    if kind == "jsonl":
        rows = list(read_jsonl(path))
        columns = list(dict.fromkeys(k for _, row in rows for k in row))
        return columns, rows
    if kind == "parquet":
        return _read_parquet(path)
    text = read_text(path).lstrip("\ufeff")
    if delimiter:
        return _read_csv(path, text, delimiter, "given")
    if kind == "tsv":
        return _read_csv(path, text, "\t", "the .tsv default")
    chosen, how = _sniff(text)
    return _read_csv(path, text, chosen, how)


def _consistent(text: str, delimiter: str, truncated: bool) -> bool:
    """Return whether the first rows of ``text`` split into the same number (>1) of fields."""
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if r]
    except csv.Error:
        return False
    rows = rows[:-1] if truncated and len(rows) > 1 else rows
    return bool(rows) and len(rows[0]) > 1 and all(len(r) == len(rows[0]) for r in rows)


def _sniff(text: str) -> tuple[str, str]:
    """Return the delimiter of a CSV text and how it was chosen.

    :class:`csv.Sniffer` proposes one among :data:`DELIMITERS`; it is kept when
    the first rows split consistently with it, else the first delimiter that
    does is taken, else the one that splits the header into most fields, else
    ``,``; a row that then splits unevenly is an error that names the
    delimiter tried and suggests ``delimiter=``.
    """
    sample = text[:_SAMPLE_CHARS]
    truncated = len(text) > _SAMPLE_CHARS
    try:
        proposed = csv.Sniffer().sniff(sample, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        proposed = ""
    if proposed and _consistent(sample, proposed, truncated):
        return proposed, "sniffed"
    for candidate in DELIMITERS:
        if _consistent(sample, candidate, truncated):
            return candidate, "sniffed"
    first = sample.splitlines()[0] if sample.strip() else ""
    widest = max(DELIMITERS, key=lambda d: len(next(csv.reader([first], delimiter=d), [])))
    if len(next(csv.reader([first], delimiter=widest), [])) > 1:
        return widest, "sniffed from the header; no delimiter splits every row alike"
    return ",", "the default; sniffing found no delimiter"


def _read_csv(path: Path, text: str, delimiter: str, how: str) -> _Rows:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
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
                others = [d for d in DELIMITERS if d != delimiter]
                raise InvalidInputError(
                    f"Each row must have {len(header)} fields like the header. "
                    f"Got {len(cells)} instead. The delimiter tried was {delimiter!r} ({how}); "
                    f"if the file uses another, set delimiter= (one of {others}).",
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


def delimiter_hint(available: list[str]) -> str:
    """Return a sentence suggesting ``delimiter=`` when a CSV header was read as one column."""
    if len(available) == 1 and any(d in available[0] for d in DELIMITERS):
        return (
            " The header was read as one column: does the file use another delimiter? "
            f"Set delimiter= (one of {DELIMITERS})."
        )
    return ""
