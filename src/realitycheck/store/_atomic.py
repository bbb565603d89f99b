"""Atomic writes: a file or a folder appears whole under its name, or not at all.

Every file the package writes for keeping (a run's parts and manifest, a
report, trained weights, a downloaded dataset, a cached index or model) goes
through one of these, so the guarantee is written once:

- the content is written to a temporary name in the same folder
  (``.<name>.<8 hex>.tmp``, which :func:`~realitycheck.store.check_run` knows
  as a leftover), flushed and :func:`os.fsync`-ed;
- it is then moved over the name with :func:`os.replace` (atomic on one file
  system), and on POSIX the folder is fsync-ed too, so that an OS crash or
  power cut after the call returns cannot lose the rename;
- on any failure, Ctrl-C included, the temporary file is removed and the old
  file, if any, is left as it was.

A new file gets the mode an ordinary :func:`open` would give it (``0o666``
less the umask), not :func:`tempfile.mkstemp`'s private ``0o600``.

Three forms:

- :func:`write_atomically` for bytes or text in memory;
- :func:`atomic_file` for a writer that needs a path (``pyarrow.parquet.write_table``,
  ``torch.onnx.export``): a context manager yielding the temporary path;
- :func:`atomic_folder` for a writer that fills a folder (a saved index, a
  study's tables): the folder replaces any older one of that name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_file", "atomic_folder", "write_atomically"]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def _temporary(target: Path, ending: str = "tmp") -> Path:
    return target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.{ending}")


def _reserve(target: Path) -> tuple[int, Path]:
    """Create an empty temporary file beside ``target``; return its descriptor and path."""
    while True:
        tmp = _temporary(target)
        try:
            return os.open(tmp, _CREATE, 0o666), tmp
        except FileExistsError:  # 1 in 4 billion; draw another name
            continue


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    """Make the entries of ``folder`` (a rename into it) durable; POSIX only."""
    if os.name != "posix":  # Windows cannot open a folder; its rename is journalled
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems (a few network ones) refuse it for folders
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(fd)


def _commit(tmp: Path, target: Path) -> None:
    os.replace(tmp, target)
    _fsync_folder(target.parent)


def write_atomically(
    path: str | os.PathLike[str], data: bytes | str, *, encoding: str = "utf-8"
) -> None:
    """Write ``data`` to ``path`` atomically: the old file or the new one whole, never a part.

    Args:
        path: The file to write; its folder must exist.
        data: The content; text is encoded with ``encoding``.
        encoding: The encoding of text ``data``.

    Raises:
        OSError: The file could not be written; the old file (if any) is unchanged
            and no temporary file is left.
    """
    target = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else data
    fd, tmp = _reserve(target)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        _commit(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``.

    The temporary file exists (empty) when the block starts; the writer
    overwrites it by name. When the block ends without an exception the file
    is fsync-ed and moved over ``path``; when it raises, the temporary file is
    removed and ``path`` is left as it was::

        with atomic_file(folder / "labels.parquet") as tmp:
            pq.write_table(table, tmp)

    Args:
        path: The file to write; its folder must exist.
    """
    target = Path(path)
    fd, tmp = _reserve(target)
    os.close(fd)
    try:
        yield tmp
        _fsync_path(tmp)
        _commit(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path``; on success it becomes ``path``.

    When the block ends without an exception, every file in the folder and the
    folder itself are fsync-ed, an older ``path`` is moved aside, the new
    folder is renamed to ``path`` and the old one is deleted. A reader sees the
    old folder or the new one whole. When the block raises, the temporary
    folder is deleted and ``path`` is left as it was.

    Args:
        path: The folder to write; its parent must exist.

    Raises:
        OSError: The folder could not be put in place (e.g. another process
            created ``path`` between the move aside and the rename); an older
            folder moved aside is put back when the name is still free.
    """
    target = Path(path)
    staging = _temporary(target)
    staging.mkdir()
    try:
        yield staging
        for item in sorted(staging.rglob("*"), reverse=True):  # files, then their folders
            if item.is_file():
                _fsync_path(item)
            elif item.is_dir():
                _fsync_folder(item)
        _fsync_folder(staging)
        old = _temporary(target, "old") if target.exists() else None
        if old is not None:
            os.replace(target, old)
        try:
            _commit(staging, target)
        except OSError:
            if old is not None and not target.exists():
                os.replace(old, target)
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
