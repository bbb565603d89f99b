"""The plain tables of a run config, each a settings dataclass declared once.

Each field declares its default, its constraint and a one-line doc with
:func:`realitycheck.params.param`, as a component's does;
:meth:`realitycheck.toml_lines.TomlFile.section` reads the table from the
file, and the command-line options that mirror a key are built from the same
field (:mod:`realitycheck.cli._fields`), so a default is written once.
The tables read the same way elsewhere: ``[bootstrap]``
(:class:`realitycheck.analysis.Bootstrap`), ``[evaluate]``
(:class:`realitycheck.pipeline.EvaluationConfig`), ``[executor]``
(:class:`realitycheck.runner.ExecutorSettings`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from realitycheck.executors import DEFAULT_BATCH_SIZE
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    OrNone,
    check_params,
    param,
)

__all__ = ["ComponentTable", "DatasetTable", "DetectSettings", "RunSettings"]

_TABLE = InstanceOf(dict, name="a table")


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """The ``[run]`` table: where the run is, how it is stored, what it writes.

    Attributes:
        out: The run folder (relative to the config file), or the URI of a run
            on object storage (``s3://bucket/run``).
        report_dir: The local folder of the tables, studies and report of a run
            on object storage (only there).
        batch_size: (example, variant) pairs per stored batch.
        cache: Whether to read and write the shared call cache.
        cache_dir: The folder of the call cache (``None``: the default one).
        data_dir: Where the datasets' files are (each dataset that reads files).
        report: Whether to write the report.
    """

    out: str = param(
        dataclasses.MISSING,
        NonEmptyStr(),
        doc="The run folder, or the URI of a run on object storage (s3://bucket/run).",
    )
    report_dir: str | None = param(
        None,
        OrNone(NonEmptyStr()),
        doc="The local folder of the tables, studies and report of a run on object storage.",
    )
    batch_size: int = param(
        DEFAULT_BATCH_SIZE,
        Interval(int, 1),
        doc="(example, variant) pairs per stored batch.",
    )
    cache: bool = param(True, InstanceOf(bool), doc="Read and write the shared call cache.")
    cache_dir: str | None = param(None, OrNone(NonEmptyStr()), doc="Folder of the call cache.")
    data_dir: str | None = param(None, OrNone(NonEmptyStr()), doc="Where the datasets' files are.")
    report: bool = param(True, InstanceOf(bool), doc="Write the report.")

    def __post_init__(self) -> None:
        check_params(self, owner="[run]")


@dataclass(frozen=True, kw_only=True)
class DetectSettings:
    """The ``[detect]`` table of a run config: how the detect stage reads the responses.

    Attributes:
        proxy_backend: A backend key (``hf[model="path/to/model"]``) of a local
            white-box model that reads the responses carrying no features of
            their own (a dataset's answers), as ``realitycheck detect --backend``
            does: each is teacher-forced after the prompt generation would have
            sent (:class:`~realitycheck.generation.GenerationPrompt`), and the
            detectors that read log-probabilities, entropies or hidden states
            score that proxy's view, named as such in their specs and the report
            (:class:`~realitycheck.pipeline.ProxyModel`). ``None``: no proxy.
    """

    proxy_backend: str | None = param(
        None,
        OrNone(NonEmptyStr()),
        doc="A local white-box model's backend key that reads answers the run did not generate.",
    )

    def __post_init__(self) -> None:
        check_params(self, owner="[detect]")


@dataclass(frozen=True, kw_only=True)
class ComponentTable:
    """A component written as a table, ``{ name = "...", params = { ... } }``."""

    name: str | None = param(None, OrNone(NonEmptyStr()), doc="The registered name.")
    params: Mapping[str, Any] = param(
        dataclasses.MISSING, _TABLE, default_factory=dict, doc="Its parameters."
    )


@dataclass(frozen=True, kw_only=True)
class DatasetTable:
    """One ``[[datasets]]`` table: a dataset (name, params) or spec files (spec)."""

    name: str | None = param(None, OrNone(NonEmptyStr()), doc="The registered dataset.")
    params: Mapping[str, Any] = param(
        dataclasses.MISSING, _TABLE, default_factory=dict, doc="Its parameters."
    )
    limit: int | None = param(
        None, OrNone(Interval(int, 1)), doc="Answer the first N examples only."
    )
    spec: Any = (
        param(  # one path or an array of them: checked, with each item's line, by the reader
            None,
            doc="Dataset spec files (a path or a list of them), instead of name and params.",
        )
    )
