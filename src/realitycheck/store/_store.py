"""A run folder: one Parquet table per record type, appended in atomic parts.

Layout::

    RUN/
      manifest.json            schema version, config, component specs, versions
      examples.parquet         one table per record type (after compaction)
      labels.parquet
      labels.parts/            parts appended since the last compaction
        000001-<uuid>.parquet

Every write goes to a temporary file in the same folder and is moved into place
with :func:`os.replace`, so a killed process leaves either the old or the new
file, never half of one. A stage appends a part per batch, so a crash loses at
most the batch in flight; :meth:`RunStore.compact` folds the parts into the
table. Reading returns the table plus any parts, later rows replacing earlier
ones with the same key: parts are named by the time they were written, so the
newest row of a key wins (a recomputed label replaces the error it retried).
Parts written by different machines (shards) merge the same way. A file written
before a record gained a field reads as if it held the field's default (for
``retryable``: ``False``, a permanent error).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from realitycheck.errors import InvalidInputError, RunFolderError
from realitycheck.records import (
    MetricResult,
    R,
    Record,
    records_from_rows,
)
from realitycheck.store._arrays import from_numpy, to_numpy
from realitycheck.store._columns import (
    _RECORD_TYPES,
    record_schema,
    records_table,
    scrubbed_table,
)
from realitycheck.store._manifest import SCHEMA_VERSION, package_versions, scrub_secrets
from realitycheck.store._secrets import register_from_specs, scrub

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunStore", "atomic_write_bytes", "unreadable"]


def _defaults(cls: type[Any]) -> dict[str, Any]:
    """Return the fields of a record type that have a plain default, with it."""
    return {
        f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }


def unreadable(path: Path, exc: BaseException) -> RunFolderError:
    """Return the error for a run file that cannot be read, naming it and the way out."""
    run = path.parent.parent if path.parent.name.endswith(".parts") else path.parent
    return RunFolderError(
        f"This part of the run cannot be read ({type(exc).__name__}: {exc}). "
        f"Run `realitycheck check --run {run}` to list every damaged part; with --repair "
        "it moves them to quarantine/ and the next stages recompute what they held.",
        path=path,
    )


_READ_ERRORS = (pa.ArrowException, OSError, ValueError)


def _read_table(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Read a Parquet file, turning any read failure into :func:`unreadable`."""
    try:
        with pq.ParquetFile(path) as file:
            return file.read(columns=None if columns is None else list(columns))
    except _READ_ERRORS as exc:
        raise unreadable(path, exc) from None


def _read_part(path: Path, record_type: type[Any] | None, columns: Sequence[str] | None) -> Any:
    """Read one file as a DataFrame, adding the defaults of fields it was written without."""
    try:
        names = pq.read_schema(path).names
    except _READ_ERRORS as exc:
        raise unreadable(path, exc) from None
    wanted = None if columns is None else [c for c in columns if c in names]
    df = _read_table(path, wanted).to_pandas()
    if record_type is not None:
        for name, default in _defaults(record_type).items():
            if name not in df.columns and (columns is None or name in columns):
                df[name] = default
    return df


def _read_arrow_part(path: Path, record_type: type[Any], names: Sequence[str]) -> pa.Table:
    """Read ``names`` of one file in the record type's schema, adding defaults of missing fields."""
    try:
        present = set(pq.read_schema(path).names)
    except _READ_ERRORS as exc:
        raise unreadable(path, exc) from None
    schema, defaults = record_schema(record_type), _defaults(record_type)
    table = _read_table(path, [n for n in names if n in present])
    columns = []
    for name in names:
        kind = schema.field(name).type
        if name in present:
            columns.append(table.column(name).cast(kind))
        elif defaults.get(name) is not None:
            columns.append(pa.array([defaults[name]] * table.num_rows, kind))
        else:
            columns.append(pa.nulls(table.num_rows, kind))
    return pa.table(columns, names=list(names))


def _to_table(records: Sequence[Record]) -> pa.Table:
    """Records (of one type) as an Arrow table, with secrets scrubbed from every text field.

    Errors, raw replies, meta and specs lose configured keys and key-shaped
    strings; other texts (model outputs, dataset fields) lose configured keys only.
    Each distinct text is scrubbed once per call (a spec repeats on every record).
    """
    return scrubbed_table(records_table(records), type(records[0]).table)


def _last_of_each_key(table: pa.Table, key: Sequence[str]) -> pa.Array:
    """Positions of the last row of each distinct ``key`` tuple, in table order."""
    code = np.zeros(table.num_rows, dtype=np.int64)
    for name in key:
        encoded = table.column(name).combine_chunks().dictionary_encode()
        size = len(encoded.dictionary) + 1  # a null is one more value
        indices = to_numpy(encoded.indices, fill=size - 1).astype(np.int64)
        # Renumber the pairs so far densely, so that the codes never overflow.
        code = np.unique(code * size + indices, return_inverse=True)[1].reshape(-1)
    # np.unique on the reversed codes gives each key's last row first seen from the end.
    _, first_from_end = np.unique(code[::-1], return_index=True)
    last = np.sort(table.num_rows - 1 - first_from_end)
    return from_numpy(last.astype(np.int64))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and :func:`os.replace`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_write_table(path: Path, table: pa.Table) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunStore:
    """The folder of one run.

    Args:
        path: The run folder; created if missing.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise InvalidInputError(
                f"The run folder must be a directory. Got a file at {self.path} instead."
            )
        self.path.mkdir(parents=True, exist_ok=True)
        manifest = self.read_manifest()
        if manifest.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
            raise InvalidInputError(
                f"The run at {self.path} has schema version {manifest['schema_version']}; "
                f"this realitycheck reads version {SCHEMA_VERSION}.",
                path=self.path / "manifest.json",
                field="schema_version",
            )

    # -- manifest -------------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path:
        """Path of ``manifest.json``."""
        return self.path / "manifest.json"

    def read_manifest(self) -> dict[str, Any]:
        """Return the manifest, or an empty dict for a new run."""
        if not self.manifest_path.exists():
            return {}
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunFolderError(
                f"manifest.json is not valid JSON: {exc.msg}. Run `realitycheck check --run "
                f"{self.path}` to see what else is damaged.",
                path=self.manifest_path,
                line=exc.lineno,
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise unreadable(self.manifest_path, exc) from None
        if not isinstance(data, dict):
            raise InvalidInputError(
                "manifest.json must hold a JSON object.", path=self.manifest_path
            )
        return data

    def update_manifest(
        self,
        *,
        config: Mapping[str, Any] | None = None,
        components: Mapping[str, Mapping[str, Any]] | None = None,
        datasets: Mapping[str, Mapping[str, Any]] | None = None,
        last_run: Mapping[str, Mapping[str, int]] | None = None,
        notes: Iterable[str] = (),
        forget_datasets: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Merge new information into the manifest and write it atomically.

        ``last_run`` maps a component key to what its stage did the last time it
        ran (``computed``, ``reused``, ``retried``); each key's entry is replaced.
        ``forget_datasets`` removes those dataset keys' entries (a replaced dataset).
        Secrets never reach the file: entries whose key looks secret (api keys, tokens,
        passwords) are redacted, and every text is scrubbed (:mod:`._secrets`).
        """
        register_from_specs([config or {}, components or {}])  # their api_key_env values
        manifest = self.read_manifest()
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        manifest.setdefault("schema_version", SCHEMA_VERSION)
        manifest.setdefault("created", now)
        manifest["updated"] = now
        manifest["versions"] = package_versions()
        if config:
            manifest.setdefault("config", {}).update(scrub_secrets(dict(config)))
        if components:
            manifest.setdefault("components", {}).update(scrub_secrets(dict(components)))
        for key in forget_datasets:
            manifest.get("datasets", {}).pop(key, None)
        if datasets:
            manifest.setdefault("datasets", {}).update(scrub_secrets(dict(datasets)))
        if last_run:
            manifest.setdefault("last_run", {}).update(scrub_secrets(dict(last_run)))
        existing = manifest.setdefault("notes", [])
        existing.extend(n for n in notes if n not in existing)
        manifest = scrub(manifest)
        text = json.dumps(manifest, indent=2, sort_keys=True, default=str)
        atomic_write_bytes(self.manifest_path, text.encode("utf-8"))
        return manifest

    # -- tables ---------------------------------------------------------------------------

    def _table_path(self, table: str) -> Path:
        return self.path / f"{table}.parquet"

    def _parts_dir(self, table: str) -> Path:
        return self.path / f"{table}.parts"

    def _part_paths(self, table: str) -> list[Path]:
        parts = self._parts_dir(table)
        return sorted(parts.glob("*.parquet")) if parts.is_dir() else []

    def append(self, records: Sequence[Record], *, table: str | None = None) -> None:
        """Store ``records`` as a new part of their table (atomic; no-op when empty)."""
        if not records:
            return
        self.append_table(table or type(records[0]).table, records_table(records))

    def append_table(self, table: str, rows: pa.Table) -> None:
        """Store ``rows`` (in the table's schema) as a new part of ``table``, secrets scrubbed.

        The same part :meth:`append` writes for the records those rows hold
        (atomic; no-op when empty), for a stage whose component returned columns.
        """
        if not rows.num_rows:
            return
        parts = self._parts_dir(table)
        parts.mkdir(exist_ok=True)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
        path = parts / f"{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        _atomic_write_table(path, scrubbed_table(rows, table))

    def frame(self, table: str, *, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Return a table as a DataFrame: the compacted file plus parts, deduplicated by key.

        Args:
            table: The table's name.
            columns: Read only these columns (the key columns are always read); all by default.
        """
        import pandas as pd

        record_type = _RECORD_TYPES.get(table.split(".")[0])
        fallback = record_type or MetricResult
        if columns is not None:
            columns = list(dict.fromkeys([*fallback.key, *columns]))
        paths = [p for p in [self._table_path(table)] if p.exists()] + self._part_paths(table)
        if not paths:
            names = columns or [f for f in fallback.__dataclass_fields__]
            return pd.DataFrame(columns=names)
        frames = [_read_part(p, record_type, columns) for p in paths]
        df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        key = [k for k in fallback.key if k in df.columns]
        return df.drop_duplicates(subset=key, keep="last").reset_index(drop=True)

    def arrow(self, table: str, *, columns: Sequence[str] | None = None) -> pa.Table:
        """Return a table as Arrow columns: the compacted file plus parts, deduplicated by key.

        The same rows, in the same order, as :meth:`frame` (the newest row of a
        key wins), with no pandas or Python objects in between; fields a file
        was written without read as their default.

        Args:
            table: The table's name (a record type's table).
            columns: Read only these columns (the key columns are always read); all by default.
        """
        record_type = _RECORD_TYPES[table.split(".")[0]]
        names = [f.name for f in dataclasses.fields(record_type)]
        if columns is not None:
            names = list(dict.fromkeys([*record_type.key, *columns]))
        paths = [p for p in [self._table_path(table)] if p.exists()] + self._part_paths(table)
        parts = [_read_arrow_part(p, record_type, names) for p in paths]
        if not parts:
            schema = record_schema(record_type)
            empty = [pa.nulls(0, schema.field(name).type) for name in names]
            return pa.Table.from_arrays(empty, names=names)
        whole = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        last = _last_of_each_key(whole, record_type.key)
        return whole if len(last) == whole.num_rows else whole.take(last)

    def read(self, cls: type[R], *, table: str | None = None) -> list[R]:
        """Return the records of a table."""
        df = self.frame(table or cls.table)
        rows: list[dict[str, Any]] = df.to_dict("records")  # type: ignore[assignment]
        return records_from_rows(cls, rows)

    def keys(self, table: str, columns: Sequence[str]) -> set[tuple[Any, ...]]:
        """Return the set of ``columns`` tuples already stored in a table."""
        paths = [p for p in [self._table_path(table)] if p.exists()] + self._part_paths(table)
        out: set[tuple[Any, ...]] = set()
        for p in paths:
            t = _read_table(p, columns)
            out.update(zip(*(t.column(c).to_pylist() for c in columns), strict=True))
        return out

    def compact(self, table: str) -> None:
        """Fold a table's parts into its single Parquet file, atomically."""
        parts = self._part_paths(table)
        if not parts:
            return
        record_type = _RECORD_TYPES.get(table.split(".")[0])
        if len(parts) == 1 and record_type is not None and not self._table_path(table).exists():
            keys = _read_table(parts[0], list(record_type.key))
            if len(_last_of_each_key(keys, record_type.key)) == keys.num_rows:
                # Each key once: the table is that part as it is, so move it into place.
                os.replace(parts[0], self._table_path(table))
                return
        if table.split(".")[0] in _RECORD_TYPES:
            rows = self.arrow(table)  # the rows of frame(), in the record type's schema
        else:
            schema = record_schema(MetricResult)
            rows = pa.Table.from_pandas(self.frame(table), schema=schema, preserve_index=False)
        _atomic_write_table(self._table_path(table), rows)
        for p in parts:
            p.unlink(missing_ok=True)

    def replace(self, records: Sequence[Record], *, table: str | None = None) -> None:
        """Replace a whole table with ``records`` (used for derived tables like metrics).

        An empty ``records`` removes the table; ``table`` is then required.
        """
        if not records and table is None:
            raise InvalidInputError("Replacing a table with no records needs its name.")
        name = table or type(records[0]).table
        for p in self._part_paths(name):
            p.unlink(missing_ok=True)
        if records:
            _atomic_write_table(self._table_path(name), _to_table(records))
        else:
            self._table_path(name).unlink(missing_ok=True)

    def drop(self, table: str, where: Callable[[pd.DataFrame], pd.Series]) -> int:
        """Remove the rows of a table for which ``where(frame)`` is true; return how many.

        The table is compacted and rewritten atomically without them.
        """
        df = self.frame(table)
        if df.empty:
            return 0
        gone = where(df).fillna(False).astype(bool)
        if not gone.any():
            return 0
        schema = record_schema(_RECORD_TYPES.get(table.split(".")[0], MetricResult))
        kept = df[~gone].reset_index(drop=True)
        _atomic_write_table(
            self._table_path(table), pa.Table.from_pandas(kept, schema=schema, preserve_index=False)
        )
        for p in self._part_paths(table):
            p.unlink(missing_ok=True)
        return int(gone.sum())

    def tables(self) -> list[str]:
        """Return the names of the tables present in the run."""
        names = {p.stem for p in self.path.glob("*.parquet")}
        names |= {p.name[: -len(".parts")] for p in self.path.glob("*.parts") if p.is_dir()}
        return sorted(names)
