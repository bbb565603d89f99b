"""Dataset spec files: your own datasets described once, in TOML, and named by ``-d spec.toml``.

A spec file holds one ``[dataset]`` table or several ``[[datasets]]``
tables. Each table is the parameters of one ``files`` dataset (see
``realitycheck datasets describe files``), written as TOML instead of a key,
so lists and tables need no quoting::

    [[datasets]]
    name = "haluqa"
    path = "qa.jsonl"                  # relative to this file
    columns = { example_id = "id", context = "knowledge" }
    constants = { task = "qa" }
    answers = ["right_answer:faithful", "hallucinated_answer:hallucinated"]
    meta = ["domain"]

    [[datasets]]
    name = "raters"
    path = "raters.csv"
    text = "answer"
    columns = { example_id = "id" }
    annotators = ["ann1", "ann2", "ann3"]
    positive = ["yes"]
    negative = ["no"]

``path = "per_model/*.json"`` (a glob) gives one dataset per matching file,
named ``<name>/<file stem>``, with the file's stem as the model unless
``constants`` names one. Every dataset keeps its own name in the run.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from realitycheck.datasets._base import Dataset, datasets
from realitycheck.errors import InvalidInputError, RealityCheckError

__all__ = ["is_spec_file", "load_spec"]

_GLOB = frozenset("*?[")


def is_spec_file(key: str) -> bool:
    """Return whether a ``-d`` value names a spec file (a ``.toml`` path), not a key."""
    return key.endswith(".toml") and "[" not in key


def load_spec(path: str | Path) -> list[Dataset]:
    """Build the datasets a spec file describes, in its order.

    Raises:
        InvalidInputError: The file is missing or not TOML, a table is not one
            dataset's parameters, or a parameter is refused (the message names
            the file and the table).
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError("The dataset spec file does not exist.", path=path)
    try:
        spec = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"The spec file is not valid TOML: {exc}.", path=path) from None
    tables = _tables(spec, path)
    out: list[Dataset] = []
    for index, table in enumerate(tables, start=1):
        out.extend(_datasets(table, path, index))
    return out


def _tables(spec: Mapping[str, Any], path: Path) -> list[Mapping[str, Any]]:
    unknown = sorted(set(spec) - {"dataset", "datasets"})
    if unknown or not spec:
        raise InvalidInputError(
            "A spec file holds one [dataset] table or several [[datasets]] tables"
            + (f"; it also has {', '.join(map(repr, unknown))}." if unknown else "."),
            path=path,
        )
    tables = [spec["dataset"]] if "dataset" in spec else []
    many = spec.get("datasets", [])
    if not isinstance(many, list):
        raise InvalidInputError(
            "'datasets' must be an array of tables ([[datasets]]).", path=path, field="datasets"
        )
    tables += many
    for index, table in enumerate(tables, start=1):
        if not isinstance(table, Mapping):
            raise InvalidInputError(
                f"Dataset {index} must be a table of parameters.", path=path, field="datasets"
            )
    return tables


def _datasets(table: Mapping[str, Any], spec_path: Path, index: int) -> list[Dataset]:
    where = f"dataset {index} ({table.get('name', 'unnamed')!r})"
    params = dict(table)
    raw_path = params.pop("path", None)
    if not isinstance(raw_path, str) or not raw_path:
        raise InvalidInputError(
            f"{where} needs a 'path' to its file (relative to the spec file or absolute).",
            path=spec_path,
            field="path",
        )
    target = Path(raw_path).expanduser()
    if not target.is_absolute():
        target = spec_path.parent / target
    if not _GLOB & set(raw_path):
        return [_build(params, target, spec_path, where)]
    matches = sorted(p for p in target.parent.glob(target.name) if p.is_file())
    if not matches:
        raise InvalidInputError(
            f"{where}: no file matches {raw_path!r}.", path=spec_path, field="path"
        )
    name = str(params.pop("name", "") or spec_path.stem)
    constants = params.get("constants") or {}
    out = []
    for match in matches:
        per_file = {**params, "name": f"{name}/{match.stem}"}
        if isinstance(constants, Mapping) and "model" not in constants:
            per_file["constants"] = {**constants, "model": match.stem}
        out.append(_build(per_file, match, spec_path, f"{where}, file {match.name}"))
    return out


def _build(params: Mapping[str, Any], file: Path, spec_path: Path, where: str) -> Dataset:
    try:
        return datasets.create("files", path=str(file), **params)
    except RealityCheckError as exc:
        raise InvalidInputError(f"{where}: {exc}", path=spec_path) from None
