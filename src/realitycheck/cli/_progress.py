"""Rich progress bars behind the library's progress seam."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
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

__all__ = ["RichProgress"]


class _Task:
    def __init__(self, bar: Progress, task_id: int) -> None:
        self._bar = bar
        self._id = task_id

    def advance(self, n: int = 1) -> None:
        self._bar.advance(self._id, n)  # type: ignore[arg-type]


class RichProgress:
    """Draw one bar per step on stderr (hidden when stderr is not a terminal)."""

    def __init__(self, *, quiet: bool = False) -> None:
        self._console = Console(stderr=True, quiet=quiet)

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[_Task]:
        """Show a bar for one step until the block ends."""
        columns = [
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        ]
        with Progress(*columns, console=self._console, transient=False) as bar:
            task_id = bar.add_task(escape(description), total=total)
            yield _Task(bar, task_id)
            if total is None:
                bar.update(task_id, total=1, completed=1)
