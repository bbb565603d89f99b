"""A seam for progress reporting: library code reports, the CLI draws bars or prints lines.

A long step is a :meth:`Progress.task` whose :class:`ProgressTask` is
advanced as units are done. A step made of named parts (the studies of a run)
may say which part it is on with :func:`describe`; a task that cannot show it
(one of a :class:`Progress` written before it existed) ignores it.
:func:`scoped` adds where a step works (``on ragtruth``) to the steps of one
part of a run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol, runtime_checkable

__all__ = ["DescribedTask", "NullProgress", "Progress", "ProgressTask", "describe", "scoped"]


class ProgressTask(Protocol):
    """One long step."""

    def advance(self, n: int = 1) -> None:
        """Mark ``n`` more units done."""


@runtime_checkable
class DescribedTask(ProgressTask, Protocol):
    """A step that can also show which of its parts it is on."""

    def describe(self, text: str) -> None:
        """Show that the step now works on ``text`` (until its next advance)."""


class Progress(Protocol):
    """Something that shows how long steps advance."""

    def task(self, description: str, total: int | None) -> AbstractContextManager[ProgressTask]:
        """Return a context manager for one step of ``total`` units."""


def describe(task: ProgressTask, text: str) -> None:
    """Tell ``task`` which part it now works on, where it can show it (else nothing happens).

    ``text`` names the part until the task's next advance, e.g.
    ``study label_noise (3 of 14)``.
    """
    if isinstance(task, DescribedTask):
        task.describe(text)


class _NullTask:
    def advance(self, n: int = 1) -> None:
        return None

    def describe(self, text: str) -> None:
        return None


class NullProgress:
    """Progress that shows nothing (the library default)."""

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        """Yield a task whose advances go nowhere."""
        yield _NullTask()


class _Scoped:
    def __init__(self, progress: Progress, where: str) -> None:
        self._progress = progress
        self._where = where

    def task(self, description: str, total: int | None) -> AbstractContextManager[ProgressTask]:
        return self._progress.task(f"{description} on {self._where}", total)


def scoped(progress: Progress, where: str) -> Progress:
    """Return ``progress`` with `` on {where}`` after the description of each step.

    The demo runs each stage one dataset at a time: ``labeler rouge_l on ragtruth``.
    """
    return _Scoped(progress, where)
