"""The exit code of a command whose items failed: 3, with the commonest error, unless allowed.

A stage where items failed (a call that never succeeded, retryable or fatal:
a dead server, a wrong model name) ends the command with :data:`EXIT_FAILURES`
once everything else is stored and printed, so a script or CI job can tell a
failed run from a good one. ``--allow-failures`` keeps exit 0 for people who
accept partial results. A value a component does not define (no reference, a
feature the response lacks) is "missing", not a failure; so is a reply that
could not be read (counted as unreadable and flagged in the report).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import click

from realitycheck.cli._common import EXIT_FAILURES, terminal_text
from realitycheck.errors import RealityCheckError

__all__ = ["FailureTally"]


@dataclass(frozen=True)
class _Failed:
    """How many items of one stage part failed (``where``), and its commonest error."""

    where: str
    count: int
    error: str
    error_count: int


@dataclass
class FailureTally:
    """The failed items of a command's stages, gathered as their reports come in."""

    items: list[_Failed] = field(default_factory=list)

    def stage(self, report: Any) -> None:
        """Add a label or detect stage's failed records (now and stored from earlier runs)."""
        for key in dict.fromkeys([*report.computed, *report.failed_before]):
            count = report.n_failed(key)
            if count:
                text, n = report.commonest_failure(key) or ("", 0)
                self.items.append(_Failed(key, count, text, n))

    def generation(self, dataset: str, report: Any, run_dir: Any) -> None:
        """Add a generate stage's failed (example, variant) pairs, with their commonest error."""
        if report.failed:
            text, n = _commonest_generation_error(report, run_dir)
            self.items.append(_Failed(f"generate {dataset}", report.failed, text, n))

    @property
    def total(self) -> int:
        """How many items failed in all."""
        return sum(item.count for item in self.items)

    def echo(self, *, allowed: bool) -> bool:
        """Print what failed (stderr); return whether the command must exit with code 3."""
        if not self.items:
            return False
        where = "; ".join(f"{terminal_text(i.where, limit=120)}: {i.count}" for i in self.items)
        worst = max(self.items, key=lambda i: i.error_count)
        commonest = (
            f"commonest error ({worst.error_count} times, {terminal_text(worst.where, limit=120)}):"
            f" {terminal_text(worst.error)}"
            if worst.error_count
            else ""
        )
        if allowed:
            click.echo(
                f"note: {self.total} items failed ({where}); accepted with --allow-failures, "
                "the results are partial.",
                err=True,
            )
            if commonest:
                click.echo(f"note: {commonest}", err=True)
            return False
        click.echo(
            f"error: {self.total} items failed ({where}); everything else is stored. Fix the "
            "cause and run the same command again, or pass --allow-failures to accept partial "
            f"results (exit 0 instead of {EXIT_FAILURES}).",
            err=True,
        )
        if commonest:
            click.echo(f"error: {commonest}", err=True)
        return True

    def exit(self, *, allowed: bool) -> None:
        """Print what failed and end the command with :data:`EXIT_FAILURES` unless ``allowed``."""
        if self.echo(allowed=allowed):
            raise click.exceptions.Exit(EXIT_FAILURES)


def _commonest_generation_error(report: Any, run_dir: Any) -> tuple[str, int]:
    """The commonest error of a generation's failed pairs, from the run's generation_errors.

    Falls back on the first errors the report keeps when the table cannot be read.
    """
    counts: dict[str, int] = dict(getattr(report, "error_counts", None) or {})
    if not counts:
        try:
            from realitycheck.pipeline import generation_errors
            from realitycheck.store import RunStore

            table = generation_errors(RunStore(run_dir))
            mine = table[table["generation"] == report.generation]["error"]
            counts = {str(k): int(v) for k, v in mine.value_counts(sort=False).items()}
        except (RealityCheckError, OSError, KeyError, ValueError):
            counts = {}  # the message must not hide the failures it reports
    if not counts:
        for text in report.errors:
            counts[text] = counts.get(text, 0) + 1
    from realitycheck.pipeline import commonest_error

    return commonest_error(counts) or ("", 0)
