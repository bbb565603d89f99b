"""Per-model metadata: family, size in parameters, instruction-tuned or base, decoding.

Studies that group models by these factors (the significance tests, the model
factors study) read them from the run, where a models file or the run
config's ``[models]`` table put them; nothing is ever guessed from a model's
name, and a model without metadata is reported as unknown.

A models file maps each model name (as the responses' ``model`` column holds
it) to its fields, all optional::

    # models.toml
    ["meta-llama/Llama-2-7b-hf"]
    family = "llama-2"
    size = 7e9                 # parameters (a number: 7e9, 7_000_000_000)
    instruction_tuned = false
    decoding = "greedy"

    # models.yaml
    meta-llama/Llama-2-7b-chat-hf: {family: llama-2, size: 7.0e+9, instruction_tuned: true}

    # models.csv (a header, then one row per model; empty cells are unknown)
    model,family,size,instruction_tuned,decoding
    meta-llama/Llama-2-13b-hf,llama-2,13e9,false,

The format follows the suffix (``.toml``, ``.yaml`` / ``.yml``, ``.csv``).
``instruction_tuned`` is true or false (in CSV also yes / no / 1 / 0). An
unknown field, a size that is not a positive number, a model given twice or a
value of the wrong type is an error naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.params import (
    InstanceOf,
    NonEmptyStr,
    OrNone,
    Satisfies,
    check_arg,
    check_params,
    constraints_of,
    converter_of,
    param,
    param_error,
)
from realitycheck.params.toml_lines import locate, syntax_error_line

__all__ = [
    "FIELDS",
    "MODEL_FILE_SUFFIXES",
    "ModelInfo",
    "models_from_manifest",
    "models_from_table",
    "models_to_manifest",
    "read_models",
]

FIELDS = ("family", "size", "instruction_tuned", "decoding")
MODEL_FILE_SUFFIXES = (".toml", ".yaml", ".yml", ".csv")
_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")


def _number(value: Any) -> Any:
    """A size written as text (``"7e9"``, ``"7_000_000_000"``) or an int, as a float."""
    if isinstance(value, str):
        try:
            return float(value.replace("_", ""))
        except ValueError:
            return value
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _yes_no(value: Any) -> Any:
    """``true``/``yes``/``1`` and ``false``/``no``/``0`` (a CSV cell) as a bool."""
    if isinstance(value, str) and value.strip().lower() in (*_TRUE, *_FALSE):
        return value.strip().lower() in _TRUE
    return value


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


_SIZE = Satisfies(
    lambda v: isinstance(v, float) and math.isfinite(v) and v > 0,
    "a positive number of parameters (e.g. 7e9)",
)


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """What is known of one model; ``None`` = not given (reported as unknown).

    Attributes:
        model: The model's name, as the responses' ``model`` column holds it.
        family: Its family (``llama-2``); models of one family are compared by size.
        size: Its size in parameters (``7e9``).
        instruction_tuned: True for an instruction-tuned (chat) model, False for a base model.
        decoding: How it was decoded (``greedy``, ``sampling``...), as a label.
    """

    model: str
    family: str | None = param(None, OrNone(NonEmptyStr()), convert=_stripped)
    size: float | None = param(None, OrNone(_SIZE), convert=_number)
    instruction_tuned: bool | None = param(
        None, OrNone(InstanceOf(bool, name="true or false")), convert=_yes_no
    )
    decoding: str | None = param(None, OrNone(NonEmptyStr()), convert=_stripped)

    def __post_init__(self) -> None:
        check_params(self, owner=f"model {self.model!r}")

    def as_dict(self) -> dict[str, Any]:
        """Return the fields that are known (what the run manifest stores)."""
        values = {name: getattr(self, name) for name in FIELDS}
        return {k: v for k, v in values.items() if v is not None}


Locate = Callable[[str, str | None], int | None]
_FIELDS = {f.name: f for f in dataclasses.fields(ModelInfo)}


def _fail(message: str, path: Path | None, line: int | None, field: str) -> InvalidInputError:
    return InvalidInputError(message, path=path, line=line, field=field)


def _info(model: str, fields: Any, path: Path | None, where: Locate) -> ModelInfo:
    if not isinstance(fields, Mapping):
        error = param_error(
            model, "the models table", f"a table of fields ({', '.join(FIELDS)})", fields
        )
        raise _fail(str(error), path, where(model, None), model)
    values: dict[str, Any] = {}
    for name, value in fields.items():
        field = f"{model}.{name}"
        if name not in FIELDS:
            hint = did_you_mean(str(name), FIELDS)
            raise _fail(
                f"Unknown field {name!r}.{hint} A model has: {', '.join(FIELDS)}.",
                path,
                where(model, str(name)),
                field,
            )
        if value is None:  # an empty CSV cell
            continue

        declared = _FIELDS[name]
        try:  # the field's own check: a TOML key or a cell always has a value
            values[name] = check_arg(
                value,
                *(c.inner if isinstance(c, OrNone) else c for c in constraints_of(declared)),
                name=name,
                owner=f"model {model!r}",
                convert=converter_of(declared),
            )
        except InvalidInputError as exc:
            raise _fail(str(exc), path, where(model, str(name)), field) from None
    return ModelInfo(model=model, **values)


def models_from_table(
    table: Any, *, path: Path | None = None, text: str | None = None, keys: tuple[str, ...] = ()
) -> dict[str, ModelInfo]:
    """Check a parsed TOML mapping of model name → fields (a models file or ``[models]``).

    Args:
        table: The mapping.
        path: The file it came from (for errors).
        text: The file's text, to find the line of a bad key.
        keys: Where the mapping sits in the file (``("models",)`` in a run config).
    """

    def where(model: str, name: str | None) -> int | None:
        if text is None:
            return None
        return locate(text, [*keys, model] + ([name] if name else []))

    if not isinstance(table, Mapping):
        raise InvalidInputError(
            f"Expected a table of models (name → fields). Got {type(table).__name__} instead.",
            path=path,
            field=".".join(keys) or None,
        )
    return {str(m): _info(str(m), fields, path, where) for m, fields in table.items()}


def _csv_rows(text: str, path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header or header[0].strip() != "model":
        raise InvalidInputError(
            f"A models CSV starts with a header whose first column is 'model', then any of "
            f"{', '.join(FIELDS)}. Got {header!r} instead.",
            path=path,
            line=1,
        )
    names = [h.strip() for h in header]
    for name in names[1:]:
        if name not in FIELDS:
            hint = did_you_mean(name, FIELDS)
            raise InvalidInputError(
                f"Unknown column {name!r}.{hint} A model has: {', '.join(FIELDS)}.",
                path=path,
                line=1,
                field=name,
            )
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(names):
            raise InvalidInputError(
                f"Expected {len(names)} cells (as in the header). Got {len(row)} instead.",
                path=path,
                line=line,
            )
        yield line, dict(zip(names, row, strict=True))


def _read_csv(text: str, path: Path) -> dict[str, ModelInfo]:
    out: dict[str, ModelInfo] = {}
    lines: dict[str, int] = {}
    for line, row in _csv_rows(text, path):
        model = row.pop("model").strip()
        if not model:
            raise InvalidInputError(
                "A row needs a model name.", path=path, line=line, field="model"
            )
        if model in out:
            raise _duplicate(model, path, line, lines[model])
        lines[model] = line
        cells = {k: (v if v.strip() else None) for k, v in row.items()}
        out[model] = _info(model, cells, path, _on_line(line))
    return out


def _on_line(line: int) -> Locate:
    """A locator that puts every field of a CSV row on the row's line."""

    def where(model: str, name: str | None) -> int | None:
        return line

    return where


def _duplicate(model: str, path: Path, line: int | None, first: int | None) -> InvalidInputError:
    where = f" (first on line {first})" if first else ""
    return InvalidInputError(
        f"The model {model!r} is given twice{where}.", path=path, line=line, field=model
    )


def _read_yaml(text: str, path: Path) -> dict[str, ModelInfo]:
    import yaml  # here, not at import: the command line starts faster

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InvalidInputError(
            f"The file is not valid YAML: {getattr(exc, 'problem', exc)}",
            path=path,
            line=None if mark is None else mark.line + 1,
        ) from None
    if data is None:
        return {}
    lines: dict[tuple[str, str | None], int] = {}
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            line = key.start_mark.line + 1
            if (key.value, None) in lines:
                raise _duplicate(key.value, path, line, lines[(key.value, None)])
            lines[(key.value, None)] = line
            if isinstance(value, yaml.MappingNode):
                for inner, _ in value.value:
                    lines[(key.value, inner.value)] = inner.start_mark.line + 1
    if not isinstance(data, Mapping):
        return models_from_table(data, path=path)

    def where(model: str, name: str | None) -> int | None:
        return lines.get((model, name), lines.get((model, None)))

    return {str(m): _info(str(m), fields, path, where) for m, fields in data.items()}


def read_models(path: str | Path) -> dict[str, ModelInfo]:
    """Read a models file (TOML, YAML or CSV by its suffix; see the module docstring).

    Raises:
        InvalidInputError: A missing file, an unknown suffix, invalid syntax, an unknown
            field, a non-numeric size or a model given twice (file, line, field).
    """
    file = Path(path)
    if file.suffix.lower() not in MODEL_FILE_SUFFIXES:
        raise InvalidInputError(
            f"A models file is {', '.join(MODEL_FILE_SUFFIXES)}. Got {file.suffix or 'none'!r}.",
            path=file,
        )
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError("The models file does not exist.", path=file) from None
    except UnicodeDecodeError:
        raise InvalidInputError("The models file must be UTF-8 text.", path=file) from None
    suffix = file.suffix.lower()
    if suffix == ".csv":
        return _read_csv(text, file)
    if suffix in (".yaml", ".yml"):
        return _read_yaml(text, file)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(
            f"The file is not valid TOML: {exc}", path=file, line=syntax_error_line(str(exc))
        ) from None
    return models_from_table(data, path=file, text=text)


def models_to_manifest(models: Mapping[str, ModelInfo]) -> dict[str, dict[str, Any]]:
    """Return the metadata as the run manifest stores it: model → its known fields."""
    return {name: info.as_dict() for name, info in sorted(models.items())}


def models_from_manifest(raw: Any) -> dict[str, ModelInfo]:
    """Return the metadata a run manifest holds (``config.models``); ``{}`` when none."""
    if not isinstance(raw, Mapping):
        return {}
    return models_from_table(raw, keys=("config", "models"))
