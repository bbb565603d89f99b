"""Where tasks run: in this process, in worker processes, or on the workers of a Ray cluster.

A caller splits its work into items and hands an executor one task for
all of them::

    for result in executor.map(task, shared, items):
        ...  # one result per item

``task(shared, item)`` computes one item; ``shared`` is what every task
reads (a component, the run's tables). A stage's items are batches: its task
writes each batch's records as one atomic part into the run folder before it
returns, so every finished batch is on disk whether or not its result reaches
the caller. ``shared`` may be a :class:`WorkerState`, a recipe each worker
builds its state from once, so that a large state never travels.

- :class:`LocalExecutor` runs the tasks in this process: one after the other,
  in order (the stages as they have always run), or, for a task marked
  :func:`thread_safe`, on a pool of ``workers`` threads (default: the cores
  this process may use), still yielding the results in item order. Numpy
  releases the GIL in its kernels, so evaluate's units use every core.
- :class:`ProcessExecutor` runs them in ``workers`` fresh worker processes
  (spawned, or forked from a server that imported the modules they need
  once), each receiving or building ``shared`` once, and yields the results
  in item order: for work that holds the GIL, such as the studies, each
  worker loading the run once.
- :class:`RayExecutor` runs them as Ray tasks on a cluster's workers (any
  node), at most ``max_in_flight`` at a time, and yields results as they
  finish. A task whose worker dies (killed, node lost) is run again up to
  ``max_retries`` times; a part is a temporary file until it is renamed into
  place, so a killed worker leaves no torn part. Ray is imported only here,
  and only when the first batch is dispatched. The run folder must be on
  storage every node sees under the same path (NFS, a cluster file system):
  the driver and each worker open it by path.

Where results come in item order, a task's exception is raised as itself at
that item's turn, and the items not yet started are cancelled; so they are
when the caller stops reading (Ctrl-C). :func:`make_executor` builds the
executor a command names (:data:`EXECUTORS`).
"""

from realitycheck.executors._batches import DEFAULT_BATCH_SIZE, DEFAULT_CHOICE_BATCH_SIZE
from realitycheck.executors._factory import EXECUTORS, make_executor
from realitycheck.executors._local import LocalExecutor
from realitycheck.executors._process import WORKER_ENVIRONMENT, ProcessExecutor
from realitycheck.executors._protocol import (
    Executor,
    WorkerState,
    available_cores,
    thread_safe,
)
from realitycheck.executors._ray import RayExecutor

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CHOICE_BATCH_SIZE",
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "ProcessExecutor",
    "RayExecutor",
    "WORKER_ENVIRONMENT",
    "WorkerState",
    "available_cores",
    "make_executor",
    "thread_safe",
]
