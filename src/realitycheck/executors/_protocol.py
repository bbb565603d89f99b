"""What every executor shares: the :class:`Executor` protocol and the state its workers read."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Executor", "WorkerState", "available_cores", "state_of", "thread_safe"]

S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True)
class WorkerState(Generic[S]):
    """A shared state each worker builds for itself, once, instead of receiving a copy.

    Given as ``shared`` to :meth:`Executor.map`, each worker calls
    ``build(*args)`` once, before its first task runs, and hands the result to
    every task it runs (:class:`LocalExecutor`: once, in this process;
    :class:`ProcessExecutor`: once in each worker process, again at the next
    task if the build raised; :class:`RayExecutor` refuses it). For a state that
    is large or should not travel, such as a run's tables: the recipe travels,
    never the state. ``build`` and ``args`` must pickle for
    :class:`ProcessExecutor` (a module-level function and plain values).

    Attributes:
        build: Makes the state (``RunData`` from a run folder's path, say).
        args: Its positional arguments.
    """

    build: Callable[..., S]
    args: tuple[Any, ...] = ()


def state_of(shared: S | WorkerState[S]) -> S:
    """Return what a task reads: ``shared`` itself, or what a :class:`WorkerState` builds."""
    if isinstance(shared, WorkerState):
        return shared.build(*shared.args)
    return shared


class Executor(Protocol):
    """Maps a task over items, here or elsewhere."""

    name: str

    def map(
        self, task: Callable[[S, T], U], shared: S | WorkerState[S], items: Sequence[T]
    ) -> Iterator[U]:
        """Yield ``task(shared, item)`` for every item (order not guaranteed)."""

    def close(self) -> None:
        """Release what the executor holds (a cluster connection it opened)."""


_THREAD_SAFE = "__realitycheck_thread_safe__"


def thread_safe(task: Callable[[S, T], U]) -> Callable[[S, T], U]:
    """Mark ``task`` as safe to run on several threads at once (returns it unchanged).

    A marked task may read ``shared`` from many threads; whatever it caches
    there must be guarded by a lock. Only marked tasks run on
    :class:`LocalExecutor`'s threads; the others run one after the other.
    """
    setattr(task, _THREAD_SAFE, True)
    return task


def is_thread_safe(task: Callable[..., Any]) -> bool:
    """Whether ``task`` was marked by :func:`thread_safe`."""
    return bool(getattr(task, _THREAD_SAFE, False))


def available_cores() -> int:
    """The number of CPU cores this process may run on (its affinity mask where known), >= 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform (macOS, Windows)
        return max(1, os.cpu_count() or 1)
