"""Where every dataset file comes from, and how to download and verify it.

Each file is fetched from its canonical public repository at a fixed commit
(``<base>/<owner>/<name>/<commit>/<path>``, base ``https://raw.githubusercontent.com``
unless ``$REALITYCHECK_DATA_URL`` or ``base_url`` says otherwise), written
atomically and checked against the SHA-256 recorded here.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from realitycheck.datasets._base import cache_dir, datasets
from realitycheck.datasets._source_table import (
    COMMITS,
    DEFAULT_BASE_URL,
    SOURCES,
    UNPINNED,
    Source,
)
from realitycheck.errors import DataNotFoundError, InvalidInputError
from realitycheck.params import Satisfies, check_arg

__all__ = [
    "COMMITS",
    "DEFAULT_BASE_URL",
    "SOURCES",
    "URL_ENV",
    "Source",
    "fetch",
    "sha256",
    "sources_of",
    "verify",
]

URL_ENV = "REALITYCHECK_DATA_URL"
_CHUNK = 1 << 16

_BY_LOCAL = {s.local: s for s in (*SOURCES, *UNPINNED)}
logger = logging.getLogger(__name__)


def sha256(path: Path) -> str:
    """Return the hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sources_of(name: str) -> list[Source]:
    """Return the sources of the files of dataset ``name``.

    Raises:
        UnknownComponentError: When no dataset is called ``name``.
        InvalidInputError: When the dataset has no downloadable files.
    """
    files = datasets.get(name).files
    if not files:
        raise InvalidInputError(
            f"The dataset {name!r} has no files to download (it reads files you give it)."
        )
    unknown = [f for f in files if f not in _BY_LOCAL]
    if unknown:
        raise InvalidInputError(
            f"The dataset {name!r} names files with no known source: {unknown}."
        )
    return [_BY_LOCAL[f] for f in files]


def _is_http(url: object) -> bool:
    import urllib.parse  # here, not at import: the CLI starts faster

    return isinstance(url, str) and urllib.parse.urlparse(url).scheme in ("http", "https")


_HTTP = Satisfies(_is_http, "an http(s) address")


def fetch(
    name: str,
    *,
    dest: Path | str | None = None,
    force: bool = False,
    base_url: str | None = None,
    progress: Callable[[int], Any] | None = None,
    trust_unpinned: bool = False,
) -> Path:
    """Download the files of dataset ``name`` and check their SHA-256.

    A file already present with the right checksum is kept (unless ``force``).
    Each download goes to a temporary file beside its target and is moved in
    place only once its checksum matches; when the fetch fails, the folders it
    created and left empty are removed again. A file whose digest is not pinned
    here (:data:`UNPINNED`) is checked against the digest recorded at its first
    download (``<file>.sha256``); that first download needs ``trust_unpinned``.

    Args:
        name: A registered dataset (``ragtruth``, ``faithbench``…).
        dest: The data root to fill; by default the user cache that datasets
            read (:func:`cache_dir`: ``$REALITYCHECK_CACHE_DIR/data``, else
            ``~/.cache/realitycheck/data``).
        force: Download even the files that are already present and correct.
        base_url: Where to download from; ``$REALITYCHECK_DATA_URL`` or the
            GitHub raw-file host by default.
        progress: Called with 1 after each file.
        trust_unpinned: Download a file whose digest is neither pinned nor
            recorded, and record it (a warning gives the digest to compare
            with the source).

    Returns:
        The data root that now holds the files.

    Raises:
        InvalidInputError: When a download does not match its checksum (the
            bad file is deleted); the message names the file, the expected and
            the received digest.
        DataNotFoundError: When a file cannot be downloaded.
    """
    sources = sources_of(name)
    root = Path(dest) if dest is not None else cache_dir()
    base = base_url or os.environ.get(URL_ENV) or DEFAULT_BASE_URL
    check_arg(base, _HTTP, name="base_url", owner="fetch")
    made: list[Path] = []  # the folders this fetch creates, removed again if it fails empty
    try:
        for source in sources:
            made += _new_folders((root / source.local).parent)
            _fetch_one(source, root, base, force=force, trust_unpinned=trust_unpinned)
            if progress is not None:
                progress(1)
    except BaseException:
        for folder in sorted(set(made), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):  # not empty: a file it verified stays
                folder.rmdir()
        raise
    return root


def _new_folders(folder: Path) -> list[Path]:
    """The folders from ``folder`` up that do not exist yet (``mkdir(parents=True)`` makes them)."""
    out = []
    while not folder.exists() and folder.parent != folder:
        out.append(folder)
        folder = folder.parent
    return out


def _fetch_one(source: Source, root: Path, base: str, *, force: bool, trust_unpinned: bool) -> None:
    """Download one file of a dataset into ``root`` unless it is there and verified."""
    target = root / source.local
    expected = source.sha256 or _recorded(target)
    if not expected and not trust_unpinned:
        raise InvalidInputError(
            f"realitycheck has no pinned SHA-256 for {source.local} ({source.repo} @ "
            f"{source.commit[:8]} : {source.path}), and none was recorded in {root}. "
            "Rerun with --trust-unpinned to download it and record its digest; later "
            "fetches are checked against that record.",
            path=target,
        )
    if force or not target.is_file() or sha256(target) != expected:
        got = _download(source, source.url(base), target, expected)
        if not expected:
            from realitycheck.store import write_atomically

            write_atomically(Path(f"{target}.sha256"), f"{got}  {target.name}\n")
            logger.warning(
                "%s has no pinned digest; recorded sha256 %s from %s. Compare it with the "
                "file at the source before you rely on it.",
                source.local,
                got,
                source.url(base),
            )


def _recorded(target: Path) -> str:
    """Return the digest recorded at a file's first download (``<file>.sha256``), or ''."""
    record = Path(f"{target}.sha256")
    if not record.is_file():
        return ""
    return record.read_text(encoding="utf-8").split(maxsplit=1)[0] if record.stat().st_size else ""


def _download(source: Source, url: str, target: Path, expected: str) -> str:
    import urllib.error
    import urllib.request

    from realitycheck.store import atomic_file  # the store loads pyarrow; not needed before

    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with atomic_file(target) as tmp:  # a failed or wrong download leaves no file behind
        try:
            with tmp.open("wb") as out, urllib.request.urlopen(url, timeout=60) as response:
                for chunk in iter(lambda: response.read(_CHUNK), b""):
                    digest.update(chunk)
                    out.write(chunk)
        except (urllib.error.URLError, OSError) as exc:
            raise DataNotFoundError(f"Could not download {url}: {exc}.", path=target) from None
        got = digest.hexdigest()
        if expected and got != expected:
            raise InvalidInputError(
                f"The download from {url} does not match its checksum: expected sha256 "
                f"{expected}, got {got}. The file was deleted.",
                path=target,
            )
    return got


def verify(root: Path | str, names: Iterable[str] | None = None) -> list[str]:
    """Check the files under a data root against their recorded SHA-256.

    Args:
        root: The data root.
        names: Datasets whose files to check; every known file when None.

    Returns:
        One line per problem (a missing file or a wrong checksum); empty when all is well.
    """
    root = Path(root)
    if names is None:
        sources = list(SOURCES)
    else:
        sources = list(dict.fromkeys(s for n in names for s in sources_of(n)))
    problems = []
    for source in sources:
        path = root / source.local
        if not path.is_file():
            problems.append(f"{source.local}: missing")
            continue
        expected = source.sha256 or _recorded(path)
        got = sha256(path)
        if not expected:
            problems.append(f"{source.local}: no digest pinned or recorded (sha256 is {got})")
        elif got != expected:
            problems.append(f"{source.local}: sha256 is {got}, expected {expected}")
    return problems
