"""The plain tables of a run config, each a settings dataclass declared once.

Each field declares its default, its constraint and a one-line doc with
:func:`realitycheck.params.param`, as a component's does;
:meth:`realitycheck.params.toml_lines.TomlFile.section` reads the table from the
file, and the command-line options that mirror a key are built from the same
field (:mod:`realitycheck.cli._fields`), so a default is written once.
The tables read the same way elsewhere: ``[bootstrap]``
(:class:`realitycheck.analysis.Bootstrap`), ``[evaluate]``
(:class:`realitycheck.pipeline.EvaluationConfig`), ``[executor]``
(:class:`realitycheck.runner.ExecutorSettings`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import textwrap
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
    constraint_text,
    default_of,
    param,
    param_doc,
)

__all__ = [
    "TABLES",
    "ComponentTable",
    "DatasetTable",
    "DetectSettings",
    "RunSettings",
    "describe_table",
    "table_doc",
]

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


TABLES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "run": ("realitycheck.runner._sections", "RunSettings", ()),
    "executor": ("realitycheck.runner._executor_config", "ExecutorSettings", ()),
    "detect": ("realitycheck.runner._sections", "DetectSettings", ()),
    "bootstrap": ("realitycheck.analysis", "Bootstrap", ()),
    "evaluate": (
        "realitycheck.pipeline",
        "EvaluationConfig",
        ("detectors", "labelers", "bootstrap", "reference"),
    ),
}
"""The run config's tables of plain settings: name -> (module, dataclass, fields that are
not keys of the table); each loads when described."""


def _toml_value(value: Any) -> str:
    """Write a default as TOML would (``true``, ``"local"``, ``0.95``); ``unset`` for None."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Mapping) and not value:
        return "{}"
    if isinstance(value, tuple | list) and not value:
        return "[]"
    return repr(value)


def _wrap(text: str) -> str:
    return textwrap.fill(
        text, width=88, initial_indent=" " * 6, subsequent_indent=" " * 6, break_long_words=False
    )


def _documented(cls: type) -> dict[str, str]:
    """The entries under ``Args:`` / ``Attributes:`` of a class docstring, by name."""
    entries: dict[str, str] = {}
    current, inside = "", False
    for line in inspect.cleandoc(cls.__doc__ or "").splitlines():
        if line.strip() in ("Args:", "Attributes:"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
        elif inside and line.startswith("    ") and not line.startswith("     "):
            current, _, text = line.strip().partition(":")
            entries[current] = text.strip()
        elif inside and current and line.strip():
            entries[current] += " " + line.strip()
    return entries


def table_doc(name: str) -> dict[str, Any]:
    """Return the documentation of the run config's table ``name`` (``bootstrap``) as data.

    Each key's type, default, constraint and doc are read from its field, the
    one place they are declared (as ``realitycheck describe`` does for a component).

    Raises:
        KeyError: No such table (see :data:`TABLES`).
    """
    table = name.strip("[]")
    module, attr, skip = TABLES[table]
    cls = getattr(importlib.import_module(module), attr)
    keys = []
    documented = _documented(cls)
    for f in dataclasses.fields(cls):
        if not f.init or f.name in skip:
            continue
        value = default_of(f)
        keys.append(
            {
                "name": f.name,
                "type": str(f.type),
                "default": None if value is dataclasses.MISSING else _toml_value(value),
                "required": value is dataclasses.MISSING,
                "constraint": constraint_text(f),
                "doc": param_doc(f) or documented.get(f.name, ""),
            }
        )
    summary = inspect.cleandoc(cls.__doc__ or "").partition("\n")[0]
    return {"name": f"[{table}]", "summary": summary, "keys": keys}


def describe_table(name: str) -> str:
    """Return :func:`table_doc` as text for a terminal, laid out as a component's."""
    doc = table_doc(name)
    lines = [f"{doc['name']} (run config table)", "", doc["summary"], "", "Keys:"]
    for key in doc["keys"]:
        default = "required" if key["required"] else f"default {key['default']}"
        lines.append(f"  {key['name']}: {key['type']} ({default})")
        lines.append(_wrap(f"must be {key['constraint']}"))
        if key["doc"]:
            lines.append(_wrap(key["doc"]))
    return "\n".join(lines)
