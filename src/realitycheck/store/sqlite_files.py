"""SQLite files that several processes and threads open at once: the call and embedding caches.

Both caches keep one table in a WAL-journalled file that runs, Ray workers
and study workers share. SQLite answers ``database is locked`` without
waiting (its busy handler is not called) when a connection switches a file
into WAL mode, or creates its table, while another connection is doing the
same: exactly what happens when several writers open a new cache together.
:func:`connect` retries those first steps until the timeout; every later
statement waits through the busy timeout as usual.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

__all__ = ["connect"]

_PAUSE_S = 0.01  # between tries of the first steps


def connect(
    path: Path, *, timeout: float, schema: str, check_same_thread: bool = True
) -> sqlite3.Connection:
    """Open ``path`` (its folder created) in WAL mode with ``schema`` run, in autocommit.

    Args:
        path: The SQLite file.
        timeout: Seconds to wait for other connections' locks, the first steps included.
        schema: A ``CREATE TABLE IF NOT EXISTS ...`` statement.
        check_same_thread: sqlite3's check that only the opening thread uses the connection.

    Raises:
        sqlite3.OperationalError: The file stayed locked for ``timeout`` seconds,
            or any other SQLite error.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        path, timeout=timeout, isolation_level=None, check_same_thread=check_same_thread
    )
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    deadline = time.monotonic() + timeout
    while True:
        try:
            _first_steps(conn, schema)
            return conn
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() >= deadline:
                conn.close()
                raise
            time.sleep(_PAUSE_S)


def _first_steps(conn: sqlite3.Connection, schema: str) -> None:
    """WAL mode (kept in the file, so switched only once), NORMAL sync, the table."""
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: durable across process kills
    conn.execute(schema)


def _locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text
