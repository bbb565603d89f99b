"""A seam for progress reporting: library code reports, the CLI draws bars."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

__all__ = ["NullProgress", "Progress", "ProgressTask"]


class ProgressTask(Protocol):
    """One long step."""

    def advance(self, n: int = 1) -> None:
        """Mark ``n`` more units done."""


class Progress(Protocol):
    """Something that shows how long steps advance."""

    def task(self, description: str, total: int | None) -> AbstractContextManager[ProgressTask]:
        """Return a context manager for one step of ``total`` units."""


class _NullTask:
    def advance(self, n: int = 1) -> None:
        return None


class NullProgress:
    """Progress that shows nothing (the library default)."""

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        """Yield a task whose advances go nowhere."""
        yield _NullTask()
