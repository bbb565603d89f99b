"""A whole study in one TOML file, for ``realitycheck run CONFIG.toml``.

::

    labelers = ["rouge_l", "exact_match"]     # top-level keys come before any [table]
    detectors = [                              # a key, or a table {name, params}
        "length",
        { name = "semantic_entropy", params = { equivalence = "llm",
          judge = { name = "openai", params = { model = "gpt-4o-mini" } } } },
    ]
    studies = ["all"]
    reference = "human"                        # the ground truth of evaluate, studies, report:
                                               # any label key (a judge, recorded:gpt_4o…)

    [run]
    out = "runs/triviaqa"          # relative paths are relative to this file
                                   # or "s3://bucket/run" (object storage), with
                                   # report_dir = "FOLDER" for tables, studies, report
    batch_size = 16                # (example, variant) pairs per stored batch
    cache = true                   # the shared call cache (cache_dir = "..." to move it)

    [[datasets]]
    name = "triviaqa"
    limit = 200                    # the first N examples
    params = { split = "validation" }

    [[datasets]]                   # your own files: path is one file or a list of them
    name = "files"
    params = { path = ["by_model/a.jsonl", "by_model/b.jsonl"], text = "answer" }

    [[datasets]]                   # or dataset spec files (see datasets.spec_file), one
    spec = ["board.toml", "more.yaml"]   # path or a list; each of their datasets joins

    [backend]                      # leave out to evaluate the datasets' own responses
    name = "hf"                    # ([[backend]] tables: several models, each answers all)
    params = { model = "path/to/model" }

    [plan]                         # a SamplingPlan: preset = "default" | "greedy" | "beam"
                                   # ([[plan]] tables: several plans, e.g. one per decoding;
                                   # each model generates with each)
    n_samples = 10
    variants = ["zero_shot", "few_shot"]
    retriever = { name = "bm25", params = { corpus = "passages.jsonl", k = 3 } }
                                   # passages prepended to each question (corpus relative
                                   # to this file, like every path)

    # or, for MCQ datasets, [choice] instead of [plan] (see runner._choice_config):
    # [choice]
    # normalisation = "token"
    # variants = ["default", "shuffle_options[seed=1]"]

    [detect]                       # how the detect stage reads the responses (DetectSettings)
    proxy_backend = 'hf[model="path/to/model"]'
                                   # a local white-box model that reads the datasets'
                                   # own answers (no [backend]) for perplexity, entropies,
                                   # LogDet, eRank...: their scores are the proxy's view

    [evaluate]                     # an EvaluationConfig
    threshold_objective = "f1_macro"

    [bootstrap]                    # every interval of evaluate and the studies
    n_resamples = 1000
    confidence = 0.95
    seed = 0

    [executor]                     # where batches run (see runner._executor_config):
    kind = "ray"                   # local (default) | ray; address = "HOST:PORT"
                                   # (default $RAY_ADDRESS); local: workers = N
                                   # cores used (default: every usable one)

    [models."meta-llama/Llama-2-7b-chat-hf"]   # per-model metadata, read by the studies
    family = "llama-2"                         # (see realitycheck.model_info); a model
    size = 7e9                                 # without it is reported as unknown
    instruction_tuned = true
    decoding = "greedy"

Every mistake is reported before any work, naming the file, the line (best
effort) and the key path, with close matches for unknown keys and names.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from realitycheck.analysis import Bootstrap
from realitycheck.backends import Backend, backends, require
from realitycheck.datasets import Dataset, datasets
from realitycheck.datasets.spec_file import SPEC_SUFFIXES, is_spec_file, load_spec
from realitycheck.detectors import Detector, detectors
from realitycheck.errors import InvalidInputError, UnknownComponentError, did_you_mean
from realitycheck.generation import GenerationPrompt, SamplingPlan, make_plan
from realitycheck.keys import is_stored
from realitycheck.labelers import Labeler, labelers
from realitycheck.model_info import ModelInfo, models_from_table
from realitycheck.params import NonEmptyStr, OrNone, check_params, param
from realitycheck.pipeline import EvaluationConfig, ProxyModel
from realitycheck.registry import Component
from realitycheck.runner._choice_config import ChoiceSettings, build_retriever, parse_choice
from realitycheck.runner._executor_config import ExecutorSettings, parse_executor
from realitycheck.store import RemoteFolder, is_uri
from realitycheck.studies import studies as study_registry
from realitycheck.toml_lines import locate, syntax_error_line

__all__ = ["DatasetEntry", "DetectSettings", "RunConfig", "load_run_config"]

_TOP = (
    "run",
    "datasets",
    "backend",
    "plan",
    "choice",
    "labelers",
    "detectors",
    "studies",
    "detect",
    "evaluate",
    "bootstrap",
    "reference",
    "models",
    "executor",
)
_TOP_LISTS = ("labelers", "detectors", "studies")
_RUN = ("out", "report_dir", "batch_size", "cache", "cache_dir", "data_dir", "report")
_DATASET = ("name", "params", "limit", "spec")
_BACKEND = ("name", "params")
_COMPONENT = ("name", "params")
_EVALUATE = tuple(
    f.name
    for f in dataclasses.fields(EvaluationConfig)
    if f.name not in ("detectors", "labelers", "bootstrap", "reference")
)
_BOOTSTRAP = tuple(f.name for f in dataclasses.fields(Bootstrap))
T = TypeVar("T")


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


_DETECT = tuple(f.name for f in dataclasses.fields(DetectSettings))


@dataclass(frozen=True, kw_only=True)
class DatasetEntry:
    """One dataset of a run config: the component and how many examples to answer."""

    dataset: Dataset
    limit: int | None = None


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """A parsed and checked run config.

    Attributes:
        path: The TOML file.
        out: The run folder, or the URI of a run on object storage
            (``s3://bucket/run``, see :mod:`realitycheck.store`), or that run
            opened and checked (:attr:`realitycheck.store.RunLock.folder`).
        report_dir: The local folder of a run on object storage's CSV tables,
            studies and report (``[run] report_dir``); ``None`` for a run folder,
            which holds its own.
        datasets: The datasets, in file order.
        backend: The model to generate with; ``None`` = evaluate the datasets' own responses.
        backends: Every model of the run: ``backend`` first, then any further
            ``[[backend]]`` table.
        plan: How to sample (the first plan).
        plans: Every sampling plan: ``plan`` first, then any further ``[[plan]]``
            table; each model generates with each plan (a sweep of decodings).
        choice: How to answer MCQ datasets by likelihood (a ``[choice]`` table), or
            ``None`` to generate with ``plan``.
        labelers: Labelers to run.
        detectors: Detectors to run.
        label_keys: Labeler keys to measure (the built ones plus stored ``human`` ones).
        detector_keys: Detector keys to measure (the built ones plus ``recorded:…``).
        studies: Study keys to run (``all`` expanded later).
        reference: The ground truth of evaluate, every study (unless its key
            names its own) and the report; ``None`` = the datasets' human labels.
        proxy: The proxy model of the detect stage (``[detect] proxy_backend``), or
            ``None`` for none.
        evaluation: The evaluate stage's settings.
        bootstrap: The bootstrap settings of evaluate and the studies.
        batch_size: (example, variant) pairs per stored batch.
        cache: Whether to use the shared call cache; ``cache_dir`` moves it.
        cache_dir: Folder of the call cache (``None`` = the default).
        report: Whether to write the report.
        models: Per-model metadata from the ``[models]`` table (model name → fields).
        executor: Where the batches are computed (the ``[executor]`` table).
        raw: The file's content as parsed (written to the run manifest).
    """

    path: Path
    out: Path | str | RemoteFolder
    datasets: tuple[DatasetEntry, ...]
    backend: Backend | None
    plan: SamplingPlan
    backends: tuple[Backend, ...] = ()
    plans: tuple[SamplingPlan, ...] = ()
    choice: ChoiceSettings | None = None
    labelers: tuple[Labeler, ...] = ()
    detectors: tuple[Detector, ...] = ()
    label_keys: tuple[str, ...] = ()
    detector_keys: tuple[str, ...] = ()
    studies: tuple[str, ...] = ()
    reference: str | None = None
    proxy: ProxyModel | None = None
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    batch_size: int = 16
    cache: bool = True
    cache_dir: Path | None = None
    report: bool = True
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    executor: ExecutorSettings = field(default_factory=ExecutorSettings)
    raw: Mapping[str, Any] = field(default_factory=dict)
    report_dir: Path | None = None

    @property
    def tables_dir(self) -> Path:
        """The local folder of ``metrics.csv``, ``agreement.csv`` and the report.

        ``report_dir`` for a run on object storage, else the run folder.
        """
        if self.report_dir is not None:
            return self.report_dir
        assert not isinstance(self.out, RemoteFolder)  # a URI out always has a report_dir
        return Path(self.out)


def _run_location(reader: _Reader, run: dict) -> tuple[Path | str, Path | None]:
    """``[run] out`` (a folder, or a URI kept as written) and ``report_dir`` (a URI's only).

    A run on object storage is only read and written there; its tables,
    studies and report need a local ``report_dir``. A run folder holds its
    own, so ``report_dir`` is refused there.
    """
    out = reader.typed(run["out"], str, ["run", "out"])
    if not is_uri(out):
        if "report_dir" in run:
            raise reader.fail(
                'report_dir is for a run on object storage (out = "s3://..."); a run '
                "folder holds its own tables, studies and report. Remove report_dir.",
                ["run", "report_dir"],
            )
        return reader.path_of(out, ["run", "out"]), None
    if "report_dir" not in run:
        raise reader.fail(
            "The run is on object storage, where only the run is written; its CSV tables, "
            'studies and report go to a local folder: add report_dir = "FOLDER" to [run].',
            ["run", "out"],
        )
    report_dir = reader.typed(run["report_dir"], str, ["run", "report_dir"])
    if is_uri(report_dir):
        raise reader.fail(
            "report_dir is a local folder (the tables, studies and report are files); "
            "give a path, not a URI.",
            ["run", "report_dir"],
        )
    return out, reader.path_of(report_dir, ["run", "report_dir"])


class _Reader:
    """Checks values of one parsed file, raising errors that say where."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, message: str, keys: Sequence[str | int]) -> InvalidInputError:
        dotted = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")
        return InvalidInputError(
            message, path=self.path, line=locate(self.text, keys), field=dotted or None
        )

    def table(self, value: Any, keys: Sequence[str | int], allowed: Sequence[str]) -> dict:
        if not isinstance(value, dict):
            raise self.fail(f"Expected a table. Got {_kind(value)} instead.", keys)
        for key in value:
            if key in allowed:
                continue
            hint = did_you_mean(key, allowed)
            if keys == ["evaluate"] and key in _BOOTSTRAP:
                hint += f" ({key!r} belongs to the [bootstrap] table, shared with the studies.)"
            if key in _TOP_LISTS and keys:
                hint += (
                    f" ({key!r} is a top-level key: in TOML, a key after a [table] header "
                    "belongs to that table, so put it before the first header.)"
                )
            raise self.fail(
                f"Unknown key {key!r}.{hint} Allowed here: {', '.join(allowed)}.", [*keys, key]
            )
        return value

    def typed(self, value: Any, kind: type | tuple[type, ...], keys: Sequence[str | int]) -> Any:
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            ok = False
        else:
            ok = isinstance(value, kinds)
        if not ok:
            wanted = " or ".join(_NAMES.get(k, k.__name__) for k in kinds)
            raise self.fail(f"Expected {wanted}. Got {_kind(value)} {value!r} instead.", keys)
        return value

    def build(self, keys: Sequence[str | int], make: Callable[[], T]) -> T:
        try:
            return make()
        except (InvalidInputError, UnknownComponentError) as exc:
            raise self.fail(str(exc), keys) from None

    def path_of(self, value: str, keys: Sequence[str | int]) -> Path:
        self.typed(value, str, keys)
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.path.parent / path


_NAMES: dict[type, str] = {
    str: "a string",
    int: "an integer",
    bool: "true or false",
    list: "an array",
    dict: "a table",
    float: "a number",
}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return _NAMES.get(type(value), type(value).__name__)


def _components(
    reader: _Reader, raw: Mapping[str, Any], name: str, registry: Any
) -> tuple[list[Component], list[str]]:
    """Build one list of components: each entry a key string or a ``{name, params}`` table."""
    entries = reader.typed(raw.get(name, []), list, [name])
    built, measured = [], []
    for i, entry in enumerate(entries):
        reader.typed(entry, (str, dict), [name, i])
        if isinstance(entry, dict):
            reader.table(entry, [name, i], _COMPONENT)
            if "name" not in entry:
                raise reader.fail("A component table needs a name.", [name, i])
            make = partial(registry.create_from_spec, entry)
        elif name != "studies" and is_stored(entry):
            measured.append(entry)
            continue
        else:
            make = partial(registry.create_from_key, entry)
        component = reader.build([name, i], make)
        built.append(component)
        measured.append(component.key)
    return built, measured


def _path_list(reader: _Reader, value: Any, keys: list[str | int]) -> list[Path]:
    """One path or a non-empty array of paths, each relative to the config file."""
    if isinstance(value, list):
        if not value:
            raise reader.fail("Expected a path or a non-empty array of paths. Got [].", keys)
        return [
            reader.path_of(reader.typed(v, str, [*keys, j]), [*keys, j])
            for j, v in enumerate(value)
        ]
    if not isinstance(value, str):
        raise reader.fail(
            f"Expected a path or an array of paths. Got {_kind(value)} {value!r} instead.", keys
        )
    return [reader.path_of(value, keys)]


def _spec_datasets(reader: _Reader, value: Any, keys: list[str | int]) -> list[Dataset]:
    """The datasets of the spec files ``spec`` names (one path or an array of them).

    A mistake inside a spec file is reported by the spec file (its path, line
    and key); a path that is no spec file, or a missing one, by this config.
    """
    paths = _path_list(reader, value, keys)
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
    reader: _Reader,
    named: dict[str, tuple[list[str | int], str]],
    dataset: Dataset,
    keys: list[str | int],
) -> None:
    """Refuse a second dataset of the same name in the run made otherwise (before any work)."""
    run_name = str(getattr(dataset, "run_name", dataset.name))
    if run_name in named and named[run_name][1] != dataset.spec_json:
        first = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in named[run_name][0])
        raise reader.fail(
            f"Two datasets are named {run_name!r} (the first by {first.lstrip('.')}) with "
            "other parameters; each dataset of a run needs its own name (title = ... for a "
            "files dataset, name = ... in a spec file).",
            keys,
        )
    named.setdefault(run_name, (keys, dataset.spec_json))


def _datasets(
    reader: _Reader, raw: Any, data_dir: Path | None, *, generating: bool
) -> tuple[DatasetEntry, ...]:
    if raw is None:
        raise reader.fail("A run needs at least one [[datasets]] entry with a name.", ["datasets"])
    entries = reader.typed(raw, list, ["datasets"])
    if not entries:
        raise reader.fail("A run needs at least one [[datasets]] entry.", ["datasets"])
    out = []
    named: dict[str, tuple[list[str | int], str]] = {}
    for i, entry in enumerate(entries):
        where: list[str | int] = ["datasets", i]
        entry = reader.table(entry, where, _DATASET)
        limit = entry.get("limit")
        if limit is not None and (reader.typed(limit, int, [*where, "limit"]) < 1):
            raise reader.fail(f"Expected an integer >= 1. Got {limit} instead.", [*where, "limit"])
        if limit is not None and not generating:
            raise reader.fail(
                "A limit applies to generation; without a [backend], the dataset's own "
                "responses are all evaluated. Remove the limit or add a [backend].",
                [*where, "limit"],
            )
        if "spec" in entry:
            if "name" in entry or "params" in entry:
                raise reader.fail(
                    "A [[datasets]] entry names either one dataset (name and params) or spec "
                    "files (spec), not both: split it into two entries.",
                    [*where, "spec"],
                )
            for dataset in _spec_datasets(reader, entry["spec"], [*where, "spec"]):
                _check_name(reader, named, dataset, [*where, "spec"])
                out.append(DatasetEntry(dataset=dataset, limit=limit))
            continue
        if "name" not in entry:
            raise reader.fail("Each [[datasets]] entry needs a name (or spec files).", where)
        name = reader.typed(entry["name"], str, [*where, "name"])
        if is_spec_file(name):
            raise reader.fail(
                f"{name!r} is a dataset spec file: write spec = {name!r} (or a list of spec "
                "files) instead of name.",
                [*where, "name"],
            )
        params = dict(reader.typed(entry.get("params", {}), dict, [*where, "params"]))
        if "path" in params:
            paths = [str(p) for p in _path_list(reader, params["path"], [*where, "params", "path"])]
            params["path"] = paths if isinstance(params["path"], list) else paths[0]
        if "data_dir" in params:
            params["data_dir"] = str(
                reader.path_of(params["data_dir"], [*where, "params", "data_dir"])
            )
        cls = reader.build([*where, "name"], partial(datasets.get, name))
        if data_dir is not None and "data_dir" not in params:
            if "data_dir" in {f.name for f in dataclasses.fields(cls)}:
                params["data_dir"] = str(data_dir)
        dataset = reader.build([*where, "params"], partial(datasets.create, name, **params))
        _check_name(reader, named, dataset, [*where, "params"])
        out.append(DatasetEntry(dataset=dataset, limit=limit))
    return tuple(out)


def _backend(reader: _Reader, raw: Any, where: list[str | int]) -> Backend:
    table = reader.table(raw, where, _BACKEND)
    if "name" not in table:
        raise reader.fail("The [backend] table needs a name.", where)
    name = reader.typed(table["name"], str, [*where, "name"])
    params = reader.typed(table.get("params", {}), dict, [*where, "params"])
    return reader.build(
        [*where, "params"] if params else [*where, "name"],
        lambda: backends.create(name, **params),
    )


def _backends(reader: _Reader, raw: Mapping[str, Any]) -> tuple[Backend, ...]:
    """Build the ``[backend]`` table, or each ``[[backend]]`` table (several models)."""
    if "backend" not in raw:
        return ()
    if not isinstance(raw["backend"], list):
        return (_backend(reader, raw["backend"], ["backend"]),)
    if not raw["backend"]:
        raise reader.fail("Expected at least one [[backend]] table.", ["backend"])
    built = tuple(_backend(reader, t, ["backend", i]) for i, t in enumerate(raw["backend"]))
    keys = [b.key for b in built]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            raise reader.fail(f"The backend {key!r} is named twice.", ["backend", i])
    return built


def _plan(reader: _Reader, raw: Any, where: list[str | int]) -> SamplingPlan:
    table = dict(reader.typed(raw if raw is not None else {}, dict, where))
    preset = reader.typed(table.pop("preset", "default"), str, [*where, "preset"])
    allowed = ["preset", *(f.name for f in dataclasses.fields(SamplingPlan) if f.init)]
    reader.table(table, where, allowed)
    if "retriever" in table:  # its corpus path is relative to the config file
        table["retriever"] = build_retriever(reader, table["retriever"], [*where, "retriever"])
    for key, value in table.items():
        try:
            make_plan(preset, **{key: value})
        except InvalidInputError as exc:
            raise reader.fail(str(exc), [*where, key]) from None
    return reader.build([*where, "preset"], lambda: make_plan(preset, **table))


def _plans(reader: _Reader, raw: Any) -> tuple[SamplingPlan, ...]:
    """Build the ``[plan]`` table, or each ``[[plan]]`` table (a sweep of sampling plans)."""
    if not isinstance(raw, list):
        return (_plan(reader, raw, ["plan"]),)
    if not raw:
        raise reader.fail("Expected at least one [[plan]] table.", ["plan"])
    built = tuple(_plan(reader, t, ["plan", i]) for i, t in enumerate(raw))
    keys = [p.key for p in built]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            raise reader.fail(
                f"The sampling plan {key!r} is given twice (plans that differ only in their "
                "variants are one plan: list the variants in one table).",
                ["plan", i],
            )
    return built


def _proxy(
    reader: _Reader, raw: Any, dets: Sequence[Detector], *, generating: bool
) -> ProxyModel | None:
    """The ``[detect]`` table's proxy model, checked against the detectors before any work."""
    table = reader.table(raw if raw is not None else {}, ["detect"], _DETECT)
    for key, value in table.items():
        try:
            DetectSettings(**{key: value})
        except InvalidInputError as exc:
            raise reader.fail(str(exc), ["detect", key]) from None
    settings = DetectSettings(**table)
    if settings.proxy_backend is None:
        return None
    where = ["detect", "proxy_backend"]
    if generating:
        raise reader.fail(
            "A proxy model reads answers the run did not generate (the datasets' own); with a "
            "[backend], the run's answers carry their generator's features and the detectors "
            "read those. Remove proxy_backend, or the [backend].",
            where,
        )
    backend = reader.build(where, partial(backends.create_from_key, settings.proxy_backend))
    proxy = ProxyModel(backend=backend, prompt=GenerationPrompt(backend))
    reader.build(where, partial(proxy.check, dets))
    return proxy


def _bootstrap(reader: _Reader, raw: Any) -> Bootstrap:
    table = reader.table(raw if raw is not None else {}, ["bootstrap"], _BOOTSTRAP)
    for key, value in table.items():
        try:
            Bootstrap(**{key: value})
        except InvalidInputError as exc:
            raise reader.fail(str(exc), ["bootstrap", key]) from None
    return Bootstrap(**table)


def _evaluation(
    reader: _Reader,
    raw: Any,
    detector_keys: list[str],
    label_keys: list[str],
    bootstrap: Bootstrap,
    reference: str | None,
) -> EvaluationConfig:
    table = reader.table(raw if raw is not None else {}, ["evaluate"], _EVALUATE)
    params = dict(table)
    if "references" in params:
        params["references"] = tuple(
            reader.typed(params["references"], list, ["evaluate", "references"])
        )
    if "thresholds" in params:
        params["thresholds"] = dict(
            reader.typed(params["thresholds"], dict, ["evaluate", "thresholds"])
        )
    for key in params:
        try:
            EvaluationConfig(**{key: params[key]})
        except (InvalidInputError, TypeError) as exc:
            raise reader.fail(str(exc), ["evaluate", key]) from None
    return reader.build(
        ["evaluate"],
        lambda: EvaluationConfig(
            detectors=tuple(detector_keys) or None,
            labelers=tuple(label_keys) or None,
            bootstrap=bootstrap,
            reference=reference,
            **params,
        ),
    )


def load_run_config(path: str | Path) -> RunConfig:
    """Read and check a run config (see the module docstring for the format).

    Raises:
        InvalidInputError: On invalid TOML (with its line) or any wrong value (with the
            line of its key, best effort, and the key path as the field).
    """
    file = Path(path)
    try:
        text = file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InvalidInputError("The run config file does not exist.", path=file) from None
    except UnicodeDecodeError:
        raise InvalidInputError("The run config must be UTF-8 text.", path=file) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(
            f"The file is not valid TOML: {exc}", path=file, line=syntax_error_line(str(exc))
        ) from None
    reader = _Reader(file, text)
    reader.table(raw, [], _TOP)
    run = reader.table(raw.get("run", {}), ["run"], _RUN)
    if "out" not in run:
        raise reader.fail('The [run] table needs out = "RUN FOLDER".', ["run"])
    out, report_dir = _run_location(reader, run)
    executor = parse_executor(reader, raw.get("executor", {}))
    data_dir = reader.path_of(run["data_dir"], ["run", "data_dir"]) if "data_dir" in run else None
    found = _backends(reader, raw)
    backend = found[0] if found else None
    if not found and ("plan" in raw or "choice" in raw):
        table_name = "plan" if "plan" in raw else "choice"
        raise reader.fail(f"A [{table_name}] needs a [backend] to answer with.", [table_name])
    if "plan" in raw and "choice" in raw:
        raise reader.fail(
            "A run either generates ([plan]) or chooses by likelihood ([choice]), not both.",
            ["choice"],
        )
    choice = parse_choice(reader, raw["choice"]) if "choice" in raw else None
    labs, label_keys = _components(reader, raw, "labelers", labelers)
    dets, detector_keys = _components(reader, raw, "detectors", detectors)
    study_entries = reader.typed(raw.get("studies", []), list, ["studies"])
    if "all" in study_entries:
        study_keys = ["all"]
    else:
        study_keys = _components(reader, raw, "studies", study_registry)[1]
    plans = _plans(reader, raw.get("plan"))
    plan = plans[0]
    generating = backend is not None
    proxy = _proxy(reader, raw.get("detect"), dets, generating=generating)  # type: ignore[arg-type]
    if backend is not None and choice is not None:
        for b in found:
            reader.build(["backend"], partial(require, {"loglik"}, b, who="[choice]"))
    elif backend is not None:
        needs = {d.key: frozenset(getattr(d, "needs", frozenset())) for d in dets}
        for b in found:
            for p in plans:
                reader.build(["detectors"], partial(p.check, b, needs=needs))
    batch_size = reader.typed(run.get("batch_size", 16), int, ["run", "batch_size"])
    if batch_size < 1:
        raise reader.fail(
            f"Expected an integer >= 1. Got {batch_size} instead.", ["run", "batch_size"]
        )
    bootstrap = _bootstrap(reader, raw.get("bootstrap"))
    reference = None
    if "reference" in raw:
        reference = reader.typed(raw["reference"], str, ["reference"])
        if not reference.strip():
            raise reader.fail("Expected a label key (e.g. human). Got '' instead.", ["reference"])
    return RunConfig(
        path=file,
        out=out,
        report_dir=report_dir,
        datasets=_datasets(reader, raw.get("datasets"), data_dir, generating=backend is not None),
        backend=backend,
        backends=found,
        plan=plan,
        plans=plans,
        choice=choice,
        labelers=tuple(labs),  # type: ignore[arg-type]
        detectors=tuple(dets),  # type: ignore[arg-type]
        label_keys=tuple(label_keys),
        detector_keys=tuple(detector_keys),
        studies=tuple(study_keys),
        reference=reference,
        proxy=proxy,
        evaluation=_evaluation(
            reader, raw.get("evaluate"), detector_keys, label_keys, bootstrap, reference
        ),
        bootstrap=bootstrap,
        batch_size=batch_size,
        cache=reader.typed(run.get("cache", True), bool, ["run", "cache"]),
        cache_dir=reader.path_of(run["cache_dir"], ["run", "cache_dir"])
        if "cache_dir" in run
        else None,
        report=reader.typed(run.get("report", True), bool, ["run", "report"]),
        models=models_from_table(raw.get("models", {}), path=file, text=text, keys=("models",)),
        executor=executor,
        raw=raw,
    )
