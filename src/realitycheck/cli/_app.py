"""The command line: one verb per stage, and the verbs around them.

The stages: ingest, generate, choose (MCQ answers by likelihood), label,
detect, evaluate, study and report; run (a whole study from a TOML file) and
demo (the whole job on six datasets). Around them: datasets (list, describe,
fetch), components, describe, check (a run folder's health) and annotate
(export, import: humans in the loop).

Every failure the user can fix ends in a one-paragraph message on stderr and a
non-zero exit, never a traceback. An interrupted stage keeps what it stored;
running the same command again resumes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator, Sequence

import click

import realitycheck.cli._annotate  # noqa: F401  (registers annotate export / import)
from realitycheck.cli import (  # noqa: F401  (they register their verbs)
    _catalog,
    _check,
    _choose,
    _generate,
    _ingest,
    _reports,
    _stages,
    _study,
)
from realitycheck.cli._common import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    cli,
    scrub_text,
    split_keys,
    terminal_text,
)
from realitycheck.errors import RealityCheckError

__all__ = ["cli", "main", "split_keys"]


class _WarningLines(logging.Handler):
    """Print each warning realitycheck logs as one ``warning: ...`` line, fit for the terminal."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"warning: {terminal_text(record.getMessage(), limit=600)}", err=True)


def _show_warning(message: Warning | str, *_: object, **__: object) -> None:
    """Print a Python warning as ``warning: ...`` (without the file and line of click's code)."""
    click.echo(f"warning: {terminal_text(str(message), limit=600)}", err=True)


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Show warnings (a renamed parameter, a server that ignored a field) as plain lines."""
    logger = logging.getLogger("realitycheck")
    handler = _WarningLines(logging.WARNING)
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            yield
    finally:
        logger.removeHandler(handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; turn expected errors into a message and an exit code."""
    with _warnings_as_lines():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = list(argv) if argv is not None else sys.argv[1:]
        code = cli.main(args=args, standalone_mode=False, obj={"argv": args})
    except click.exceptions.Abort:
        click.echo("interrupted; everything stored so far is kept, rerun to resume", err=True)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        click.echo("interrupted; everything stored so far is kept, rerun to resume", err=True)
        return EXIT_INTERRUPTED
    except click.exceptions.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except RealityCheckError as exc:
        click.echo(scrub_text(f"error: {exc}"), err=True)
        return EXIT_ERROR
    except OSError as exc:
        click.echo(scrub_text(f"error: {exc}"), err=True)
        return EXIT_ERROR
    except Exception as exc:
        if os.environ.get("REALITYCHECK_DEBUG"):
            raise
        click.echo(
            scrub_text(
                f"internal error: {type(exc).__name__}: {exc}. Everything stored so far is "
                "kept. Set REALITYCHECK_DEBUG=1 to see the traceback, and please report it."
            ),
            err=True,
        )
        return EXIT_INTERNAL
    return code if isinstance(code, int) else 0  # a verb's click Exit(code) comes back here


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
