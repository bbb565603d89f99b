"""Opening one new SQLite cache file from many threads at once loses no writer."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from realitycheck.store import sqlite_files

SCHEMA = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER)"


def _open_together(path, writers: int) -> list[str]:
    """``writers`` threads open ``path`` at the same moment and insert one row each."""
    errors: list[str] = []
    start = threading.Barrier(writers)

    def write(w: int) -> None:
        start.wait()
        try:
            conn = sqlite_files.connect(path, timeout=10.0, schema=SCHEMA)
            try:
                conn.execute("INSERT INTO t VALUES (?, ?)", (f"w{w}", w))
            finally:
                conn.close()
        except sqlite3.Error as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_writers_opening_a_new_file_together_all_get_in(tmp_path):
    # Opened with plain PRAGMA journal_mode = WAL + CREATE TABLE, about one new
    # file in eight lost a writer to "database is locked" on two cores.
    for rep in range(30):
        path = tmp_path / f"c{rep}" / "cache.sqlite"
        assert _open_together(path, writers=6) == [], rep
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 6
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            conn.close()


def test_an_error_other_than_a_lock_is_raised_at_once(tmp_path):
    with pytest.raises(sqlite3.OperationalError, match="syntax error"):
        sqlite_files.connect(tmp_path / "c.sqlite", timeout=30.0, schema="CREATE TABLEX t (k)")
