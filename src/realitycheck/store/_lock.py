"""One writer per run folder: ``RUN/run.lock`` names the process that holds it.

The lock is a file created exclusively (``O_CREAT | O_EXCL``) holding the
holder's pid, host, command and start time as JSON. A second writer stops
with a message naming them. A lock whose process is gone (a dead pid on this
host, or this very process) is stale: it is taken over, with a note saying so.
A lock from another host is never taken over; its message says how to remove
it by hand.

A run on object storage (a URI, :mod:`._fs`) has the same ``run.lock``, as an
object the driver writes (workers never take the lock). ``pyarrow.fs`` has
no conditional write (no create-if-absent), so the lock there is check, write,
then read back: the driver that reads back another holder's token gives up. Two
drivers started on one run are refused unless both check within the same
moment, before either has written; that window (one request's time) is the
documented limitation, as is a lock left by a driver killed on another host
(delete the ``run.lock`` object by hand).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

from realitycheck.errors import RunFolderError
from realitycheck.store._fs import RemoteFolder, remote_folder

__all__ = ["LOCK_NAME", "RunLock", "lock_holder", "lock_is_stale"]

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


def lock_holder(run: str | Path | RemoteFolder) -> dict[str, Any] | None:
    """Return what the lock file of ``run`` says about its holder, or None when unlocked."""
    remote = remote_folder(run)
    try:
        if remote is not None:
            raw = remote.read_bytes(LOCK_NAME)
            if raw is None:
                return None
            data = json.loads(raw.decode("utf-8"))
        else:
            data = json.loads((Path(str(run)) / LOCK_NAME).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"pid": -1, "host": "?", "command": "? (unreadable lock file)", "since": "?"}
    return data if isinstance(data, dict) else {"pid": -1, "host": "?", "command": "?"}


def lock_is_stale(holder: dict[str, Any]) -> bool:
    """Whether a lock's holder is gone: a pid on this host that no longer runs (or this process).

    A lock from another host is never stale here: its process cannot be checked.
    """
    if holder.get("host") != socket.gethostname():
        return False
    pid = holder.get("pid")
    return isinstance(pid, int) and (pid == os.getpid() or not _alive(pid))


def _describe(holder: dict[str, Any]) -> str:
    return (
        f"pid {holder.get('pid')} on host {holder.get('host')}, running "
        f"`{holder.get('command')}` since {holder.get('since')}"
    )


class RunLock:
    """Hold ``RUN/run.lock`` while a command writes the run (a context manager).

    Args:
        run: The run folder (created if missing), or its URI (or opened
            :class:`RemoteFolder`) on object storage.
        command: What the holder runs, shown to a second writer.

    Attributes:
        run: The local run folder (``Path()`` for a run on object storage; see
            :attr:`location`).
        note: Set when a stale lock was taken over, saying whose it was.
    """

    def __init__(self, run: str | Path | RemoteFolder, command: str) -> None:
        self._remote: RemoteFolder | None = remote_folder(run)
        self.run = Path(str(run)) if self._remote is None else Path()
        self.command = command
        self.note = ""
        self._held = False
        self._token = uuid.uuid4().hex

    @property
    def path(self) -> Path:
        """The lock file of a local run.

        Raises:
            RunFolderError: The run is on object storage (its lock is an object).
        """
        if self._remote is not None:
            raise RunFolderError(
                f"The lock of a run on object storage is the object {self._where}.",
                path=self.location,
            )
        return self.run / LOCK_NAME

    @property
    def _where(self) -> str:
        """The lock as it may be printed: its file, or its object's redacted URI."""
        if self._remote is not None:
            return str(self._remote.file(LOCK_NAME))
        return str(self.run / LOCK_NAME)

    def _info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": self.command,
            "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "token": self._token,
        }

    def _refuse(self, holder: dict[str, Any]) -> RunFolderError:
        return RunFolderError(
            f"Another process is writing this run: {_describe(holder)}. Wait "
            "for it to finish, or use another run folder. If that process is "
            f"gone (another host cannot be checked from here), delete {self._where}.",
            path=self.location,
        )

    @property
    def folder(self) -> Path | RemoteFolder:
        """The run as :class:`RunStore` opens it: the local folder, or the remote one.

        The remote folder is the one the lock checked, so a store opened on it
        does not ask for the bucket again.
        """
        return self.run if self._remote is None else self._remote

    @property
    def location(self) -> str:
        """The run, as it may be printed."""
        return str(self.run) if self._remote is None else self._remote.shown

    def _acquire_remote(self, remote: RemoteFolder) -> RunLock:
        """Check, write, read back (object storage has no create-if-absent; module docstring)."""
        remote.check()
        holder = lock_holder(remote)
        if holder is not None:
            if not lock_is_stale(holder):
                raise self._refuse(holder)
            self.note = f"Took over a stale lock of the run ({_describe(holder)})."
        remote.write_bytes(LOCK_NAME, json.dumps(self._info()).encode("utf-8"))
        now = lock_holder(remote) or {}
        if now.get("token") != self._token:
            raise RunFolderError(
                f"Another process took the run's lock at the same moment: {_describe(now)}.",
                path=self.location,
            )
        self._held = True
        return self

    def acquire(self) -> RunLock:
        """Take the lock, or take over a stale one.

        Raises:
            RunFolderError: When another live process holds it.
        """
        if self._remote is not None:
            return self._acquire_remote(self._remote)
        self.run.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = lock_holder(self.run) or {}
                if not lock_is_stale(holder):
                    raise self._refuse(holder) from None
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

    def release(self) -> None:
        """Remove the lock file if this object holds it (on object storage: if it still does)."""
        if not self._held:
            return
        self._held = False
        if self._remote is None:
            self.path.unlink(missing_ok=True)
        elif (lock_holder(self._remote) or {}).get("token") == self._token:
            self._remote.delete(LOCK_NAME)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
