"""The files of a run's tables, on a local folder or through ``pyarrow.fs``: one seam, two kinds.

A table ``T`` is ``T.parquet`` (after compaction) plus the parts in
``T.parts/``, named ``<UTC time>-<8 hex>.parquet`` so that their names sort
in the order they were written. :class:`LocalFiles` is the local or shared
POSIX folder (:func:`~realitycheck.store.write_atomically` and
:func:`~realitycheck.store.atomic_file` per write);
:class:`RemoteFiles` is a :class:`~realitycheck.store._fs.RemoteFolder`
(one atomic object PUT per write, no rename). Both list the same names, so
:class:`~realitycheck.store.RunStore` reads and resumes the same way on either.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from realitycheck.store._atomic import atomic_file, write_atomically
from realitycheck.store._fs import RemoteFolder
from realitycheck.store._read import Source

__all__ = ["LocalFiles", "MANIFEST", "RemoteFiles", "TableFiles", "part_name"]

MANIFEST = "manifest.json"


def part_name(table: str) -> str:
    """A new part's name relative to the run: ``T.parts/<UTC time>-<8 hex>.parquet``."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    return f"{table}.parts/{stamp}-{uuid.uuid4().hex[:8]}.parquet"


def _write_table(path: Path, table: pa.Table) -> None:
    with atomic_file(path) as tmp:
        pq.write_table(table, tmp)


class TableFiles(Protocol):
    """What the store does with its files; every write is atomic."""

    def read_manifest(self) -> bytes | None:
        """The bytes of ``manifest.json``, or ``None`` for a new run."""

    def write_manifest(self, data: bytes) -> None:
        """Replace ``manifest.json``."""

    def table(self, table: str) -> Source | None:
        """The compacted file of ``table``, if there is one."""

    def parts(self, table: str) -> list[Source]:
        """The parts of ``table``, oldest first."""

    def write_part(self, table: str, rows: pa.Table) -> None:
        """Write ``rows`` as a new part of ``table``."""

    def write_table(self, table: str, rows: pa.Table) -> None:
        """Replace the compacted file of ``table`` with ``rows``."""

    def promote(self, part: Source, table: str) -> None:
        """Make ``part`` the compacted file of ``table`` (which has none)."""

    def delete(self, files: list[Source]) -> None:
        """Delete ``files``; one already gone is no error."""

    def tables(self) -> list[str]:
        """The names of the tables present."""


class LocalFiles:
    """The files of a run folder on a local or shared POSIX file system."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read_manifest(self) -> bytes | None:
        """The bytes of ``manifest.json``, or ``None`` for a new run."""
        path = self.path / MANIFEST
        return path.read_bytes() if path.exists() else None

    def write_manifest(self, data: bytes) -> None:
        """Replace ``manifest.json``."""
        write_atomically(self.path / MANIFEST, data)

    def table(self, table: str) -> Source | None:
        """The compacted file of ``table``, if there is one."""
        path = self.path / f"{table}.parquet"
        return path if path.exists() else None

    def parts(self, table: str) -> list[Source]:
        """The parts of ``table``, oldest first."""
        folder = self.path / f"{table}.parts"
        return list(sorted(folder.glob("*.parquet"))) if folder.is_dir() else []

    def write_part(self, table: str, rows: pa.Table) -> None:
        """Write ``rows`` as a new part of ``table``."""
        (self.path / f"{table}.parts").mkdir(exist_ok=True)
        _write_table(self.path / part_name(table), rows)

    def write_table(self, table: str, rows: pa.Table) -> None:
        """Replace the compacted file of ``table`` with ``rows``."""
        _write_table(self.path / f"{table}.parquet", rows)

    def promote(self, part: Source, table: str) -> None:
        """Make ``part`` the compacted file of ``table`` (which has none)."""
        os.replace(str(part), self.path / f"{table}.parquet")

    def delete(self, files: list[Source]) -> None:
        """Delete ``files``; one already gone is no error."""
        for file in files:
            Path(str(file)).unlink(missing_ok=True)

    def tables(self) -> list[str]:
        """The names of the tables present."""
        names = {p.stem for p in self.path.glob("*.parquet")}
        names |= {p.name[: -len(".parts")] for p in self.path.glob("*.parts") if p.is_dir()}
        return sorted(names)


class RemoteFiles:
    """The files of a run on object storage (or any ``pyarrow.fs`` file system).

    A part is written once under its final key (an object PUT is atomic), and
    it is done when its object exists. Promoting a part to the compacted table
    is a copy then a delete: a crash between the two leaves the same rows twice,
    which reading deduplicates by key.
    """

    def __init__(self, folder: RemoteFolder) -> None:
        self.folder = folder

    def read_manifest(self) -> bytes | None:
        """The bytes of ``manifest.json``, or ``None`` for a new run."""
        return self.folder.read_bytes(MANIFEST)

    def write_manifest(self, data: bytes) -> None:
        """Replace ``manifest.json``."""
        self.folder.write_bytes(MANIFEST, data)

    def table(self, table: str) -> Source | None:
        """The compacted file of ``table``, if there is one."""
        name = f"{table}.parquet"
        return self.folder.file(name) if self.folder.exists(name) else None

    def parts(self, table: str) -> list[Source]:
        """The parts of ``table``, oldest first."""
        return [self.folder.file(n) for n in self.folder.listing(f"{table}.parts", ".parquet")]

    def write_part(self, table: str, rows: pa.Table) -> None:
        """Write ``rows`` as a new part of ``table``."""
        self.folder.write_table(part_name(table), rows)

    def write_table(self, table: str, rows: pa.Table) -> None:
        """Replace the compacted file of ``table`` with ``rows``."""
        self.folder.write_table(f"{table}.parquet", rows)

    def promote(self, part: Source, table: str) -> None:
        """Make ``part`` the compacted file of ``table`` (which has none)."""
        self.folder.move(self._name(part), f"{table}.parquet")

    def delete(self, files: list[Source]) -> None:
        """Delete ``files``; one already gone is no error."""
        for file in files:
            self.folder.delete(self._name(file))

    def tables(self) -> list[str]:
        """The names of the tables present."""
        names = {n[: -len(".parquet")] for n in self.folder.listing("", ".parquet")}
        names |= {n[: -len(".parts")] for n in self.folder.folders(".parts")}
        return sorted(names)

    @staticmethod
    def _name(file: Source) -> str:
        return file.name if not isinstance(file, Path) else str(file)
