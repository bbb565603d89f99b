"""What ``manifest.json`` holds, and keeping secrets out of it."""

from __future__ import annotations

import functools
import os
import platform
import re
import sys
from typing import Any

__all__ = [
    "READABLE_VERSIONS",
    "RENAMED",
    "SCHEMA_VERSION",
    "package_versions",
    "scrub_secrets",
]

SCHEMA_VERSION = 2
"""The layout of a run's tables this realitycheck writes (``schema_version`` in the manifest).

1. The first layout.
2. The agreement table names the labeler measured ``labeler`` and its ground
   truth ``reference``; schema 1 called them ``detector`` and ``labeler``, as
   the metrics table names a detector and its reference.

A manifest holds the version of the newest realitycheck that wrote to the
run; an older realitycheck refuses the run rather than misread it. Files of
an earlier layout are read under the current names (:data:`RENAMED`), so a
run of any version in :data:`READABLE_VERSIONS` reads as a current one.
"""

READABLE_VERSIONS: tuple[int, ...] = (1, 2)
"""The schema versions whose runs this realitycheck opens."""

RENAMED: dict[str, dict[str, str]] = {"agreement": {"detector": "labeler", "labeler": "reference"}}
"""Columns renamed since schema 1, by table: old name -> current name.

A file holding a column that no longer exists (``detector`` in an agreement
file) was written under the old names, and all of them are renamed at once.
"""

_PACKAGES = (
    "realitycheck",
    "numpy",
    "pandas",
    "pyarrow",
    "scipy",
    "rouge-score",
    "sacrebleu",
    "sentence-transformers",
    "torch",
    "transformers",
)
# A key names a secret when it is, or ends in, one of these words ("api_key",
# "access_token", "Authorization"); "token_f1" or "length[unit=tokens]" do not.
_SECRET = re.compile(
    r"(^|[_\-.])(api[_\-]?key|key|token|secret|password|passwd|authorization|credentials?)$",
    re.I,
)


def package_versions() -> dict[str, str]:
    """Return the installed versions of the packages that shape results."""
    return dict(_versions())


@functools.cache
def _versions() -> tuple[tuple[str, str], ...]:
    """The versions, looked up once per process, when a manifest is first written.

    Each comes from the ``Version:`` line of the package's metadata file, found
    the way :mod:`importlib.metadata` finds it (:func:`_metadata_files`);
    :mod:`importlib.metadata` itself (about 45 ms to import, and an e-mail
    parser per package) answers only for what that does not settle.
    """
    out = {"python": platform.python_version()}
    files = _metadata_files(_PACKAGES)
    for name in _PACKAGES:
        found = _version_line(files[name]) if name in files else None
        if found is None and (name in files or _zipped_path()):
            found = _installed_version(name)
        if found is not None:
            out[name] = found
    return tuple(out.items())


def _normal(name: str) -> str:
    """A distribution name normalised as in PEP 503 (``Rouge_Score`` → ``rouge-score``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _metadata_files(names: tuple[str, ...]) -> dict[str, str]:
    """The metadata file of each of ``names`` installed on :data:`sys.path`, the first one found.

    A distribution ``rouge-score`` is a folder ``rouge_score-0.1.2.dist-info``
    (its ``METADATA``) or ``rouge_score.egg-info`` (its ``PKG-INFO``, or the
    file itself), in the first folder of :data:`sys.path` that holds one.
    """
    wanted = {_normal(n): n for n in names}
    out: dict[str, str] = {}
    for folder in sys.path:
        try:
            entries = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        for entry in entries:
            stem, dot, suffix = entry.rpartition(".")
            name = wanted.get(_normal(stem.split("-")[0])) if dot else None
            if name is None or name in out or suffix not in ("dist-info", "egg-info"):
                continue
            path = os.path.join(folder or ".", entry)
            inner = "METADATA" if suffix == "dist-info" else "PKG-INFO"
            out[name] = os.path.join(path, inner) if os.path.isdir(path) else path
    return out


def _version_line(path: str) -> str | None:
    """The ``Version:`` header of a metadata file, or None where it has none or cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            header = fh.read().split("\n\n", 1)[0]
    except (OSError, UnicodeDecodeError):
        return None
    found = re.search(r"^Version:[ \t]*(\S+)[ \t]*$", header, re.M)
    return found.group(1) if found else None


def _zipped_path() -> bool:
    """Whether :data:`sys.path` holds a file (a zip of packages), which the folder scan skips."""
    return any(os.path.isfile(p) for p in sys.path if p)


def _installed_version(name: str) -> str | None:
    """The version :mod:`importlib.metadata` gives ``name``, or None where it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def scrub_secrets(value: Any) -> Any:
    """Return ``value`` with every mapping entry whose key looks secret replaced by a marker."""
    if isinstance(value, dict):
        return {
            k: ("<redacted>" if _SECRET.search(str(k)) else scrub_secrets(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub_secrets(v) for v in value]
    return value
