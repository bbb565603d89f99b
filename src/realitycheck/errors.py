"""The one exception tree of realitycheck.

::

    RealityCheckError
    ├── InvalidInputError          bad argument, malformed file, unmatched ids
    │   ├── DataNotFoundError      a dataset folder or file is missing
    │   ├── MissingFeatureError    a response lacks a feature a detector reads
    │   └── RunFolderError         a run folder is damaged or held by another writer
    ├── UnknownComponentError      a registry name that does not exist
    ├── MissingDependencyError     an optional extra is not installed
    └── BackendError               a model backend failed
        ├── RetryableBackendError  worth retrying (rate limit, 5xx, timeout)
        └── FatalBackendError      not worth retrying (bad request, auth)

Every message says what was expected, what was received and where (file,
line, field) when there is a where.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "BackendError",
    "DataNotFoundError",
    "FatalBackendError",
    "InvalidInputError",
    "MissingDependencyError",
    "MissingFeatureError",
    "RealityCheckError",
    "RetryableBackendError",
    "RunFolderError",
    "UnknownComponentError",
    "did_you_mean",
]


class RealityCheckError(Exception):
    """Base of every error realitycheck raises on purpose."""


class InvalidInputError(RealityCheckError, ValueError):
    """An argument, a file or a record is not what was expected.

    Args:
        message: What was expected and what was received.
        path: The file the bad input came from, if any.
        line: The 1-based line (or row) number in that file, if known.
        field: The field (column, key) that was wrong, if known.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        where = []
        if self.path is not None:
            where.append(self.path)
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class DataNotFoundError(InvalidInputError):
    """A dataset's files are not where they were looked for."""


class MissingFeatureError(InvalidInputError):
    """A response lacks a feature a detector reads (samples, log-probs, hidden states).

    Detectors catch it and store its message as the error of a ``None`` score;
    the message names the backends that supply the feature.
    """


class RunFolderError(InvalidInputError):
    """A run folder cannot be used: an unreadable part, or another process writing it.

    The message names the file and the way out (``realitycheck check --run DIR``,
    or the process holding the folder).
    """


class UnknownComponentError(RealityCheckError, KeyError):
    """A component name that no registry knows.

    The message lists the close matches and every available name.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(RealityCheckError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, *, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs the package {package!r}, which is not installed. "
            f"Install it with: pip install -c constraints.txt 'realitycheck[{extra}]'"
        )


class BackendError(RealityCheckError):
    """A model backend failed to answer."""


class RetryableBackendError(BackendError):
    """A backend failure that may succeed when retried (429, 5xx, timeout)."""


class FatalBackendError(BackendError):
    """A backend failure that will not succeed when retried (400, 401, 404)."""


def did_you_mean(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str:
    """Return `` Did you mean 'x'?`` for the closest of ``choices`` to ``word``, or ``""``.

    The leading space lets it follow a sentence directly; the match is
    :func:`difflib.get_close_matches` at ``cutoff``.
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f" Did you mean {close[0]!r}?" if close else ""
