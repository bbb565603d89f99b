"""Where a stage computes its batches: in this process, or on the workers of a Ray cluster.

A stage decides on the driver what it lacks (resume), splits that into
batches and hands an executor one task per batch::

    for result in executor.map(task, shared, items):
        ...  # one result per item, as each batch finishes

``task(shared, item)`` computes one batch and writes its records as one
atomic part into the run folder before it returns, so every finished batch
is on disk whether or not its result reaches the driver. ``shared`` is what
every batch reads (the component, the run's tables); a Ray executor puts it
into the object store once.

- :class:`LocalExecutor` runs the tasks in this process: one after the other,
  in order (the stages as they have always run), or, for a task marked
  :func:`thread_safe`, on a pool of ``workers`` threads (default: the cores
  this process may use), still yielding the results in item order. Numpy
  releases the GIL in its kernels, so evaluate's units use every core.
- :class:`RayExecutor` runs them as Ray tasks on a cluster's workers (any
  node), at most ``max_in_flight`` at a time, and yields results as they
  finish. A task whose worker dies (killed, node lost) is run again up to
  ``max_retries`` times; a part is a temporary file until it is renamed into
  place, so a killed worker leaves no torn part. Ray is imported only here,
  and only when the first batch is dispatched.

The run folder must be on storage every node sees under the same path
(NFS, a cluster file system): the driver and each worker open it by path.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Protocol, TypeVar

from realitycheck.errors import InvalidInputError, MissingDependencyError, RealityCheckError
from realitycheck.params import Interval, check_arg

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CHOICE_BATCH_SIZE",
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "available_cores",
    "make_executor",
    "thread_safe",
]

EXECUTORS = ("local", "ray")
"""The names :func:`make_executor` accepts (the CLI's ``--executor`` choices)."""

DEFAULT_BATCH_SIZE = 16
"""(example, variant) pairs per stored batch, the unit a stage hands an executor; the
default of ``[run] batch_size`` (:class:`realitycheck.runner.RunSettings`), of
``generate --batch-size`` and of :func:`realitycheck.generation.generate`."""

DEFAULT_CHOICE_BATCH_SIZE = 32
"""Questions per stored batch when answering by likelihood: the default of ``choose
--batch-size`` and of :func:`realitycheck.generation.choose`."""

S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")


class Executor(Protocol):
    """Maps a batch task over batches, here or elsewhere."""

    name: str

    def map(self, task: Callable[[S, T], U], shared: S, items: Sequence[T]) -> Iterator[U]:
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


def available_cores() -> int:
    """The number of CPU cores this process may run on (its affinity mask where known), >= 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform (macOS, Windows)
        return max(1, os.cpu_count() or 1)


class LocalExecutor:
    """Every batch in this process: one after the other, or on threads for a thread-safe task.

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

    def map(self, task: Callable[[S, T], U], shared: S, items: Sequence[T]) -> Iterator[U]:
        """Yield ``task(shared, item)`` for each item, in item order.

        A task's exception is raised here as itself, at that item's turn; the
        items not yet started are then cancelled.
        """
        if self.workers == 1 or len(items) < 2 or not getattr(task, _THREAD_SAFE, False):
            for item in items:
                yield task(shared, item)
            return
        with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
            futures: list[Future[U]] = [pool.submit(task, shared, item) for item in items]
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


class RayExecutor:
    """Every batch as a Ray task on the workers of a cluster.

    Args:
        address: The cluster (``HOST:PORT`` of its head, or ``auto``); default
            ``$RAY_ADDRESS``, and without it a Ray started on this machine.
        max_retries: Times a task is run again after its worker died (>= 0).
        max_in_flight: Tasks submitted at once (>= 1); default twice the cluster's CPUs.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        max_retries: int = 3,
        max_in_flight: int | None = None,
    ) -> None:
        check_arg(max_retries, Interval(int, 0), name="max_retries", owner="RayExecutor")
        if max_in_flight is not None:
            check_arg(max_in_flight, Interval(int, 1), name="max_in_flight", owner="RayExecutor")
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.max_retries = max_retries
        self.max_in_flight = max_in_flight
        self._ray: Any = None
        self._owns_connection = False

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r})"

    def connect(self) -> Any:
        """Import Ray and join the cluster (once); return the ``ray`` module.

        Raises:
            MissingDependencyError: Ray is not installed.
            InvalidInputError: No cluster answers at ``address``.
        """
        if self._ray is not None:
            return self._ray
        ray = _import_ray()
        if not ray.is_initialized():
            _check_reachable(self.address)
            try:
                ray.init(
                    address=self.address,
                    include_dashboard=False,
                    logging_level="ERROR",
                    log_to_driver=False,
                )
            except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
                first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                raise _unreachable(self.address, f"{type(exc).__name__}: {first_line}") from None
            self._owns_connection = True
        self._ray = ray
        return ray

    def map(self, task: Callable[[S, T], U], shared: S, items: Sequence[T]) -> Iterator[U]:
        """Yield ``task(shared, item)`` for every item, computed on the cluster, as each finishes.

        When a batch fails or the caller stops iterating, the tasks still running
        are cancelled; each has written its part whole or not at all.

        Raises:
            RealityCheckError: The error a task raised (re-raised here as itself).
        """
        if not items:
            return
        ray = self.connect()
        remote = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(task)
        shared_ref = ray.put(shared)
        window = self.max_in_flight or max(1, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending = list(reversed(items))
        running: list[Any] = []
        try:
            while pending or running:
                while pending and len(running) < window:
                    running.append(remote.remote(shared_ref, pending.pop()))
                done, running = ray.wait(running, num_returns=1)
                yield _result(ray, done[0])
        finally:  # a failed batch or a stopped stage: dispatch nothing more
            for ref in running:
                ray.cancel(ref)

    def close(self) -> None:
        """Leave the cluster if this executor joined it (a cluster it started stops)."""
        if self._ray is not None and self._owns_connection:
            self._ray.shutdown()
        self._ray, self._owns_connection = None, False


def _result(ray: Any, ref: Any) -> Any:
    """Return a finished task's value; a task's own realitycheck error is raised as itself."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, RealityCheckError):
            raise cause from None
        raise


def _check_reachable(address: str | None, timeout: float = 5.0) -> None:
    """Fail at once when ``HOST:PORT`` takes no connection (Ray itself retries for minutes)."""
    if not address or address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return
    except (OSError, ValueError) as exc:
        raise _unreachable(address, f"{type(exc).__name__}: {exc}") from None


def _unreachable(address: str | None, why: str) -> InvalidInputError:
    return InvalidInputError(
        f"No Ray cluster answers at {address!r} ({why}). "
        "Start one with `ray start --head`, then pass its address "
        "(--ray-address HOST:PORT or RAY_ADDRESS).",
        field="ray_address",
    )


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(
            "ray", extra="distributed", purpose="Running a stage on a Ray cluster"
        ) from None
    return ray


def make_executor(name: str, *, address: str | None = None, workers: int | None = None) -> Executor:
    """Return the executor called ``name`` (one of :data:`EXECUTORS`).

    Args:
        name: ``local`` (this process) or ``ray`` (a Ray cluster).
        address: The Ray cluster's address (``ray`` only; default ``$RAY_ADDRESS``).
        workers: Threads of a ``local`` executor for thread-safe tasks
            (evaluate's units); default one per usable core.

    Raises:
        InvalidInputError: An unknown name, an address given to ``local``,
            ``workers`` given to ``ray`` or below 1.
        MissingDependencyError: ``ray`` without Ray installed (checked here, before any work).
    """
    if name == "local":
        if address:
            raise InvalidInputError(
                "A Ray address was given, but the executor is 'local'; "
                "pass --executor ray to use the cluster.",
                field="ray_address",
            )
        return LocalExecutor(workers)
    if name == "ray":
        if workers is not None:
            raise InvalidInputError(
                "workers sets the threads of the local executor; a Ray cluster runs as "
                "many tasks as it has CPUs. Drop --workers or use --executor local.",
                field="workers",
            )
        _import_ray()
        return RayExecutor(address)
    raise InvalidInputError(
        f"The executor must be one of {', '.join(EXECUTORS)}. Got {name!r} instead.",
        field="executor",
    )
