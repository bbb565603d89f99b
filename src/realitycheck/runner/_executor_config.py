"""The ``[executor]`` table of a run config: where the run's batches are computed.

::

    [executor]
    kind = "ray"                   # local (this process; the default) | ray
    address = "10.0.0.1:6379"      # the Ray cluster's head; leave out for $RAY_ADDRESS,
                                   # and without it, a Ray started on this machine
    workers = 4                    # local only: evaluate's threads and the studies'
                                   # processes; leave out for one per usable core

With ``kind = "ray"``, generation, the label and detect stages and evaluate's
metrics run as Ray tasks on the cluster's workers (see
:mod:`realitycheck.executors`); answering MCQ datasets by likelihood
(``[choice]``), the studies and the report run on this machine. The run folder
must be on storage every node sees under the same path. ``realitycheck run``'s
``--executor``, ``--ray-address`` and ``--workers`` override the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from realitycheck.executors import EXECUTORS, Executor, make_executor
from realitycheck.params import Interval, NonEmptyStr, OneOf, OrNone, check_params, param
from realitycheck.params.toml_lines import TomlFile, section_keys

__all__ = ["EXECUTOR_KEYS", "ExecutorSettings", "parse_executor"]


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


@dataclass(frozen=True, kw_only=True)
class ExecutorSettings:
    """Where a run computes its batches (the ``[executor]`` table).

    Attributes:
        kind: One of :data:`realitycheck.executors.EXECUTORS`: ``local`` (this
            process) or ``ray`` (the workers of a Ray cluster).
        address: The Ray cluster's head, ``HOST:PORT`` (``ray`` only);
            ``None`` = ``$RAY_ADDRESS``, and without it a Ray started here.
        workers: How many of this machine's cores the run uses (``local``
            only): the threads computing evaluate's metrics and the processes
            computing the studies side by side; ``None`` = one per usable core.
            The stored results are the same whatever it is.
    """

    kind: str = param(
        "local",
        OneOf(EXECUTORS),
        doc="Where the batches are computed: local (this process) or ray (a Ray cluster).",
    )
    address: str | None = param(
        None,
        OrNone(NonEmptyStr()),
        convert=_stripped,
        doc="The Ray cluster's head, HOST:PORT (ray only; default: $RAY_ADDRESS).",
    )
    workers: int | None = param(
        None,
        OrNone(Interval(int, 1)),
        doc="How many of this machine's cores the run uses (local only; default: every one).",
    )

    def __post_init__(self) -> None:
        check_params(self, owner="[executor]")

    def overridden(
        self, kind: str | None, address: str | None, workers: int | None = None
    ) -> ExecutorSettings:
        """These settings with ``--executor`` / ``--ray-address`` / ``--workers`` applied.

        A given ``kind`` replaces this one; the table's address is kept only
        while the kind stays ``ray``, its workers only while it stays
        ``local``. A given ``address`` or ``workers`` replaces the table's.
        """
        chosen = kind or self.kind
        kept_address = self.address if chosen == "ray" == self.kind else None
        kept_workers = self.workers if chosen == "local" == self.kind else None
        return ExecutorSettings(
            kind=chosen, address=address or kept_address, workers=workers or kept_workers
        )

    def build(self) -> Executor:
        """Return the executor (not yet connected; a Ray one joins at its first batch).

        Raises:
            MissingDependencyError: ``ray`` without Ray installed.
            InvalidInputError: An address with ``kind = "local"``, workers with ``ray``.
        """
        return make_executor(self.kind, address=self.address, workers=self.workers)


EXECUTOR_KEYS = section_keys(ExecutorSettings)
"""The keys of ``[executor]``: the fields of :class:`ExecutorSettings`."""


def parse_executor(reader: TomlFile, raw: Any) -> ExecutorSettings:
    """Read the ``[executor]`` table, naming the key of any mistake."""
    settings = reader.section(ExecutorSettings, raw, ["executor"])
    if settings.address is not None and settings.kind != "ray":
        raise reader.fail(
            'An address is for a Ray cluster: add kind = "ray", or remove the address.',
            ["executor", "address"],
        )
    if settings.workers is not None and settings.kind != "local":
        raise reader.fail(
            "workers sets this machine's threads and study processes; a Ray cluster "
            'runs as many tasks as it has CPUs. Remove workers, or use kind = "local".',
            ["executor", "workers"],
        )
    return settings
