"""Tasks and states for ProcessExecutor's tests, importable by its spawned workers.

The workers are fresh interpreters (``spawn``): what they run must be defined
in a module they can import, not in a test function.
"""

import os
import time
import uuid
from pathlib import Path

IMPORTED_BY = os.getpid()
"""The process that imported this module: a spawned worker, or the fork server of a worker."""


class TaskError(RuntimeError):
    """The error a task raises on purpose (a class of its own, so a test can tell it)."""


def after_the_next(folder, item):
    """``(item, pid)``; an even item returns only once the odd one after it has (30 s at most).

    So with two workers item 1 finishes before item 0, item 3 before item 2.
    """
    folder = Path(folder)
    if item % 2 == 0:
        deadline = time.monotonic() + 30
        while not (folder / f"done-{item + 1}").exists():
            if time.monotonic() > deadline:
                raise TaskError(f"item {item + 1} never finished")
            time.sleep(0.01)
    (folder / f"done-{item}").touch()
    return item, os.getpid()


def touch_then_fail_at_one(folder, item):
    """Mark ``item`` as started in ``folder``; item 1 raises, the others take a moment."""
    (Path(folder) / f"started-{item}").touch()
    if item == 1:
        raise TaskError("item 1 failed")
    time.sleep(0.05)
    return item


def build_counted(folder):
    """A worker's state: writes one file per build, named by the building process and a token."""
    token = uuid.uuid4().hex
    (Path(folder) / f"built-{os.getpid()}-{token}").touch()
    return {"pid": os.getpid(), "token": token}


def read_state(state, item):
    """``(item, pid, state's pid, state's token)``, after a moment so every worker gets items."""
    time.sleep(0.05)
    return item, os.getpid(), state["pid"], state["token"]


def build_failing(message):
    """A state that cannot be built."""
    raise TaskError(message)


def add(shared, item):
    """``shared + item``."""
    return shared + item


def die_at_one(shared, item):
    """End the worker process at item 1, as a crash in native code would."""
    if item == 1:
        time.sleep(0.2)  # item 0 comes back first
        os._exit(3)
    return item


def environment(shared, item):
    """This worker's value of the variable named ``shared`` (or "unset")."""
    return os.environ.get(shared, "unset")


def die_at_one_after_two(folder, item):
    """Item 1 ends its worker once item 2 has finished; the others return at once."""
    folder = Path(folder)
    if item == 1:
        deadline = time.monotonic() + 30
        while not (folder / "done-2").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # item 2's result is on its way back
        os._exit(3)
    if item == 2:
        (folder / "done-2").touch()
    return item


def imported_by(shared, item):
    """``(pid that imported this module, this worker's pid, its value of the variable shared)``."""
    return IMPORTED_BY, os.getpid(), os.environ.get(shared, "unset")
