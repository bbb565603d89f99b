"""The shared call cache: a call is never paid for twice.

:class:`CallCache` is one SQLite table (stdlib :mod:`sqlite3`, WAL journal)
mapping a content address to a stored :class:`~realitycheck.backends.Generation`.
The address is :meth:`GenerationRequest.cache_key` of the request and the
backend's *call identity* (:func:`call_identity`): its name, version and the
parameters that change what the model answers. Parameters declared with
``param(..., in_key=False)`` (concurrency, timeouts, retries, prices,
the name of the API-key variable) are left out, so rerunning with more
concurrency still hits the cache.

:func:`cached_generate` is the only way the generation stage calls a backend:
identical requests in one batch are sent once and the answer is fanned out;
answers already in the cache are served with ``cached=True``; every success is
committed the moment it arrives, so a run killed at any point (even with
``kill -9``) and rerun repeats no completed call. Errors are never cached,
and neither is an answer that lacks a feature the request asked for and
cannot do without (``Generation.unsupported``: token log-probs, next-token
alternatives, sequences, an echoed prompt), so a fixed server can still be
reached. A reply that did not follow the JSON Schema sent (``"json_schema"``
alone in ``unsupported``) is cached: it is still a usable answer (a judge
reads its conclusion and records ``schema_followed=false``), and asking
again would pay for the same kind of reply on every run. A request for several sequences that failed
after some of its calls answered keeps them as a *partial* answer (under
``partial:<key>``); the next run asks only for the missing sequences (with
the seed moved on by the calls already made) and stores the merged answer
(:mod:`realitycheck.backends._partial`).

A backend that can report each answer as it finishes implements
:class:`ReportsEachResult` (``generate_each``); any other backend is called in
chunks of :data:`CHUNK` requests, so a kill loses at most one chunk in flight.

Token accounting is a pure function of the returned generations
(:func:`~realitycheck.backends.usage_of`, in :mod:`._usage`).
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from realitycheck.backends._base import REQUESTS, Backend, Generation, GenerationRequest
from realitycheck.backends._partial import PARTIAL, merged, rest_of, without_sequences
from realitycheck.errors import InvalidInputError
from realitycheck.params import InstanceOf, Interval, check_arg
from realitycheck.progress import NullProgress, Progress

__all__ = [
    "CHUNK",
    "CallCache",
    "ReportsEachResult",
    "cached_generate",
    "call_identity",
    "default_cache_path",
]

CHUNK = 32
"""Requests per ``generate`` call for backends that cannot report each answer."""
_SQL_VARIABLES = 500  # keys per SELECT ... IN (...), under every SQLite build's limit
_USABLE_WITHOUT = frozenset({"json_schema"})  # missing, the answer is still complete

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def default_cache_path() -> Path:
    """Return ``$REALITYCHECK_CACHE_DIR/calls.sqlite`` or ``~/.cache/realitycheck/calls.sqlite``."""
    folder = os.environ.get("REALITYCHECK_CACHE_DIR")
    root = Path(folder) if folder else Path.home() / ".cache" / "realitycheck"
    return root / "calls.sqlite"


class CallCache:
    """A content-addressed store of finished calls, safe across threads and processes.

    Each :meth:`put` is its own committed transaction. Readers never block the
    writer (WAL); concurrent writers from other processes wait up to
    ``timeout`` seconds for the lock. The connection is opened lazily and
    reopened after a ``fork``.

    Args:
        path: The SQLite file (default: :func:`default_cache_path`); its folder is created.
        timeout: Seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | Path | None = None, *, timeout: float = 30.0) -> None:
        check_arg(timeout, Interval(float, 0, closed="neither"), name="timeout", owner="CallCache")
        self.path = Path(path) if path is not None else default_cache_path()
        self.timeout = float(timeout)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def __repr__(self) -> str:
        return f"CallCache({str(self.path)!r})"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle as the path and timeout; the copy opens its own connection (e.g. a Ray worker)."""
        return (_reopen, (str(self.path), self.timeout))

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # The store's package imports pyarrow; a help text or a listing of the
        # backends imports this module, so the store is imported on first use.
        from realitycheck.store import sqlite_files

        conn = sqlite_files.connect(
            self.path, timeout=self.timeout, schema=_SCHEMA, check_same_thread=False
        )
        self._conn, self._pid = conn, os.getpid()
        return conn

    def get_many(self, keys: Iterable[str]) -> dict[str, Generation]:
        """Return the stored generations of those ``keys`` that are present (``cached=True``)."""
        return {
            key: Generation.from_json(value, cached=True)
            for key, value in self.get_values(keys).items()
        }

    def get_values(self, keys: Iterable[str]) -> dict[str, str]:
        """Return the stored JSON text of those ``keys`` that are present.

        What :meth:`get_many` reads for generations; other answers (a
        sequence-pair classifier's scores) are stored as their own JSON text.
        """
        wanted = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with self._lock:
            conn = self._connection()
            for start in range(0, len(wanted), _SQL_VARIABLES):
                chunk = wanted[start : start + _SQL_VARIABLES]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT key, value FROM calls WHERE key IN ({marks})", chunk
                ).fetchall()
                found.update({key: value for key, value in rows})
        return found

    def get(self, key: str) -> Generation | None:
        """Return the stored generation for ``key``, or ``None``."""
        return self.get_many([key]).get(key)

    def put(self, key: str, generation: Generation, *, backend: str = "") -> None:
        """Store one successful generation and commit at once.

        Args:
            key: The content address (see :func:`call_identity`).
            generation: The answer; must not carry an error.
            backend: A readable label of the backend (its key), kept for inspection.

        Raises:
            InvalidInputError: If ``generation`` is an error record (errors are never cached).
        """
        if generation.error:
            raise InvalidInputError(
                f"Failed calls are never cached. Got a generation with error "
                f"{generation.error[:80]!r} for key {key[:16]}."
            )
        self.put_value(key, generation.to_json(), backend=backend)

    def put_value(self, key: str, value: str, *, backend: str = "", replace: bool = False) -> None:
        """Store one successful answer as JSON text and commit at once (see :meth:`put`).

        A key already stored keeps its value unless ``replace`` is true.
        """
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._lock:
            self._connection().execute(
                f"{verb} INTO calls (key, backend, value, created) VALUES (?, ?, ?, ?)",
                (key, backend, value, time.time()),
            )

    def delete(self, key: str) -> None:
        """Remove ``key`` (nothing happens when it is not stored)."""
        with self._lock:
            self._connection().execute("DELETE FROM calls WHERE key = ?", (key,))

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._connection().execute("SELECT COUNT(*) FROM calls").fetchone()
        return int(count)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def close(self) -> None:
        """Close this process's connection (the cache reopens on next use)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class ReportsEachResult(Protocol):
    """A backend that reports each answer as soon as it finishes."""

    def generate_each(
        self,
        requests: Sequence[GenerationRequest],
        on_result: Callable[[int, Generation], None] | None = None,
    ) -> list[Generation]:
        """Answer each request, calling ``on_result(index, generation)`` as each finishes."""
        ...


def call_identity(backend: Backend) -> dict[str, Any]:
    """Return what addresses a backend's calls: name, version and answer-changing parameters.

    Parameters declared with ``in_key=False`` (how to call, not what to ask)
    are left out.
    """
    params = backend.params()
    for f in dataclasses.fields(backend):
        if not f.metadata.get("in_key", True):
            params.pop(f.name, None)
    return {"name": backend.name, "params": params, "version": backend.version}


def cached_generate(
    backend: Backend,
    requests: Sequence[GenerationRequest],
    *,
    cache: CallCache | None,
    progress: Progress | None = None,
) -> list[Generation]:
    """Answer ``requests`` in order, paying only for calls no earlier run finished.

    Identical requests (same :meth:`GenerationRequest.cache_key`; ``tag`` does
    not count) are sent once; the first position gets the answer with
    ``cached=False`` and the others a copy with ``cached=True``. Hits are
    served with ``cached=True``. Each success is committed as it arrives; an
    answer that lacks an asked-for feature it cannot do without (any of
    ``unsupported`` but ``"json_schema"``) is returned but not stored. A failed
    request that kept some answered sequences is stored as a partial answer
    and resumed here next time; the failure is returned without them.

    Args:
        backend: The backend to call for what the cache lacks.
        requests: The requests, in the order the answers are wanted.
        cache: The call cache, or ``None`` to only deduplicate.
        progress: Advanced by one per request answered (hits at once).

    Returns:
        One generation per request; a failed call is a generation with ``error`` set.

    Raises:
        InvalidInputError: If ``backend`` or ``requests`` are not what they should be.
    """
    check_arg(backend, InstanceOf(Backend), name="backend", owner="cached_generate")
    check_arg(requests, REQUESTS, name="requests", owner="cached_generate")
    identity = call_identity(backend)
    keys = [request.cache_key(identity) for request in requests]
    positions: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        positions.setdefault(key, []).append(i)
    hits = cache.get_many(positions) if cache is not None else {}
    misses = [key for key in positions if key not in hits]
    partials: dict[str, Generation] = {}
    if cache is not None and misses:
        stored = cache.get_many(PARTIAL + key for key in misses)
        partials = {key: stored[PARTIAL + key] for key in misses if PARTIAL + key in stored}
    answers: dict[str, Generation] = dict(hits)
    label = backend.key

    with (progress or NullProgress()).task(f"generate ({backend.name})", len(requests)) as task:
        if hits:
            task.advance(sum(len(positions[key]) for key in hits))

        def finished(index: int, generation: Generation) -> None:
            key = misses[index]
            before = partials.get(key)
            if before is None:
                whole = now = generation
            else:
                whole = merged(before, generation)
                now = dataclasses.replace(whole, usage=generation.usage)  # what this run paid
            answers[key] = without_sequences(now) if now.error else now
            if cache is not None and not incomplete(whole):
                if not whole.error:
                    cache.put(key, whole, backend=label)
                    if before is not None:
                        cache.delete(PARTIAL + key)
                elif whole.texts:
                    cache.put_value(PARTIAL + key, whole.to_json(), backend=label, replace=True)
            task.advance(len(positions[key]))

        to_send = [rest_of(requests[positions[key][0]], partials.get(key)) for key in misses]
        if to_send:
            _send(backend, to_send, finished)

    out: list[Generation] = []
    for i, key in enumerate(keys):
        generation = answers[key]
        first = positions[key][0] == i
        out.append(generation if first or generation.cached else _as_cached(generation))
    return out


def incomplete(generation: Generation) -> tuple[str, ...]:
    """Return the features ``generation`` lacks that keep it out of the cache as complete.

    Every name in ``unsupported`` but ``"json_schema"``: a reply that did not
    follow the schema sent is still an answer the caller can read.
    """
    return tuple(f for f in generation.unsupported if f not in _USABLE_WITHOUT)


def _as_cached(generation: Generation) -> Generation:
    return dataclasses.replace(generation, cached=not generation.error)


def _send(
    backend: Backend,
    requests: Sequence[GenerationRequest],
    finished: Callable[[int, Generation], None],
) -> None:
    if isinstance(backend, ReportsEachResult):
        results = backend.generate_each(requests, finished)
        _check_count(backend, requests, results)
        return
    for start in range(0, len(requests), CHUNK):
        chunk = requests[start : start + CHUNK]
        results = backend.generate(chunk)
        _check_count(backend, chunk, results)
        for offset, generation in enumerate(results):
            finished(start + offset, generation)


def _check_count(backend: Backend, requests: Sequence[Any], results: Sequence[Any]) -> None:
    if len(results) != len(requests):
        raise InvalidInputError(
            f"The backend {backend.key!r} returned {len(results)} generations for "
            f"{len(requests)} requests; a backend must answer every request in order."
        )


def _reopen(path: str, timeout: float) -> CallCache:
    """Rebuild a pickled :class:`CallCache`."""
    return CallCache(path, timeout=timeout)
