"""The ``[[datasets]]`` tables of a run config: each a dataset (name, params) or spec files."""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path
from typing import Any

from realitycheck.datasets import Dataset, datasets
from realitycheck.datasets.spec_file import SPEC_SUFFIXES, is_spec_file, load_spec
from realitycheck.params.toml_lines import TomlFile, dotted
from realitycheck.runner._sections import DatasetTable

__all__ = ["DatasetEntry", "path_list", "read_datasets"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class DatasetEntry:
    """One dataset of a run config: the component and how many examples to answer."""

    dataset: Dataset
    limit: int | None = None


def path_list(reader: TomlFile, value: Any, keys: list[str | int]) -> list[Path]:
    """One path or a non-empty array of paths, each relative to the config file."""
    if isinstance(value, list) and value:
        return [
            reader.path_of(reader.typed(v, str, [*keys, j]), [*keys, j])
            for j, v in enumerate(value)
        ]
    if not isinstance(value, str) or not value.strip():
        raise reader.bad_value(keys, "a path or a non-empty array of paths", value)
    return [reader.path_of(value, keys)]


def _spec_datasets(reader: TomlFile, value: Any, keys: list[str | int]) -> list[Dataset]:
    """The datasets of the spec files ``spec`` names (one path or an array of them).

    A mistake inside a spec file is reported by the spec file (its path, line
    and key); a path that is no spec file, or a missing one, by this config.
    """
    paths = path_list(reader, value, keys)
    out: list[Dataset] = []
    for j, path in enumerate(paths):
        where = [*keys, j] if isinstance(value, list) else keys
        if not is_spec_file(path.name):
            raise reader.fail(
                f"Expected a dataset spec file ({', '.join(SPEC_SUFFIXES)}). Got {path.name!r} "
                "instead; a data file goes in params.path of a files dataset.",
                where,
            )
        if not path.is_file():
            raise reader.fail(f"The spec file {str(path)!r} does not exist.", where)
        out.extend(load_spec(path))
    return out


def _check_name(
    reader: TomlFile,
    named: dict[str, tuple[list[str | int], str]],
    dataset: Dataset,
    keys: list[str | int],
) -> None:
    """Refuse a second dataset of the same name in the run made otherwise (before any work)."""
    run_name = str(getattr(dataset, "run_name", dataset.name))
    if run_name in named and named[run_name][1] != dataset.spec_json:
        raise reader.fail(
            f"Two datasets are named {run_name!r} (the first by {dotted(named[run_name][0])}) "
            "with other parameters; each dataset of a run needs its own name (title = ... for "
            "a files dataset, name = ... in a spec file).",
            keys,
        )
    named.setdefault(run_name, (keys, dataset.spec_json))


def _one(
    reader: TomlFile, name: str, table: DatasetTable, where: list[str | int], data_dir: Path | None
) -> Dataset:
    """Build the dataset a ``name`` (and ``params``) table names."""
    if is_spec_file(name):
        raise reader.fail(
            f"{name!r} is a dataset spec file: write spec = {name!r} (or a list of spec "
            "files) instead of name.",
            [*where, "name"],
        )
    params = dict(table.params)
    if "path" in params:
        paths = [str(p) for p in path_list(reader, params["path"], [*where, "params", "path"])]
        params["path"] = paths if isinstance(params["path"], list) else paths[0]
    if "data_dir" in params:
        params["data_dir"] = str(reader.path_of(params["data_dir"], [*where, "params", "data_dir"]))
    cls = reader.build([*where, "name"], partial(datasets.get, name))
    if data_dir is not None and "data_dir" not in params:
        if "data_dir" in {f.name for f in dataclasses.fields(cls)}:
            params["data_dir"] = str(data_dir)
    return reader.build([*where, "params"], partial(datasets.create, name, **params))


def read_datasets(
    reader: TomlFile, raw: Any, data_dir: Path | None, *, generating: bool
) -> tuple[DatasetEntry, ...]:
    """Read the ``[[datasets]]`` tables, in file order (at least one)."""
    if raw is None:
        raise reader.fail("A run needs at least one [[datasets]] entry with a name.", ["datasets"])
    entries = reader.typed(raw, list, ["datasets"])
    if not entries:
        raise reader.fail("A run needs at least one [[datasets]] entry.", ["datasets"])
    out = []
    named: dict[str, tuple[list[str | int], str]] = {}
    for i, entry in enumerate(entries):
        where: list[str | int] = ["datasets", i]
        table = reader.section(DatasetTable, entry, where)
        if table.limit is not None and not generating:
            raise reader.fail(
                "A limit applies to generation; without a [backend], the dataset's own "
                "responses are all evaluated. Remove the limit or add a [backend].",
                [*where, "limit"],
            )
        if table.spec is not None:
            if "name" in entry or "params" in entry:
                raise reader.fail(
                    "A [[datasets]] entry names either one dataset (name and params) or spec "
                    "files (spec), not both: split it into two entries.",
                    [*where, "spec"],
                )
            for dataset in _spec_datasets(reader, table.spec, [*where, "spec"]):
                _check_name(reader, named, dataset, [*where, "spec"])
                out.append(DatasetEntry(dataset=dataset, limit=table.limit))
            continue
        if table.name is None:
            raise reader.fail("Each [[datasets]] entry needs a name (or spec files).", where)
        dataset = _one(reader, table.name, table, where, data_dir)
        _check_name(reader, named, dataset, [*where, "params"])
        out.append(DatasetEntry(dataset=dataset, limit=table.limit))
    return tuple(out)
