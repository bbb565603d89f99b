"""The library's progress, shown: rich bars on a terminal, plain lines in a log.

:func:`progress_for_stderr` chooses: nothing with ``--quiet``; rich bars when
stderr is a terminal; else (a file, a pipe, CI, nohup) :class:`PlainProgress`,
one line per step with its count and the time since the command began, and no
escape codes or carriage returns. rich (a fifth of a second to import) is only
imported for bars.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from realitycheck.cli._terminal import terminal_text

__all__ = ["PlainProgress", "RichProgress", "progress_for_stderr"]

_KEY_LIMIT = 1000
"""A step's description holds component keys (model names: untrusted, escaped), kept whole."""


def progress_for_stderr(*, quiet: bool = False) -> Any:
    """The progress a command shows on stderr: none, rich bars, or plain lines.

    None with ``quiet``; bars when stderr is a terminal; otherwise
    :class:`PlainProgress` (output read later: a log file, CI, ``nohup``).
    """
    if quiet:
        from realitycheck.progress import NullProgress

        return NullProgress()
    if sys.stderr.isatty():
        return RichProgress()
    return PlainProgress()


# -- plain lines ---------------------------------------------------------------------------------


class _PlainTask:
    """Counts one step's advances; prints a part's start and end, and a line now and then."""

    def __init__(self, owner: PlainProgress, description: str, total: int | None) -> None:
        self._owner = owner
        self.description = terminal_text(description, limit=_KEY_LIMIT)
        self.total = total
        self.done = 0
        self.started = self._last = owner.clock()
        self._part: tuple[str, float] | None = None

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self._owner.clock()
        if self._part is not None:
            text, since = self._part
            self._part = None
            self._owner.line(f"{text} done (+{now - since:.1f} s)")
            self._last = now
        elif now - self._last >= self._owner.every:
            self._owner.line(f"{self.description}: {self.count()}…")
            self._last = now

    def describe(self, text: str) -> None:
        shown = terminal_text(text, limit=_KEY_LIMIT)
        self._part = (shown, self._owner.clock())
        self._owner.line(f"{shown}…")

    def count(self) -> str:
        """``1,200 of 2,617`` (or ``1,200`` when the total is unknown)."""
        return f"{self.done:,}" if self.total is None else f"{self.done:,} of {self.total:,}"

    def summary(self, *, stopped: bool) -> str:
        took = f"{self._owner.clock() - self.started:.1f} s"
        if stopped:
            return f"{self.description}: stopped after {self.count()} ({took})"
        if self.total is None and not self.done:
            return f"{self.description}: done in {took}"
        return f"{self.description}: {self.count()} done in {took}"


class PlainProgress:
    """One plain line per step on stderr, for output read later (a log, CI, ``nohup``).

    Each line starts with the seconds since this progress was made (the
    command's start), e.g. ``[  12.3 s] labeler rouge_l on ragtruth: 2,617 of
    2,617 done in 1.2 s``. A step longer than ``every`` seconds also prints its
    count that often; a step that names its parts (the studies) prints each
    part as it begins and when it is done, with the seconds since it began
    (``+6.9 s``: the time awaited, which for studies computed side by side in
    workers is not the part's own). Descriptions are escaped for the
    terminal (they name models and datasets); no line holds an escape code or
    a carriage return.
    """

    def __init__(self, *, every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self.clock = clock
        self._start = clock()

    def line(self, text: str) -> None:
        """Print ``text`` after the time since the start."""
        click.echo(f"[{self.clock() - self._start:6.1f} s] {text}", err=True)

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[_PlainTask]:
        """Count one step; print its line when it ends (stopped or not)."""
        task = _PlainTask(self, description, total)
        try:
            yield task
        except BaseException:
            self.line(task.summary(stopped=True))
            raise
        self.line(task.summary(stopped=False))


# -- rich bars -----------------------------------------------------------------------------------


class _RichTask:
    def __init__(self, bar: Any, task_id: Any) -> None:
        self._bar = bar
        self._id = task_id

    def advance(self, n: int = 1) -> None:
        self._bar.advance(self._id, n)

    def describe(self, text: str) -> None:
        from rich.markup import escape

        self._bar.update(self._id, description=escape(terminal_text(text, limit=_KEY_LIMIT)))


class RichProgress:
    """Draw one bar per step on stderr (hidden when stderr is not a terminal)."""

    def __init__(self, *, quiet: bool = False) -> None:
        from rich.console import Console

        self._console = Console(stderr=True, quiet=quiet)

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[_RichTask]:
        """Show a bar for one step until the block ends."""
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns = [
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        ]
        with Progress(*columns, console=self._console, transient=False) as bar:
            shown = escape(terminal_text(description, limit=_KEY_LIMIT))
            task_id = bar.add_task(shown, total=total)
            yield _RichTask(bar, task_id)
            if total is None:
                bar.update(task_id, total=1, completed=1)
