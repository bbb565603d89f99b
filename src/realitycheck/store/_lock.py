"""One writer per run folder: ``RUN/run.lock`` names the process that holds it.

The lock is a file created exclusively (``O_CREAT | O_EXCL``) holding the
holder's pid, host, command and start time as JSON. A second writer stops
with a message naming them. A lock whose process is gone (a dead pid on this
host, or this very process) is stale: it is taken over, with a note saying so.
A lock from another host is never taken over; its message says how to remove
it by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from pathlib import Path
from types import TracebackType
from typing import Any

from realitycheck.errors import RunFolderError

__all__ = ["LOCK_NAME", "RunLock", "lock_holder"]

LOCK_NAME = "run.lock"


def _alive(pid: int) -> bool:
    """Whether a process with ``pid`` runs on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_holder(run: Path) -> dict[str, Any] | None:
    """Return what the lock file of ``run`` says about its holder, or None when unlocked."""
    path = Path(run) / LOCK_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"pid": -1, "host": "?", "command": "? (unreadable lock file)", "since": "?"}
    return data if isinstance(data, dict) else {"pid": -1, "host": "?", "command": "?"}


def _describe(holder: dict[str, Any]) -> str:
    return (
        f"pid {holder.get('pid')} on host {holder.get('host')}, running "
        f"`{holder.get('command')}` since {holder.get('since')}"
    )


class RunLock:
    """Hold ``RUN/run.lock`` while a command writes the run (a context manager).

    Args:
        run: The run folder (created if missing).
        command: What the holder runs, shown to a second writer.

    Attributes:
        note: Set when a stale lock was taken over, saying whose it was.
    """

    def __init__(self, run: str | Path, command: str) -> None:
        self.run = Path(run)
        self.command = command
        self.note = ""
        self._held = False

    @property
    def path(self) -> Path:
        """The lock file."""
        return self.run / LOCK_NAME

    def acquire(self) -> RunLock:
        """Take the lock, or take over a stale one.

        Raises:
            RunFolderError: When another live process holds it.
        """
        self.run.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = lock_holder(self.run) or {}
                if not self._stale(holder):
                    raise RunFolderError(
                        f"Another process is writing this run: {_describe(holder)}. Wait "
                        "for it to finish, or use another run folder. If that process is "
                        f"gone (another host cannot be checked from here), delete {self.path}.",
                        path=self.run,
                    ) from None
                self.note = f"Took over a stale lock of the run ({_describe(holder)})."
                self.path.unlink(missing_ok=True)
                continue
            info = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": self.command,
                "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(info, fh)
            self._held = True
            return self
        raise RunFolderError(
            "Another process took the run's lock at the same moment.", path=self.path
        )

    @staticmethod
    def _stale(holder: dict[str, Any]) -> bool:
        if holder.get("host") != socket.gethostname():
            return False
        pid = holder.get("pid")
        return isinstance(pid, int) and (pid == os.getpid() or not _alive(pid))

    def release(self) -> None:
        """Remove the lock file if this object holds it."""
        if self._held:
            self.path.unlink(missing_ok=True)
            self._held = False

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
