"""Content fingerprints of the files a dataset reads (kept by the run store).

A fingerprint maps each source file to its SHA-256 and size (and the
modification time it had when hashed). A run records it per dataset, so a
rerun notices an edited input instead of silently reusing what it loaded
before. Hashing is guarded by size and modification time: a file whose size
and ``mtime_ns`` equal the recorded ones is not read again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["changed_files", "digest", "fingerprint"]

_CHUNK = 1 << 20


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def fingerprint(
    paths: list[Path], known: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Return ``{path: {sha256, size, mtime_ns}}`` for each existing file of ``paths``.

    Args:
        paths: The files a dataset reads (folders are walked, missing ones left out).
        known: A fingerprint recorded earlier; a file whose size and ``mtime_ns``
            are unchanged keeps its recorded SHA-256 without being read again.
    """
    known = known or {}
    out: dict[str, dict[str, Any]] = {}
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file()))
        elif path.is_file():
            files.append(path)
    for path in files:
        stat = path.stat()
        name = str(path)
        old = known.get(name) or {}
        if old.get("size") == stat.st_size and old.get("mtime_ns") == stat.st_mtime_ns:
            sha = str(old.get("sha256"))
        else:
            sha = _sha256(path)
        out[name] = {"sha256": sha, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    return out


def changed_files(
    before: Mapping[str, Mapping[str, Any]], now: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Return one line per file whose content differs between two fingerprints."""
    lines = []
    for name in sorted(set(before) | set(now)):
        old, new = before.get(name), now.get(name)
        if old is None:
            lines.append(f"{name} (new file)")
        elif new is None:
            lines.append(f"{name} (missing now)")
        elif old.get("sha256") != new.get("sha256"):
            lines.append(
                f"{name} (size {old.get('size')} -> {new.get('size')} bytes, "
                f"sha256 {str(old.get('sha256'))[:12]}… -> {str(new.get('sha256'))[:12]}…)"
            )
    return lines


def digest(print_: Mapping[str, Mapping[str, Any]]) -> str:
    """Return one SHA-256 over a whole fingerprint (file names and contents)."""
    h = hashlib.sha256()
    for name in sorted(print_):
        h.update(f"{name}\0{print_[name].get('sha256')}\0".encode())
    return h.hexdigest()
