"""Every task as a Ray task on the workers of a cluster (Ray is imported only when used)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from realitycheck.errors import InvalidInputError, MissingDependencyError, RealityCheckError
from realitycheck.executors._protocol import WorkerState
from realitycheck.params import Interval, check_arg

__all__ = ["RayExecutor", "import_ray"]

S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")


class RayExecutor:
    """Every task as a Ray task on the workers of a cluster, yielded as each finishes.

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
        ray = import_ray()
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

    def map(
        self, task: Callable[[S, T], U], shared: S | WorkerState[S], items: Sequence[T]
    ) -> Iterator[U]:
        """Yield ``task(shared, item)`` for every item, computed on the cluster, as each finishes.

        ``shared`` is put into the object store once. When a batch fails or the
        caller stops iterating, the tasks still running are cancelled; each has
        written its part whole or not at all.

        Raises:
            RealityCheckError: The error a task raised (re-raised here as itself).
            InvalidInputError: ``shared`` is a :class:`WorkerState`: a Ray worker
                process outlives the map, so there is no moment to build it once
                per worker and let it go (before any task is sent).
        """
        if isinstance(shared, WorkerState):
            raise InvalidInputError(
                "RayExecutor takes the shared state itself, not a WorkerState (it puts "
                "the state into the object store once); use LocalExecutor or "
                "ProcessExecutor to build a state in each worker.",
                field="shared",
            )
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


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(
            "ray", extra="distributed", purpose="Running a stage on a Ray cluster"
        ) from None
    return ray
