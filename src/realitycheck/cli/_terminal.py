"""Untrusted text made fit for the terminal: secrets scrubbed, control sequences shown.

Its own module so that both the verbs' shared options (``_common``) and the
progress output (``_progress``) use it without importing each other.
"""

from __future__ import annotations

from realitycheck.text import escape_controls

__all__ = ["scrub_text", "terminal_lines", "terminal_text"]


def scrub_text(text: str) -> str:
    """Return ``text`` without secrets, fit for the terminal (see ``realitycheck.store``)."""
    from realitycheck.store import scrub_text as scrub

    return scrub(text)


def terminal_text(text: str, *, limit: int = 300) -> str:
    """Return untrusted ``text`` (an error, a reply) fit for one terminal line.

    Secrets are scrubbed (:func:`scrub_text`); control and escape sequences
    (C0/C1, ESC, newlines, NUL) and bidi controls are shown as ``[U+001B]``,
    never sent raw; a text longer than ``limit`` characters is cut with "…".
    """
    shown = escape_controls(scrub_text(str(text)))
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def terminal_lines(text: str) -> str:
    """Return untrusted ``text`` of several lines (a study's finding) fit for the terminal.

    As :func:`terminal_text`, but line breaks are kept and nothing is cut.
    """
    return escape_controls(scrub_text(str(text)), keep="\n")
