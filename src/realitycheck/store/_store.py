"""A run folder: one Parquet table per record type, appended in atomic parts.

Layout::

    RUN/
      manifest.json            schema version, config, component specs, versions
      examples.parquet         one table per record type (after compaction)
      labels.parquet
      labels.parts/            parts appended since the last compaction
        20260101T000000000000-<8 hex>.parquet

The run is a local (or shared POSIX) folder, or a URI that ``pyarrow.fs``
opens (``s3://bucket/prefix``; :mod:`._fs`). On a folder every write goes to
a temporary file in the same folder and is moved into place with
:func:`os.replace`; on object storage every write is one atomic PUT under the
final key. Either way a killed process leaves the old or the new file, never
half of one. A stage appends a part per batch, so a crash loses at most the
batch in flight; :meth:`RunStore.compact` folds the parts into the table.
Reading returns the table plus any parts, later rows replacing earlier ones
with the same key: parts are named by the time they were written, so the
newest row of a key wins (a recomputed label replaces the error it retried).
Parts written by different machines (shards) merge the same way. A file written
before a record gained a field reads as if it held the field's default (for
``retryable``, ``failed``: ``False``, a permanent error; ``unreadable``: 0),
and a run of an older schema version reads under the current column names
(an agreement table of schema 1: ``detector``, ``labeler`` read as ``labeler``,
``reference``; see :data:`~realitycheck.store._manifest.SCHEMA_VERSION`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from realitycheck.errors import InvalidInputError, RunFolderError
from realitycheck.records import (
    MetricResult,
    R,
    Record,
    records_from_rows,
)
from realitycheck.store._arrays import from_numpy, from_texts, to_numpy
from realitycheck.store._columns import (
    _RECORD_TYPES,
    record_schema,
    records_table,
    scrubbed_table,
)
from realitycheck.store._files import MANIFEST, LocalFiles, RemoteFiles, TableFiles
from realitycheck.store._fs import RemoteFile, RemoteFolder, remote_folder
from realitycheck.store._manifest import (
    READABLE_VERSIONS,
    SCHEMA_VERSION,
    package_versions,
    scrub_secrets,
)
from realitycheck.store._read import (
    Source,
    read_arrow_part,
    read_part,
    read_table,
    unreadable,
)
from realitycheck.store._secrets import register_from_specs, scrub

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunStore", "unreadable"]


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


class RunStore:
    """The folder of one run.

    Args:
        path: The run folder, created if missing: a local path, or a URI that
            ``pyarrow.fs`` opens (``s3://bucket/prefix``, ``file:///abs/folder``)
            or its opened ``RemoteFolder`` (e.g. :attr:`RunLock.folder`),
            whose bucket must exist. On object storage the parts, the tables,
            the manifest and trained detectors' weights live there; what
            needs a local folder (study results unless given a local folder of
            their own, the demo) raises
            :class:`~realitycheck.errors.RunFolderError` through :attr:`path`.

    Raises:
        InvalidInputError: A file where the folder should be, a URI pyarrow cannot
            open, or a run of a schema version this realitycheck does not read
            (a newer one).
        RunFolderError: The bucket is missing or the endpoint unreachable.
    """

    def __init__(self, path: str | Path | RemoteFolder) -> None:
        self._remote: RemoteFolder | None = remote_folder(path)
        self._files: TableFiles
        if self._remote is not None:
            self._remote.check()
            self._path: Path | None = None
            self._files = RemoteFiles(self._remote)
        else:
            self._path = Path(str(path))
            if self._path.exists() and not self._path.is_dir():
                raise InvalidInputError(
                    f"The run folder must be a directory. Got a file at {self._path} instead."
                )
            self._path.mkdir(parents=True, exist_ok=True)
            self._files = LocalFiles(self._path)
        manifest = self.read_manifest()
        if manifest.get("schema_version", SCHEMA_VERSION) not in READABLE_VERSIONS:
            readable = ", ".join(map(str, READABLE_VERSIONS))
            raise InvalidInputError(
                f"The run at {self.location} has schema version {manifest['schema_version']}; "
                f"this realitycheck reads versions {readable} (a run that a newer "
                "realitycheck wrote needs that version).",
                path=self.manifest_path,
                field="schema_version",
            )

    @property
    def location(self) -> str:
        """Where the run is, as it may be printed: its folder, or its URI with secrets redacted."""
        return self._remote.shown if self._remote is not None else str(self._path)

    @property
    def remote(self) -> RemoteFolder | None:
        """The run's folder on object storage, or ``None`` for a local folder."""
        return self._remote

    @property
    def path(self) -> Path:
        """The local run folder.

        Raises:
            RunFolderError: The run is on object storage, and what asked needs local files.
        """
        if self._path is None:
            raise RunFolderError(
                f"This needs the run on a local or shared folder; {self.location} is on object "
                "storage, where realitycheck supports ingest, generate, label, detect, "
                "evaluate, study, report, check and run CONFIG (tables, study results and "
                "the report go to a local folder: --report-dir of evaluate, study and report, "
                "[run] report_dir). Copy the run to a folder for the rest.",
                path=self.location,
            )
        return self._path

    # -- manifest -------------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path | str:
        """Where ``manifest.json`` is: a local path, or (on object storage) its redacted URI."""
        where = self._manifest_file()
        return where if isinstance(where, Path) else str(where)

    def _manifest_file(self) -> Path | RemoteFile:
        return self.path / MANIFEST if self._remote is None else self._remote.file(MANIFEST)

    def read_manifest(self) -> dict[str, Any]:
        """Return the manifest, or an empty dict for a new run."""
        where = self.manifest_path
        try:
            raw = self._files.read_manifest()
            if raw is None:
                return {}
            data = json.loads(raw.decode("utf-8"))
        except json.JSONDecodeError as exc:
            raise RunFolderError(
                f"manifest.json is not valid JSON: {exc.msg}. Run `realitycheck check --run "
                f"{self.location}` to see what else is damaged.",
                path=where,
                line=exc.lineno,
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise unreadable(self._manifest_file(), exc) from None
        if not isinstance(data, dict):
            raise InvalidInputError("manifest.json must hold a JSON object.", path=where)
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
        # The newest layout written to the run: an older realitycheck refuses it.
        manifest["schema_version"] = SCHEMA_VERSION
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
        self._files.write_manifest(text.encode("utf-8"))
        return manifest

    # -- tables ---------------------------------------------------------------------------

    def _sources(self, table: str) -> list[Source]:
        """The compacted file of ``table`` (if any) then its parts, oldest first."""
        whole = self._files.table(table)
        return ([] if whole is None else [whole]) + self._files.parts(table)

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
        self._files.write_part(table, scrubbed_table(rows, table))

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
        paths = self._sources(table)
        if not paths:
            names = columns or [f for f in fallback.__dataclass_fields__]
            return pd.DataFrame(columns=names)
        frames = [read_part(p, record_type, columns) for p in paths]
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
        whole_file = self._files.table(table)
        paths = ([] if whole_file is None else [whole_file]) + self._files.parts(table)
        parts = [read_arrow_part(p, record_type, names) for p in paths]
        if not parts:
            schema = record_schema(record_type)
            empty = [pa.nulls(0, schema.field(name).type) for name in names]
            return pa.Table.from_arrays(empty, names=names)
        if len(paths) == 1 and whole_file is not None:
            return parts[0]  # one row per key already (see compact)
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
        paths = self._sources(table)
        out: set[tuple[Any, ...]] = set()
        for p in paths:
            t = read_table(p, columns)
            out.update(zip(*(t.column(c).to_pylist() for c in columns), strict=True))
        return out

    def compact(self, table: str) -> None:
        """Fold a table's parts into its single Parquet file, atomically.

        The file holds one row per key, so :meth:`arrow` reads it alone as it
        is. Only the driver compacts, after its stage's workers are done.
        """
        parts = self._files.parts(table)
        if not parts:
            return
        record_type = _RECORD_TYPES.get(table.split(".")[0])
        if len(parts) == 1 and record_type is not None and self._files.table(table) is None:
            keys = read_table(parts[0], list(record_type.key))
            if len(_last_of_each_key(keys, record_type.key)) == keys.num_rows:
                # Each key once: the table is that part as it is, so move it into place.
                self._files.promote(parts[0], table)
                return
        if table.split(".")[0] in _RECORD_TYPES:
            rows = self.arrow(table)  # the rows of frame(), in the record type's schema
        else:
            schema = record_schema(MetricResult)
            rows = pa.Table.from_pandas(self.frame(table), schema=schema, preserve_index=False)
        self._files.write_table(table, rows)
        self._files.delete(parts)

    def replace(self, records: Sequence[Record], *, table: str | None = None) -> None:
        """Replace a whole table with ``records`` (used for derived tables like metrics).

        Its parts are deleted, then its file is written as :meth:`write_file`
        writes one, secrets scrubbed. An empty ``records`` removes the table;
        ``table`` is then required.
        """
        if not records and table is None:
            raise InvalidInputError("Replacing a table with no records needs its name.")
        name = table or type(records[0]).table
        self._files.delete(self._files.parts(name))
        self.write_file(name, _to_table(records) if records else None)

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
        parts = self._files.parts(table)
        self._files.write_table(
            table, pa.Table.from_pandas(kept, schema=schema, preserve_index=False)
        )
        self._files.delete(parts)
        return int(gone.sum())

    def drop_matching(self, table: str, column: str, values: pa.Array | Sequence[str]) -> int:
        """Remove the rows of a record table whose ``column`` is one of ``values``; return how many.

        Arrow throughout (no pandas, no Python loop over rows): the key columns
        are read first, and only when a row matches is the table rewritten
        without them, compacted and atomically, on a folder or on object
        storage alike (as :meth:`compact` writes it).
        """
        wanted = values if isinstance(values, pa.Array) else from_texts(list(values))
        if not len(wanted):
            return 0
        parts = self._files.parts(table)
        keys = self.arrow(table, columns=[column])
        if not pc.any(pc.is_in(keys.column(column), value_set=wanted)).as_py():
            return 0
        rows = self.arrow(table)
        kept = rows.filter(pc.invert(pc.is_in(rows.column(column), value_set=wanted)))
        self._files.write_table(table, kept)
        self._files.delete(parts)
        return rows.num_rows - kept.num_rows

    def read_file(self, name: str) -> pa.Table | None:
        """Read ``NAME.parquet``, a whole-file table of the run without parts, or ``None``.

        For tables the driver alone rewrites as a whole after each batch
        (``generation_errors``), on a folder or on object storage alike.
        """
        source = self._files.table(name)
        return None if source is None else read_table(source)

    def write_file(self, name: str, rows: pa.Table | None) -> None:
        """Replace ``NAME.parquet`` with ``rows`` atomically; ``None`` deletes it."""
        if rows is not None:
            self._files.write_table(name, rows)
            return
        source = self._files.table(name)
        self._files.delete([] if source is None else [source])

    def tables(self) -> list[str]:
        """Return the names of the tables present in the run."""
        return self._files.tables()
