"""Reading one Parquet file of a run (a table or a part), local or remote, with clear failures.

A *source* is a local :class:`~pathlib.Path` or a
:class:`~realitycheck.store._fs.RemoteFile`; each is opened once (its footer
read once) per read. A file written before a record gained a field reads as
if it held the field's default, and one written under an older schema reads
under the current column names (:data:`~realitycheck.store._manifest.RENAMED`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from realitycheck.errors import RunFolderError
from realitycheck.store._columns import record_schema
from realitycheck.store._fs import RemoteFile
from realitycheck.store._manifest import RENAMED

__all__ = [
    "Source",
    "defaults",
    "read_arrow_part",
    "read_part",
    "read_table",
    "renamed_columns",
    "unreadable",
    "upgraded",
]

Source = Path | RemoteFile

_READ_ERRORS = (pa.ArrowException, OSError, ValueError)


def defaults(cls: type[Any]) -> dict[str, Any]:
    """Return the fields of a record type that have a plain default, with it."""
    return {
        f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }


def unreadable(path: Source, exc: BaseException) -> RunFolderError:
    """Return the error for a run file that cannot be read, naming it and the way out."""
    if isinstance(path, RemoteFile):
        return RunFolderError(
            f"This part of the run cannot be read ({type(exc).__name__}: {exc}). Run "
            "`realitycheck check --run URI`, with the run's URI as you gave it, to list "
            "every damaged part; with --repair it moves them under the run's quarantine/ "
            "and the next stages recompute what they held.",
            path=str(path),
        )
    run = path.parent.parent if path.parent.name.endswith(".parts") else path.parent
    return RunFolderError(
        f"This part of the run cannot be read ({type(exc).__name__}: {exc}). "
        f"Run `realitycheck check --run {run}` to list every damaged part; with --repair "
        "it moves them to quarantine/ and the next stages recompute what they held.",
        path=path,
    )


def _open(source: Source) -> pq.ParquetFile:
    return source.parquet() if isinstance(source, RemoteFile) else pq.ParquetFile(source)


def renamed_columns(record_type: type[Any] | None, names: Sequence[str]) -> dict[str, str]:
    """Old name -> current name of each renamed column, for a file written under an older schema.

    ``names`` are the file's columns; a file of the current schema (or of a
    table never renamed) gets ``{}``.
    """
    renames = RENAMED.get(getattr(record_type, "table", ""), {})
    gone = set(renames) - set(renames.values())
    return dict(renames) if gone & set(names) else {}


def upgraded(table: pa.Table, record_type: type[Any] | None) -> pa.Table:
    """``table``, read from one file of ``record_type``'s table, under the current column names."""
    renames = renamed_columns(record_type, table.column_names)
    if not renames:
        return table
    return table.rename_columns([renames.get(n, n) for n in table.column_names])


def _read(
    source: Source, wanted: Sequence[str] | None, record_type: type[Any] | None = None
) -> tuple[list[str], pa.Table]:
    """The column names a file holds, and the ``wanted`` ones of them (all when ``None``).

    Both under the current names of ``record_type``'s columns (see :func:`upgraded`).
    """
    try:
        with _open(source) as file:
            stored = list(file.schema_arrow.names)
            renames = renamed_columns(record_type, stored)
            names = [renames.get(n, n) for n in stored]
            keep = None if wanted is None else [c for c in wanted if c in names]
            if renames and keep is not None:
                old = {new: former for former, new in renames.items()}
                keep = [old.get(c, c) for c in keep]
            return names, upgraded(file.read(columns=keep), record_type)
    except _READ_ERRORS as exc:
        raise unreadable(source, exc) from None


def read_table(source: Source, columns: Sequence[str] | None = None) -> pa.Table:
    """Read a Parquet file, turning any read failure into :func:`unreadable`."""
    try:
        with _open(source) as file:
            return file.read(columns=None if columns is None else list(columns))
    except _READ_ERRORS as exc:
        raise unreadable(source, exc) from None


def read_part(source: Source, record_type: type[Any] | None, columns: Sequence[str] | None) -> Any:
    """Read one file as a DataFrame, adding the defaults of fields it was written without."""
    _, table = _read(source, columns, record_type)
    df = table.to_pandas()
    if record_type is not None:
        for name, default in defaults(record_type).items():
            if name not in df.columns and (columns is None or name in columns):
                df[name] = default
    return df


def read_arrow_part(source: Source, record_type: type[Any], names: Sequence[str]) -> pa.Table:
    """Read ``names`` of one file in the record type's schema, adding defaults of missing fields."""
    present, table = _read(source, names, record_type)
    schema, default = record_schema(record_type), defaults(record_type)
    columns = []
    for name in names:
        kind = schema.field(name).type
        if name in present:
            columns.append(table.column(name).cast(kind))
        elif default.get(name) is not None:
            columns.append(pa.array([default[name]] * table.num_rows, kind))
        else:
            columns.append(pa.nulls(table.num_rows, kind))
    return pa.table(columns, names=list(names))
