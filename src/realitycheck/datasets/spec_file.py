"""Dataset spec files: your own datasets described once, in TOML or YAML, named by ``-d``.

A spec file holds one ``[dataset]`` table or several ``[[datasets]]`` tables
(in YAML: a ``dataset:`` mapping or a ``datasets:`` list). Each table is the
parameters of one ``files`` dataset (see ``realitycheck datasets describe
files``), written as TOML or YAML instead of a key, so lists and tables need
no quoting::

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

The same first dataset in YAML (``mine.yaml``)::

    datasets:
      - name: haluqa
        path: qa.jsonl
        columns: {example_id: id, context: knowledge}
        constants: {task: qa}
        answers: ["right_answer:faithful", "hallucinated_answer:hallucinated"]

``path`` is one file, a list of files or a pattern (``per_model/*.json``,
``runs/*/data.json``, ``{org}/{model}/{subset}_eval.jsonl``: globs in any part,
``{name}`` placeholders giving each row the column ``name``); the files of one
table make one dataset, and a row that names no model takes its file's path
below the pattern's folder, without the extension, as the model. A side file
(``join``) is relative to the spec file too. ``each_file = true`` makes one
dataset per file instead, named ``<name>/<that path>``, keeping the columns
its placeholders give. Every dataset keeps its own name in the
run. An error names the spec file, the line of the offending key and the key.
YAML is read safely (no tags run code) with YAML 1.2 booleans: ``yes``, ``no``,
``on`` and ``off`` stay text, so ``positive: [yes]`` means the cell ``yes``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realitycheck.datasets._base import Dataset, datasets
from realitycheck.datasets.files import PathMatch, PathPattern, escape, unique_labels
from realitycheck.errors import DataNotFoundError, InvalidInputError, RealityCheckError
from realitycheck.params.toml_lines import locate, syntax_error_line

__all__ = ["SPEC_SUFFIXES", "is_spec_file", "load_spec"]

SPEC_SUFFIXES = (".toml", ".yaml", ".yml")
_PARAMETER = re.compile(r"The '(\w+)' parameter of|has no parameter '(\w+)'")


def is_spec_file(key: str) -> bool:
    """Return whether a ``-d`` value names a spec file (a TOML or YAML path), not a key."""
    return key.lower().endswith(SPEC_SUFFIXES) and "[" not in key


@dataclass(frozen=True)
class _Spec:
    """A parsed spec file: its tables, and where in the text each key is."""

    path: Path
    text: str
    tables: list[tuple[str, int | None, Any]]  # (top key, index in a list or None, table)
    yaml_root: Any = None  # the composed YAML node tree, for line numbers

    def line(self, table: int, key: str | None = None) -> int | None:
        """Return the 1-based line of ``key`` in table number ``table`` (0-based), if found."""
        top, index, _ = self.tables[table]
        keys: list[str | int] = [top] if index is None else [top, index]
        if key:
            keys.append(key)
        if self.yaml_root is None:
            return locate(self.text, keys)
        return _yaml_line(self.yaml_root, keys)

    def error(self, message: str, table: int | None = None, key: str | None = None) -> Exception:
        """Return the error naming this file, the key's line and the key."""
        line = None if table is None else self.line(table, key)
        return InvalidInputError(message, path=self.path, line=line, field=key)


def load_spec(path: str | Path) -> list[Dataset]:
    """Build the datasets a spec file describes, in its order.

    Raises:
        InvalidInputError: The file is missing, is not TOML or YAML, a table
            is not one dataset's parameters, or a parameter is refused (the
            message names the file, the line, the key and the dataset).
    """
    spec = _parse(Path(path))
    out: list[Dataset] = []
    seen: dict[str, int] = {}
    for number in range(len(spec.tables)):
        for built in _datasets(spec, number):
            name = getattr(built, "run_name", built.name)
            if name in seen:
                raise _same_name(spec, name, seen[name], number)
            seen[name] = number
            out.append(built)
    return out


def _same_name(spec: _Spec, name: str, first: int, second: int) -> Exception:
    """Return the error for two entries of one spec that make datasets of the same name.

    Raised before anything is loaded: the run would otherwise store the first
    and refuse the second as if it were a changed copy of it.
    """
    line = spec.line(first, "name") or spec.line(first)
    at = f" at line {line}" if line else ""
    if first == second:
        what = f"Dataset {second + 1} makes two datasets named {name!r}"
    else:
        what = f"Datasets {first + 1}{at} and {second + 1} are both named {name!r}"
    return spec.error(
        f"{what}; each dataset of a run needs its own name: rename one (name = ...).",
        second,
        "name" if "name" in spec.tables[second][2] else None,
    )


def _parse(path: Path) -> _Spec:
    if not path.is_file():
        raise InvalidInputError("The dataset spec file does not exist.", path=path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"The spec file is not UTF-8 text: {exc}.", path=path) from None
    if path.suffix.lower() == ".toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInputError(
                f"The spec file is not valid TOML: {exc}.",
                path=path,
                line=syntax_error_line(str(exc)),
            ) from None
        return _Spec(path, text, _tables(data, path))
    data, root = _yaml(text, path)
    return _Spec(path, text, _tables(data, path), root)


def _yaml_loader() -> Any:
    """Return a safe YAML loader whose booleans are YAML 1.2's: ``yes``/``no``/``on`` stay text.

    Label values such as ``positive: [yes]`` must reach the loader as the text
    ``yes``, not as ``True``.
    """
    import yaml  # here, not at import: the CLI starts faster

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    return Loader


def _yaml(text: str, path: Path) -> tuple[Any, Any]:
    """Return a YAML file's data and its node tree (for line numbers); safe loading only."""
    import yaml

    loader = _yaml_loader()
    try:
        return yaml.load(text, Loader=loader), yaml.compose(text, Loader=loader)  # noqa: S506
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidInputError(
            f"The spec file is not valid YAML: {problem}.",
            path=path,
            line=None if mark is None else mark.line + 1,
        ) from None


def _yaml_line(node: Any, keys: Sequence[str | int]) -> int | None:
    """Return the line of the deepest node on the path ``keys`` in a composed YAML tree."""
    line = None
    for key in keys:
        child = None
        if isinstance(key, int) and node is not None and node.id == "sequence":
            child = node.value[key] if key < len(node.value) else None
            found = child
        elif node is not None and node.id == "mapping":
            pair = next((p for p in node.value if p[0].value == key), None)
            found, child = (pair[0], pair[1]) if pair else (None, None)
        else:
            found = None
        if found is None:
            return line
        line = found.start_mark.line + 1
        node = child
    return line


def _tables(data: Any, path: Path) -> list[tuple[str, int | None, Any]]:
    unknown = sorted(set(data) - {"dataset", "datasets"}) if isinstance(data, Mapping) else []
    if not isinstance(data, Mapping) or unknown or not data:
        raise InvalidInputError(
            "A spec file holds one [dataset] table or several [[datasets]] tables "
            "(in YAML, a 'dataset' mapping or a 'datasets' list)"
            + (f"; it also has {', '.join(map(repr, unknown))}." if unknown else "."),
            path=path,
        )
    tables: list[tuple[str, int | None, Any]] = []
    if "dataset" in data:
        tables.append(("dataset", None, data["dataset"]))
    many = data.get("datasets", [])
    if not isinstance(many, list):
        raise InvalidInputError(
            "'datasets' must be an array of tables ([[datasets]]; in YAML a list).",
            path=path,
            field="datasets",
        )
    tables += [("datasets", i, table) for i, table in enumerate(many)]
    for number, (top, _, table) in enumerate(tables, start=1):
        if not isinstance(table, Mapping):
            raise InvalidInputError(
                f"Dataset {number} must be a table of parameters.", path=path, field=top
            )
    return tables


def _datasets(spec: _Spec, number: int) -> list[Dataset]:
    table = spec.tables[number][2]
    where = f"dataset {number + 1} ({table.get('name', 'unnamed')!r})"
    params = dict(table)
    each_file = params.pop("each_file", False)
    if not isinstance(each_file, bool):
        raise spec.error(f"{where}: 'each_file' must be true or false.", number, "each_file")
    patterns, matches = _files(spec, number, params.pop("path", None), where)
    joined = params.get("join")
    if isinstance(joined, str):
        params["join"] = _beside(spec, joined)
    elif isinstance(joined, list):
        params["join"] = [_beside(spec, j) if isinstance(j, str) else j for j in joined]
    if not each_file:
        return [_build(spec, number, params, patterns, where)]
    name = str(params.pop("name", "") or spec.path.stem)
    constants = params.get("constants") or {}
    out = []
    for match, label in zip(matches, unique_labels(matches), strict=True):
        per_file = {**params, "name": f"{name}/{label}"}
        own = isinstance(constants, Mapping) and "model" in constants
        if isinstance(constants, Mapping) and not own and "model" not in match.fields:
            per_file["constants"] = {**constants, "model": label}
        shown = match.relative or match.path.name
        out.append(_build(spec, number, per_file, [match.pinned], f"{where}, file {shown}"))
    return out


def _beside(spec: _Spec, given: str) -> str:
    """Return a path or pattern of a spec file, relative to the spec file's folder.

    The folder is escaped, so that a bracket or a brace in its name is never
    read as a glob or a placeholder.
    """
    if not given or Path(given).expanduser().is_absolute():
        return given
    return str(Path(escape(str(spec.path.parent))) / given)


def _files(spec: _Spec, number: int, raw: Any, where: str) -> tuple[list[str], list[PathMatch]]:
    """Return a table's ``path`` entries, relative to the spec file, and the files they match.

    A pattern that matches nothing is an error at the spec file's line; a
    plain path that is missing is left for the dataset to report.
    """
    given = [raw] if isinstance(raw, str) else raw
    if not isinstance(given, list) or not given or not all(isinstance(g, str) and g for g in given):
        raise spec.error(
            f"{where} needs a 'path': a file, a pattern or a list of them (relative to the "
            "spec file or absolute).",
            number,
            "path",
        )
    patterns: list[str] = []
    matches: list[PathMatch] = []
    for item in given:
        target = _beside(spec, item)
        pattern = PathPattern(target)
        try:
            matches.extend(pattern.matches())
        except DataNotFoundError:
            raise spec.error(f"{where}: no file matches {item!r}.", number, "path") from None
        except InvalidInputError as exc:
            raise spec.error(f"{where}: {exc}", number, "path") from None
        patterns.append(target)
    return patterns, matches


def _build(
    spec: _Spec, number: int, params: Mapping[str, Any], paths: list[str], where: str
) -> Dataset:
    try:
        return datasets.create("files", path=paths, **params)
    except RealityCheckError as exc:
        match = _PARAMETER.search(str(exc))
        key = (match.group(1) or match.group(2)) if match else None
        raise spec.error(f"{where}: {exc}", number, key) from None
