"""The executor a command names: ``--executor local`` or ``--executor ray``."""

from __future__ import annotations

from realitycheck.errors import InvalidInputError
from realitycheck.executors._local import LocalExecutor
from realitycheck.executors._protocol import Executor
from realitycheck.executors._ray import RayExecutor, import_ray

__all__ = ["EXECUTORS", "make_executor"]

EXECUTORS = ("local", "ray")
"""The names :func:`make_executor` accepts (the CLI's ``--executor`` choices).

:class:`~realitycheck.executors.ProcessExecutor` is not among them: a stage's
tasks and shared state (a loaded model, a server's client) need not pickle;
the studies use it directly."""


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
        import_ray()
        return RayExecutor(address)
    raise InvalidInputError(
        f"The executor must be one of {', '.join(EXECUTORS)}. Got {name!r} instead.",
        field="executor",
    )
