"""The files :func:`~realitycheck.store.check_run` reads and repairs: a folder, or object storage.

Both kinds name a file by its path inside the run (``labels.parts/x.parquet``)
and show it as the user knows it: a local path, or the run's URI (credentials
redacted) followed by that name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from realitycheck.store._files import LocalFiles, RemoteFiles, TableFiles
from realitycheck.store._fs import RemoteFolder

__all__ = ["CheckedFolder", "LocalRun", "RemoteRun"]


class CheckedFolder(Protocol):
    """What checking and repairing a run needs from where its files are."""

    @property
    def files(self) -> TableFiles:
        """The run's files as the store reads and writes them (its manifest)."""
        ...

    @property
    def location(self) -> Path | str:
        """The run, as it may be printed."""
        ...

    @property
    def lock_target(self) -> Path | RemoteFolder:
        """What :class:`~realitycheck.store.RunLock` holds while repairing."""
        ...

    def shown(self, name: str) -> Path | str:
        """The file ``name`` of the run, as it may be printed."""
        ...

    def table_files(self) -> list[tuple[str, str]]:
        """``(table, name)`` of every Parquet file: compacted tables, then each table's parts."""
        ...

    def read_bytes(self, name: str) -> bytes | None:
        """The bytes of the file ``name``, or ``None`` when it does not exist.

        Raises:
            OSError, RunFolderError: The file could not be fetched (a fault of
                the disk or the network, not of its content).
        """
        ...

    def temporary_files(self) -> list[str]:
        """Files left by an interrupted write, outside ``quarantine/``."""
        ...

    def is_file(self, name: str) -> bool:
        """Whether the file ``name`` exists."""
        ...

    def move(self, name: str, target: str) -> None:
        """Move the file ``name`` to ``target`` (a name in the run)."""
        ...

    def delete(self, name: str) -> None:
        """Delete the file ``name``."""
        ...


class LocalRun:
    """A run folder on this machine (or a shared file system)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files = LocalFiles(path)

    @property
    def location(self) -> Path:
        return self.path

    @property
    def lock_target(self) -> Path:
        return self.path

    def shown(self, name: str) -> Path:
        return self.path / name

    def table_files(self) -> list[tuple[str, str]]:
        files = [(p.stem, p.name) for p in sorted(self.path.glob("*.parquet"))]
        for parts in sorted(self.path.glob("*.parts")):
            if parts.is_dir():
                table = parts.name[: -len(".parts")]
                files += [
                    (table, f"{parts.name}/{p.name}") for p in sorted(parts.glob("*.parquet"))
                ]
        return files

    def read_bytes(self, name: str) -> bytes | None:
        path = self.path / name
        return path.read_bytes() if path.exists() else None

    def temporary_files(self) -> list[str]:
        return sorted(
            str(p.relative_to(self.path))
            for p in self.path.rglob(".*.tmp")
            if "quarantine" not in p.parts
        )

    def is_file(self, name: str) -> bool:
        return (self.path / name).is_file()

    def move(self, name: str, target: str) -> None:
        dest = self.path / target
        dest.parent.mkdir(parents=True, exist_ok=True)
        (self.path / name).replace(dest)

    def delete(self, name: str) -> None:
        (self.path / name).unlink(missing_ok=True)


class RemoteRun:
    """A run on object storage (or ``file://``), through its :class:`RemoteFolder`."""

    def __init__(self, folder: RemoteFolder) -> None:
        self.folder = folder
        self.files = RemoteFiles(folder)

    @property
    def location(self) -> str:
        return self.folder.shown

    @property
    def lock_target(self) -> RemoteFolder:
        return self.folder

    def shown(self, name: str) -> str:
        return self.folder.shown_name(name)

    def table_files(self) -> list[tuple[str, str]]:
        files = [(n[: -len(".parquet")], n) for n in self.folder.listing("", ".parquet")]
        for parts in self.folder.folders(".parts"):
            table = parts[: -len(".parts")]
            files += [(table, n) for n in self.folder.listing(parts, ".parquet")]
        return files

    def read_bytes(self, name: str) -> bytes | None:
        return self.folder.read_bytes(name)

    def temporary_files(self) -> list[str]:
        """Those of a ``file://`` run (its writes go through a rename); none on object storage."""
        return LocalRun(Path(self.folder.root)).temporary_files() if self.folder.is_local else []

    def is_file(self, name: str) -> bool:
        return self.folder.exists(name)

    def move(self, name: str, target: str) -> None:
        self.folder.move(name, target)

    def delete(self, name: str) -> None:
        self.folder.delete(name)
