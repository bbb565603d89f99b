"""Retries for remote backends: exponential backoff with full jitter, honouring Retry-After.

A backend hands :func:`retrying` one coroutine factory (one attempt) and a
``classify`` function that turns what the attempt raised into a
:class:`~realitycheck.errors.RetryableBackendError` or a
:class:`~realitycheck.errors.FatalBackendError` (plus the server's Retry-After,
when it sent one). Retryable failures are retried up to ``max_retries`` times,
waiting ``uniform(0, min(cap, base * 2**attempt))`` seconds ("full jitter"),
or at least as long as the server asked. Fatal failures, exhausted retries and
a Retry-After longer than :data:`MAX_RETRY_AFTER` end the loop by raising; an
exception that ``classify`` does not recognise is re-raised unchanged, so
programming errors are never mistaken for server trouble.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from realitycheck.errors import BackendError, FatalBackendError, RetryableBackendError

__all__ = [
    "BACKOFF_CAP",
    "MAX_RETRY_AFTER",
    "Classified",
    "backoff_delay",
    "parse_retry_after",
    "retrying",
]

BACKOFF_CAP = 60.0
"""Longest backoff wait, in seconds, before jitter."""
MAX_RETRY_AFTER = 300.0
"""A Retry-After longer than this many seconds ends the retries instead of stalling the run."""

T = TypeVar("T")
Classified = tuple[BackendError, float | None]
"""What ``classify`` returns: the classified error and the server's Retry-After in seconds."""


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Return how many seconds the server asked to wait, or ``None`` if it did not say.

    Reads ``retry-after-ms`` (milliseconds, sent by some OpenAI-compatible
    servers) and ``retry-after`` (seconds, or an HTTP date). Header names are
    matched case-insensitively; a negative or unreadable value counts as absent.

    Args:
        headers: The response headers.
        now: The current Unix time, for HTTP dates (default: the clock).
    """
    lowered = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        raw = lowered.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw) * scale
        except ValueError:
            if name != "retry-after":
                continue
            try:
                when = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                continue
            seconds = when.timestamp() - (time.time() if now is None else now)
        if seconds >= 0:
            return seconds
        if name == "retry-after":
            return 0.0  # a date in the past: go now
    return None


def backoff_delay(
    attempt: int, *, base: float, rng: random.Random, cap: float = BACKOFF_CAP
) -> float:
    """Return the full-jitter wait before retry number ``attempt + 1``.

    Args:
        attempt: How many attempts have failed so far, minus one (0 for the first retry).
        base: The first ceiling, in seconds; the ceiling doubles per attempt.
        rng: Source of the jitter.
        cap: The largest ceiling.

    Returns:
        A uniform draw from ``[0, min(cap, base * 2**attempt)]``.
    """
    ceiling = min(cap, base * 2.0 ** min(attempt, 60))
    return rng.uniform(0.0, ceiling)


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    *,
    classify: Callable[[Exception], Classified | None],
    max_retries: int,
    base: float,
    rng: random.Random,
    on_attempt: Callable[[], None] | None = None,
) -> T:
    """Run ``attempt`` until it succeeds, retrying what ``classify`` calls retryable.

    Args:
        attempt: Makes and awaits one call.
        classify: Maps an exception to ``(error, retry_after)``; ``None`` means "not ours".
        max_retries: Retries after the first attempt (0 = try once).
        base: Backoff base delay in seconds (see :func:`backoff_delay`).
        rng: Source of the jitter.
        on_attempt: Called before every attempt (to count calls).

    Returns:
        The first successful result.

    Raises:
        FatalBackendError: The call cannot succeed (or the server asked to wait too long).
        RetryableBackendError: Every attempt failed with a retryable error.
    """
    failures = 0
    while True:
        if on_attempt is not None:
            on_attempt()
        try:
            return await attempt()
        except Exception as exc:
            classified = classify(exc)
            if classified is None:
                raise
            error, retry_after = classified
            if isinstance(error, FatalBackendError):
                raise error from exc
            failures += 1
            if failures > max_retries:
                raise RetryableBackendError(
                    f"Gave up after {failures} attempts; the last failed with: {error}"
                ) from exc
            if retry_after is not None and retry_after > MAX_RETRY_AFTER:
                raise FatalBackendError(
                    f"The server asked to wait {retry_after:.0f} s (Retry-After), more than the "
                    f"{MAX_RETRY_AFTER:.0f} s a run waits; the last error was: {error}"
                ) from exc
            delay = backoff_delay(failures - 1, base=base, rng=rng)
            if retry_after is not None:
                delay = max(delay, retry_after)
            await asyncio.sleep(delay)
