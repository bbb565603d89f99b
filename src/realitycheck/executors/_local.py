"""Every task in this process: one after the other, or on threads for a thread-safe task."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from realitycheck.executors._protocol import WorkerState, available_cores, is_thread_safe, state_of
from realitycheck.params import Interval, check_arg

__all__ = ["LocalExecutor"]

S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")


class LocalExecutor:
    """Every task in this process: one after the other, or on threads for a thread-safe task.

    Args:
        workers: Threads for a task marked :func:`thread_safe` (>= 1); default
            :func:`available_cores`. ``1`` runs every task in turn. Other tasks
            always run one after the other, in order.
        on_stop: Called when a task on the threads failed or the caller stopped
            reading the results (Ctrl-C), and again every 50 ms until the tasks
            already running have ended: what stops them early (the label stage
            cancels the server calls they wait on, including calls a task hands
            over after the first stop).
    """

    name = "local"

    def __init__(
        self, workers: int | None = None, *, on_stop: Callable[[], object] | None = None
    ) -> None:
        if workers is not None:
            check_arg(workers, Interval(int, 1), name="workers", owner="LocalExecutor")
        self.workers = workers if workers is not None else available_cores()
        self.on_stop = on_stop

    def __repr__(self) -> str:
        return f"LocalExecutor(workers={self.workers})"

    def map(
        self, task: Callable[[S, T], U], shared: S | WorkerState[S], items: Sequence[T]
    ) -> Iterator[U]:
        """Yield ``task(shared, item)`` for each item, in item order.

        A :class:`WorkerState` is built once, here, before the first task, and
        every thread reads what it built. A task's exception is raised here as
        itself, at that item's turn; the items not yet started are then cancelled.
        """
        if not items:
            return
        state = state_of(shared)
        if self.workers == 1 or len(items) < 2 or not is_thread_safe(task):
            for item in items:
                yield task(state, item)
            return
        with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
            futures: list[Future[U]] = [pool.submit(task, state, item) for item in items]
            finished = False
            try:
                for future in futures:
                    yield future.result()
                finished = True
            finally:  # a failed task or a stopped stage: start nothing more
                for future in futures:
                    future.cancel()
                if not finished and self.on_stop is not None:
                    _stop_until_done(futures, self.on_stop)

    def close(self) -> None:
        """Nothing to release."""


def _stop_until_done(futures: Sequence[Future[Any]], on_stop: Callable[[], object]) -> None:
    """Call ``on_stop()`` until every task already running has ended.

    A task may start new work after the first call (a batch that was still
    making its prompts hands its calls over a moment later), so one call is
    not enough: each round stops what was started since the last.
    """
    running = [future for future in futures if not future.done()]
    while True:
        on_stop()
        if not running:
            return
        _, pending = wait(running, timeout=_STOP_ROUND_SECONDS)
        running = list(pending)


_STOP_ROUND_SECONDS = 0.05
