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
    family = "llama-2"                         # (see realitycheck.records.model_info); a model
    size = 7e9                                 # without it is reported as unknown
    instruction_tuned = true
    decoding = "greedy"

Every mistake is reported before any work, naming the file, the line (best
effort) and the key path, with close matches for unknown keys and names. The
tables of plain settings ([run], [executor], [detect], [bootstrap], [evaluate],
each [[datasets]] entry) are settings dataclasses declared with
:func:`realitycheck.params.param` and read by
:meth:`realitycheck.params.toml_lines.TomlFile.section`: a key's default, constraint
and doc are written once, at its field (``realitycheck describe '[run]'`` prints
them), and a bad value gets the one message shape of :mod:`realitycheck.params`::

    study.toml, line 7, field 'run.batch_size': The 'batch_size' parameter of
    [run] must be an int >= 1. Got 0 instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from realitycheck.analysis import Bootstrap
from realitycheck.backends import Backend, backends, require
from realitycheck.detectors import Detector, detectors
from realitycheck.errors import InvalidInputError
from realitycheck.generation import GenerationPrompt, SamplingPlan, make_plan
from realitycheck.labelers import Labeler, labelers
from realitycheck.params import default_of
from realitycheck.params.toml_lines import TomlFile, read_toml, section_keys
from realitycheck.pipeline import EvaluationConfig, ProxyModel
from realitycheck.records.keys import is_stored
from realitycheck.records.model_info import ModelInfo, models_from_table
from realitycheck.registry import Component
from realitycheck.runner._choice_config import ChoiceSettings, build_retriever, parse_choice
from realitycheck.runner._dataset_config import DatasetEntry, read_datasets
from realitycheck.runner._executor_config import ExecutorSettings, parse_executor
from realitycheck.runner._sections import ComponentTable, DetectSettings, RunSettings
from realitycheck.store import RemoteFolder, is_uri
from realitycheck.studies import studies as study_registry

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
_EVALUATE_GIVEN = ("detectors", "labelers", "bootstrap", "reference")
_BOOTSTRAP = section_keys(Bootstrap)
_RUN_DEFAULTS = {f.name: default_of(f) for f in dataclasses.fields(RunSettings)}


def _hint(table: str) -> Any:
    """What to add to the refusal of an unknown key in ``[table]`` (a key misplaced)."""

    def hint(key: str) -> str:
        more = ""
        if table == "evaluate" and key in _BOOTSTRAP:
            more += f" ({key!r} belongs to the [bootstrap] table, shared with the studies.)"
        if key in _TOP_LISTS and table:
            more += (
                f" ({key!r} is a top-level key: in TOML, a key after a [table] header "
                "belongs to that table, so put it before the first header.)"
            )
        return more

    return hint


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
    batch_size: int = _RUN_DEFAULTS["batch_size"]
    cache: bool = _RUN_DEFAULTS["cache"]
    cache_dir: Path | None = None
    report: bool = _RUN_DEFAULTS["report"]
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


def _run_location(reader: TomlFile, run: RunSettings) -> tuple[Path | str, Path | None]:
    """``[run] out`` (a folder, or a URI kept as written) and ``report_dir`` (a URI's only).

    A run on object storage is only read and written there; its tables,
    studies and report need a local ``report_dir``. A run folder holds its
    own, so ``report_dir`` is refused there.
    """
    out = run.out
    if not is_uri(out):
        if run.report_dir is not None:
            raise reader.fail(
                'report_dir is for a run on object storage (out = "s3://..."); a run '
                "folder holds its own tables, studies and report. Remove report_dir.",
                ["run", "report_dir"],
            )
        return reader.path_of(out, ["run", "out"]), None
    if run.report_dir is None:
        raise reader.fail(
            "The run is on object storage, where only the run is written; its CSV tables, "
            'studies and report go to a local folder: add report_dir = "FOLDER" to [run].',
            ["run", "out"],
        )
    report_dir = run.report_dir
    if is_uri(report_dir):
        raise reader.fail(
            "report_dir is a local folder (the tables, studies and report are files); "
            "give a path, not a URI.",
            ["run", "report_dir"],
        )
    return out, reader.path_of(report_dir, ["run", "report_dir"])


def _components(
    reader: TomlFile, raw: Mapping[str, Any], name: str, registry: Any
) -> tuple[list[Component], list[str]]:
    """Build one list of components: each entry a key string or a ``{name, params}`` table."""
    entries = reader.typed(raw.get(name, []), list, [name])
    built, measured = [], []
    for i, entry in enumerate(entries):
        reader.typed(entry, (str, dict), [name, i])
        if isinstance(entry, dict):
            if reader.section(ComponentTable, entry, [name, i]).name is None:
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


def _backend(reader: TomlFile, raw: Any, where: list[str | int]) -> Backend:
    table = reader.section(ComponentTable, raw, where)
    if table.name is None:
        raise reader.fail("The [backend] table needs a name.", where)
    name, params = table.name, table.params
    return reader.build(
        [*where, "params"] if params else [*where, "name"],
        lambda: backends.create(name, **params),
    )


def _backends(reader: TomlFile, raw: Mapping[str, Any]) -> tuple[Backend, ...]:
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


def _plan(reader: TomlFile, raw: Any, where: list[str | int]) -> SamplingPlan:
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


def _plans(reader: TomlFile, raw: Any) -> tuple[SamplingPlan, ...]:
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
    reader: TomlFile, raw: Any, dets: Sequence[Detector], *, generating: bool
) -> ProxyModel | None:
    """The ``[detect]`` table's proxy model, checked against the detectors before any work."""
    settings = reader.section(DetectSettings, raw, ["detect"])
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


def _evaluation(
    reader: TomlFile,
    raw: Any,
    detector_keys: list[str],
    label_keys: list[str],
    bootstrap: Bootstrap,
    reference: str | None,
) -> EvaluationConfig:
    return reader.section(
        EvaluationConfig,
        raw,
        ["evaluate"],
        hint=_hint("evaluate"),
        skip=_EVALUATE_GIVEN,
        detectors=tuple(detector_keys) or None,
        labelers=tuple(label_keys) or None,
        bootstrap=bootstrap,
        reference=reference,
    )


def load_run_config(path: str | Path) -> RunConfig:
    """Read and check a run config (see the module docstring for the format).

    Raises:
        InvalidInputError: On invalid TOML (with its line) or any wrong value (with the
            line of its key, best effort, and the key path as the field).
    """
    reader, raw = read_toml(path, "The run config")
    file = reader.path
    reader.table(raw, [], _TOP, _hint(""))
    run_table = reader.table(raw.get("run", {}), ["run"], section_keys(RunSettings), _hint("run"))
    if "out" not in run_table:
        raise reader.fail('The [run] table needs out = "RUN FOLDER".', ["run"])
    run = reader.section(RunSettings, run_table, ["run"], hint=_hint("run"))
    out, report_dir = _run_location(reader, run)
    executor = parse_executor(reader, raw.get("executor", {}))
    data_dir = None if run.data_dir is None else reader.path_of(run.data_dir, ["run", "data_dir"])
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
    bootstrap = reader.section(
        Bootstrap, raw.get("bootstrap"), ["bootstrap"], hint=_hint("bootstrap")
    )
    reference = None
    if "reference" in raw:
        reference = raw["reference"]
        if not isinstance(reference, str) or not reference.strip():
            raise reader.bad_value(["reference"], "a label key (e.g. human)", reference)
    return RunConfig(
        path=file,
        out=out,
        report_dir=report_dir,
        datasets=read_datasets(reader, raw.get("datasets"), data_dir, generating=generating),
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
        batch_size=run.batch_size,
        cache=run.cache,
        cache_dir=None
        if run.cache_dir is None
        else reader.path_of(run.cache_dir, ["run", "cache_dir"]),
        report=run.report,
        models=models_from_table(
            raw.get("models", {}), path=file, text=reader.text, keys=("models",)
        ),
        executor=executor,
        raw=raw,
    )
