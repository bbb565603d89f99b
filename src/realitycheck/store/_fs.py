"""Where a run lives: a local folder, or a folder on object storage reached through ``pyarrow.fs``.

A run location given as a plain path (``runs/demo``, a :class:`~pathlib.Path`)
is a local or shared POSIX folder, and the store keeps its own code for it
(:func:`~realitycheck.store.write_atomically`, ``O_EXCL`` lock). A location written as
a URI that :meth:`pyarrow.fs.FileSystem.from_uri` understands (``s3://bucket/prefix``,
``gs://…``, ``file:///abs/path``) is a :class:`RemoteFolder`: every read,
write, listing and delete of the run goes through that file system.

The guarantees there, and how they differ from a local folder:

- **A part is written once, under its final key.** An object PUT (a single
  request, or a multipart upload completed at close) is atomic: a reader sees
  the whole object or none, so no temporary key and no rename is needed. On a
  ``file://`` location, which is a local folder, the write still goes through a
  temporary file and a rename, as there a file is visible while it is written.
- **A part is done when its object exists.** Resume lists the keys under
  ``TABLE.parts/`` and computes only the records no part holds, as on a local
  folder. An object that exists but cannot be read as Parquet (a truncated
  upload some other tool made) is reported by name when read. S3 lists an
  object as soon as its PUT returns (strong read-after-write consistency); a
  store without that could hide a fresh part from a resume, which would then
  only compute its records again. The whole part is serialised in memory
  before its one write starts, so an error mid-write never completes a
  partial object.
- **Only the driver writes the manifest and the lock;** workers write parts only.
- **Secrets in a URI are never shown or stored.** :func:`shown_uri` is the
  form used in every message and record: the user and password part of the
  URI and any secret-named query value are replaced by ``<redacted>``. The
  run's records hold no location at all.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from realitycheck.errors import InvalidInputError, RunFolderError
from realitycheck.store._atomic import write_atomically
from realitycheck.store._secrets import REDACTED, scrub_text

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

__all__ = [
    "RemoteFile",
    "RemoteFolder",
    "is_uri",
    "remote_folder",
    "shown_uri",
]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_SECRET_QUERY = re.compile(r"(key|secret|token|password|passwd|credential)", re.I)


def is_uri(location: str | Path) -> bool:
    """Whether ``location`` is a URI (``scheme://…``) rather than a local path."""
    return isinstance(location, str) and bool(_SCHEME.match(location))


def shown_uri(uri: str) -> str:
    """Return ``uri`` as it may be printed or stored: credentials replaced by ``<redacted>``.

    The ``user:password@`` part and every query value whose name looks secret
    (``access_key``, ``secret_key``, ``session_token`` …) are replaced; the rest
    is scrubbed like any text (:func:`~realitycheck.store.scrub_text`).
    """
    parts = urllib.parse.urlsplit(uri)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(
        f"{name}={REDACTED if _SECRET_QUERY.search(name) else value}"
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    )
    shown = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return scrub_text(shown)


@dataclass(frozen=True)
class RemoteFile:
    """One file of a remote run: its folder and its name relative to the run (``a/b.parquet``)."""

    folder: RemoteFolder
    name: str

    def __str__(self) -> str:
        return self.folder.shown_name(self.name)

    def parquet(self) -> pq.ParquetFile:
        """Open the file for reading as Parquet (a ranged read of its footer, then its columns)."""
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.folder.fs.open_input_file(self.folder.key(self.name)))


class RemoteFolder:
    """A run folder on a ``pyarrow.fs`` file system, addressed by a URI.

    Args:
        uri: The run's URI, e.g. ``s3://bucket/runs/demo`` or
            ``s3://bucket/run?endpoint_override=127.0.0.1:9000&scheme=http``.
            Credentials come from the URI or from the file system's usual
            sources (for S3: ``AWS_ACCESS_KEY_ID`` … and ``~/.aws``).

    Raises:
        InvalidInputError: The URI names no file system pyarrow knows, or no
            bucket / path (raised before anything is read).
    """

    def __init__(self, uri: str) -> None:
        import pyarrow as pa
        import pyarrow.fs as pafs

        self._uri = uri  # kept in memory (and pickled for a worker), never printed
        self.shown = shown_uri(uri)
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme != "file" and not parts.path.strip("/"):
            raise InvalidInputError(
                f"The run location {self.shown} names no folder: give s3://bucket/prefix.",
                field="run",
            )
        try:
            fs, root = pafs.FileSystem.from_uri(uri)
        except (pa.ArrowInvalid, ValueError) as exc:
            raise InvalidInputError(
                f"The run location {self.shown} is not a URI pyarrow.fs can open "
                f"({scrub_text(str(exc))}). Give a local folder, or a URI such as "
                "s3://bucket/prefix or file:///absolute/folder.",
                field="run",
            ) from None
        except OSError as exc:  # e.g. resolving an S3 bucket's region over the network
            raise self._fail("reach", exc) from None
        self.fs: pafs.FileSystem = fs
        self.root = root.rstrip("/")
        self._checked = False  # set by the first check() that passes

    def __reduce__(self) -> tuple[Any, ...]:
        return (RemoteFolder, (self._uri,))

    def __repr__(self) -> str:
        return f"RemoteFolder({self.shown!r})"

    @property
    def is_local(self) -> bool:
        """Whether the file system is the local one (``file://``)."""
        import pyarrow.fs as pafs

        return isinstance(self.fs, pafs.LocalFileSystem)

    def key(self, name: str = "") -> str:
        """The file system path of ``name`` (relative to the run)."""
        return f"{self.root}/{name}" if name else self.root

    def file(self, name: str) -> RemoteFile:
        """The file ``name`` of the run."""
        return RemoteFile(self, name)

    def shown_name(self, name: str) -> str:
        """The file ``name`` of the run as it may be printed: the run's URI without its query."""
        return f"{self.shown.partition('?')[0].rstrip('/')}/{name}"

    def _fail(self, doing: str, exc: BaseException) -> RunFolderError:
        return RunFolderError(
            f"Could not {doing} the run at {self.shown}: {scrub_text(str(exc))}. Check that "
            "the bucket exists, the endpoint is reachable and the credentials allow it.",
            path=self.shown,
        )

    def check(self) -> None:
        """Make sure the run can be reached: its bucket (or parent folder) exists.

        Asked once per object: after a check that passed, a later call (the run's
        lock, then its store, in one command) returns without a request.

        Raises:
            RunFolderError: The bucket is missing or the endpoint cannot be reached.
        """
        import pyarrow.fs as pafs

        if self._checked:
            return
        base = self.root.split("/", 1)[0] if not self.is_local else self.root
        try:
            if self.is_local:
                self.fs.create_dir(self.root, recursive=True)
            info = self.fs.get_file_info(base)
        except OSError as exc:
            raise self._fail("reach", exc) from None
        if info.type != pafs.FileType.Directory:
            raise RunFolderError(
                f"The run at {self.shown} cannot be created: {base!r} "
                f"{'is a file' if info.type == pafs.FileType.File else 'does not exist'}. "
                "Create the bucket first, or give another location.",
                path=self.shown,
            )
        self._checked = True

    def exists(self, name: str) -> bool:
        """Whether the file ``name`` exists."""
        import pyarrow.fs as pafs

        try:
            return bool(self.fs.get_file_info(self.key(name)).type == pafs.FileType.File)
        except OSError as exc:
            raise self._fail(f"look up {name} in", exc) from None

    def read_bytes(self, name: str) -> bytes | None:
        """The content of the file ``name``, or ``None`` when it does not exist."""
        try:
            with self.fs.open_input_stream(self.key(name)) as stream:
                return bytes(stream.read())
        except FileNotFoundError:
            return None
        except OSError as exc:
            if not self.exists(name):
                return None
            raise self._fail(f"read {name} of", exc) from None

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write ``data`` as the file ``name``, atomically (see the module docstring)."""
        if self.is_local:  # a file is visible while it is written: go through a rename
            path = Path(self.key(name))
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(path, data)
            except OSError as exc:
                raise self._fail(f"write {name} of", exc) from None
            return
        try:
            with self.fs.open_output_stream(self.key(name)) as out:  # one PUT: atomic
                out.write(data)
        except OSError as exc:
            raise self._fail(f"write {name} of", exc) from None

    def write_table(self, name: str, table: pa.Table) -> None:
        """Write ``table`` as the Parquet file ``name``, atomically."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        self.write_bytes(name, sink.getvalue().to_pybytes())

    def listing(self, folder: str, suffix: str) -> list[str]:
        """Names (relative to the run) of the files directly in ``folder`` ending in ``suffix``."""
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.key(folder), allow_not_found=True)
        try:
            infos = self.fs.get_file_info(selector)
        except OSError as exc:
            raise self._fail(f"list {folder or 'the top'} of", exc) from None
        start = len(self.root) + 1
        return sorted(
            i.path[start:]
            for i in infos
            if i.type == pafs.FileType.File
            and i.base_name.endswith(suffix)
            and not i.base_name.startswith(".")
        )

    def folders(self, suffix: str) -> list[str]:
        """Names of the folders (key prefixes) directly in the run ending in ``suffix``."""
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.root, allow_not_found=True)
        try:
            infos = self.fs.get_file_info(selector)
        except OSError as exc:
            raise self._fail("list", exc) from None
        return sorted(
            i.base_name
            for i in infos
            if i.type == pafs.FileType.Directory and i.base_name.endswith(suffix)
        )

    def delete(self, name: str) -> None:
        """Delete the file ``name``; nothing when it does not exist."""
        try:
            self.fs.delete_file(self.key(name))
        except FileNotFoundError:
            return
        except OSError as exc:
            if self.exists(name):
                raise self._fail(f"delete {name} of", exc) from None

    def move(self, source: str, target: str) -> None:
        """Move the file ``source`` to ``target`` (on S3 a copy, then a delete of ``source``)."""
        try:
            if self.is_local:  # a folder must exist before a rename into it
                Path(self.key(target)).parent.mkdir(parents=True, exist_ok=True)
            self.fs.move(self.key(source), self.key(target))
        except OSError as exc:
            raise self._fail(f"move {source} to {target} in", exc) from None


def remote_folder(location: str | Path | RemoteFolder) -> RemoteFolder | None:
    """The :class:`RemoteFolder` of a URI location, or ``None`` for a local path."""
    if isinstance(location, RemoteFolder):
        return location
    return RemoteFolder(location) if isinstance(location, str) and is_uri(location) else None
