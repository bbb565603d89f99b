"""What ``manifest.json`` holds, and keeping secrets out of it."""

from __future__ import annotations

import functools
import platform
import re
from typing import Any

__all__ = ["SCHEMA_VERSION", "package_versions", "scrub_secrets"]

SCHEMA_VERSION = 1

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

    A lookup reads the package's metadata, and :mod:`importlib.metadata` takes
    about 45 ms to import, so neither happens at import.
    """
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return tuple(out.items())


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
