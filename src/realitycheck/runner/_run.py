"""The bodies of ``run CONFIG.toml`` and ``evaluate``: the stages in order, then studies and report.

The runner decides what runs in which order; the command line only parses
arguments and prints what the runner tells it through a :class:`Listener`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from realitycheck.backends import Backend, CallCache
from realitycheck.datasets import Dataset
from realitycheck.detectors import Detector
from realitycheck.executors import Executor
from realitycheck.generation import SamplingPlan
from realitycheck.labelers import Labeler
from realitycheck.pipeline import (
    ChoiceReport,
    Evaluation,
    EvaluationConfig,
    GenerationReport,
    ProxyModel,
    StageReport,
    choose,
    detect,
    evaluate,
    generate,
    ingest,
    label,
    load_inputs,
)
from realitycheck.progress import NullProgress, Progress
from realitycheck.records.model_info import ModelInfo, models_to_manifest
from realitycheck.report import ReportFiles, with_base_rate, write_report
from realitycheck.runner._choice_config import ChoiceSettings
from realitycheck.runner._config import RunConfig
from realitycheck.runner._studies import StudyRun, run_studies
from realitycheck.store import RunStore
from realitycheck.text import csv_safe_frame

__all__ = [
    "Listener",
    "RunOutcome",
    "choose_datasets",
    "generate_datasets",
    "make_cache",
    "measure_run",
    "record_models",
    "run_config",
]


class Listener:
    """Hears what a run did, as it does it; the default hears nothing.

    The command line subclasses it to print each event.
    """

    def generation(self, dataset: str, report: GenerationReport, run_dir: Path | str) -> None:
        """One dataset was answered by the backend (``run_dir``: a folder, or a redacted URI)."""

    def choice(self, dataset: str, report: ChoiceReport) -> None:
        """One MCQ dataset was answered by likelihood."""

    def stage(self, report: StageReport) -> None:
        """A label or detect stage finished."""

    def evaluation(self, evaluation: Evaluation, out: Path) -> None:
        """The evaluate stage finished and wrote ``metrics.csv`` under ``out``."""

    def study(self, done: StudyRun) -> None:
        """One study was run and stored."""

    def report(self, files: ReportFiles) -> None:
        """The report was written."""

    def note(self, text: str) -> None:
        """Something worth saying happened (a dataset was replaced)."""


@dataclass(kw_only=True)
class RunOutcome:
    """What a run did, stage by stage."""

    generation: dict[str, GenerationReport] = field(default_factory=dict)
    choice: dict[str, ChoiceReport] = field(default_factory=dict)
    stages: list[StageReport] = field(default_factory=list)
    evaluation: Evaluation | None = None
    studies: list[StudyRun] = field(default_factory=list)
    report: ReportFiles | None = None


def make_cache(enabled: bool, cache_dir: str | Path | None = None) -> CallCache | None:
    """The shared call cache (in ``cache_dir`` if given), or ``None`` when disabled."""
    if not enabled:
        return None
    return CallCache(Path(cache_dir) / "calls.sqlite" if cache_dir is not None else None)


def record_models(store: RunStore, models: Mapping[str, ModelInfo]) -> None:
    """Write the per-model metadata into the run's manifest (``config.models``).

    It replaces the metadata recorded before; studies read it through
    :attr:`realitycheck.store.RunData.models`. Nothing is written when ``models`` is empty.
    """
    if models:
        store.update_manifest(config={"models": models_to_manifest(models)})


def generate_datasets(
    store: RunStore,
    entries: Sequence[tuple[Dataset, int | None]],
    backend: Backend,
    plan: SamplingPlan,
    *,
    cache: CallCache | None,
    batch_size: int,
    executor: Executor | None = None,
    progress: Progress | None = None,
    listener: Listener | None = None,
) -> dict[str, GenerationReport]:
    """Answer the first ``limit`` examples of each dataset (all when ``None``) with ``backend``.

    Few-shot demonstrations are drawn from the whole dataset, so they do not
    depend on the limit. ``executor`` answers the batches (default: this process).
    """
    progress = progress or NullProgress()
    listener = listener or Listener()
    out = {}
    for dataset, limit in entries:
        pool = load_inputs(store, dataset, progress=progress)
        report = generate(
            store,
            pool[:limit] if limit is not None else pool,
            backend,
            plan,
            cache=cache,
            demos=pool,
            batch_size=batch_size,
            executor=executor,
            progress=progress,
        )
        listener.generation(dataset.key, report, store.location if store.remote else store.path)
        out[dataset.run_name] = report
    return out


def choose_datasets(
    store: RunStore,
    entries: Sequence[tuple[Dataset, int | None]],
    backend: Backend,
    settings: ChoiceSettings,
    *,
    cache: CallCache | None,
    batch_size: int,
    progress: Progress | None = None,
    listener: Listener | None = None,
) -> dict[str, ChoiceReport]:
    """Answer the first ``limit`` MCQ questions of each dataset by likelihood, under each variant.

    Demonstrations are drawn from the whole dataset, so they do not depend on
    the limit. With ``settings.without_retrieval``, each dataset is answered
    with and then without the retriever; the second report is keyed
    ``"<dataset> without retrieval"``.
    """
    progress = progress or NullProgress()
    listener = listener or Listener()
    out = {}
    for dataset, limit in entries:
        pool = load_inputs(store, dataset, progress=progress)
        for i, plan in enumerate(settings.plans):
            name = dataset.run_name if i == 0 else f"{dataset.run_name} without retrieval"
            out[name] = report = choose(
                store,
                pool[:limit] if limit is not None else pool,
                backend,
                plan,
                settings.variants,
                cache=cache,
                demos=pool,
                batch_size=batch_size,
                progress=progress,
            )
            listener.choice(dataset.key if i == 0 else name, report)
    return out


def measure_run(
    store: RunStore,
    labelers: Sequence[Labeler],
    detectors: Sequence[Detector],
    config: EvaluationConfig,
    *,
    datasets: Sequence[str] | None,
    out: Path,
    report: bool,
    retry_errors: bool = False,
    cache: CallCache | None = None,
    executor: Executor | None = None,
    progress: Progress | None = None,
    listener: Listener | None = None,
    proxy: ProxyModel | None = None,
) -> RunOutcome:
    """Label, detect and evaluate a run, write ``metrics.csv`` and, if asked, the report.

    ``labelers`` and ``detectors`` are run; evaluate then measures every
    labeler and detector the run stores, those of earlier calls too, so
    ``metrics.csv`` and ``agreement.csv`` describe the whole run (with
    ``config.only``: the named ones alone; see
    :class:`~realitycheck.pipeline.EvaluationConfig`).

    Components that call a model (LLM judges, semantic entropy's judge) go
    through ``cache``, the run's call cache, so a rerun pays for no call twice.
    ``executor`` computes the label and detect stages' batches and evaluate's
    units (default: this process; a Ray executor: a cluster's workers).
    ``proxy`` reads the responses without features of their own for the
    detect stage (see :func:`realitycheck.pipeline.detect`).
    """
    progress = progress or NullProgress()
    listener = listener or Listener()
    outcome = RunOutcome()
    for stage, components in ((label, labelers), (detect, detectors)):
        extra: dict[str, Any] = {"proxy": proxy} if stage is detect and proxy is not None else {}
        done = stage(
            store,
            components,  # type: ignore[arg-type]
            datasets=datasets,
            retry_errors=retry_errors,
            cache=cache,
            executor=executor,
            progress=progress,
            **extra,
        )
        outcome.stages.append(done)
        listener.stage(done)
    outcome.evaluation = evaluate(store, config, executor=executor, progress=progress)
    for name, table in (
        ("metrics", outcome.evaluation.metrics),
        ("agreement", outcome.evaluation.agreement),
    ):
        csv_safe_frame(with_base_rate(table)).to_csv(out / f"{name}.csv", index=False)
    listener.evaluation(outcome.evaluation, out)
    if report:
        outcome.report = write_report(store, out)
        listener.report(outcome.report)
    return outcome


def run_config(
    config: RunConfig,
    *,
    retry_errors: bool = False,
    replace: Sequence[str] = (),
    executor: Executor | None = None,
    progress: Progress | None = None,
    listener: Listener | None = None,
    study_workers: int | None = 1,
) -> RunOutcome:
    """Run a whole study from a parsed run config: generate, stages, evaluate, studies, report.

    The studies are computed in ``config.executor.workers`` processes side by
    side when the config sets it, else in ``study_workers``: 1 (the default)
    = this process, ``None`` = one per usable core, as ``realitycheck run``
    does. The stored results are the same whatever it is; a script that asks
    for several must guard its entry point (see
    :func:`~realitycheck.runner.run_studies`). Every stage resumes: running
    the same config again does only what is missing. A run on object storage
    (``config.out`` a URI) is written there, and its CSV tables, studies and
    report go to ``config.report_dir``.

    ``replace`` names datasets to load again although their source files or
    settings changed (see :func:`realitycheck.pipeline.ingest`). ``executor``
    computes the batches of generation, label, detect and evaluate; default:
    the one ``config.executor`` names, joined before any work and closed when
    the run ends.

    A second config on the same run adds its labelers and detectors to the
    run's tables: ``metrics.csv`` and ``agreement.csv`` hold every stored
    one, the first config's too, unless its ``[evaluate]`` table sets
    ``only = true`` (then they hold its own alone).
    """
    if executor is None:
        owned = config.executor.build()
        try:
            connect = getattr(owned, "connect", None)
            if connect is not None:  # an unreachable cluster fails before any work
                connect()
            return run_config(
                config,
                retry_errors=retry_errors,
                replace=replace,
                executor=owned,
                progress=progress,
                listener=listener,
                study_workers=study_workers,
            )
        finally:
            owned.close()
    progress = progress or NullProgress()
    listener = listener or Listener()
    store = RunStore(config.out)
    if config.report_dir is not None:
        config.report_dir.mkdir(parents=True, exist_ok=True)
    store.update_manifest(config={"run_file": str(config.path), "run_config": _recorded(config)})
    record_models(store, config.models)
    cache = make_cache(config.cache, config.cache_dir)
    generation: dict[str, Any] = {}
    chosen: dict[str, ChoiceReport] = {}
    if config.backend is not None and config.choice is not None:
        models = config.backends or (config.backend,)
        if executor.name != "local":
            listener.note(
                "The [choice] answers are computed in this process; "
                f"labels, scores and metrics on the {executor.name} executor."
            )
        for backend in models:
            done = choose_datasets(
                store,
                [(entry.dataset, entry.limit) for entry in config.datasets],
                backend,
                config.choice,
                cache=cache,
                batch_size=config.batch_size,
                progress=progress,
                listener=listener,
            )
            tag = f" ({backend.key})" if len(models) > 1 else ""
            chosen.update({name + tag: report for name, report in done.items()})
        names = list(dict.fromkeys(entry.dataset.run_name for entry in config.datasets))
    elif config.backend is not None:
        models = config.backends or (config.backend,)
        plans = config.plans or (config.plan,)
        for backend in models:  # every model with every plan (a sweep of decodings, sizes)
            for plan in plans:
                made = generate_datasets(
                    store,
                    [(entry.dataset, entry.limit) for entry in config.datasets],
                    backend,
                    plan,
                    cache=cache,
                    batch_size=config.batch_size,
                    executor=executor,
                    progress=progress,
                    listener=listener,
                )
                tag = ", ".join([backend.key] * (len(models) > 1) + [plan.key] * (len(plans) > 1))
                generation.update({f"{n} ({tag})" if tag else n: r for n, r in made.items()})
        names = list(dict.fromkeys(entry.dataset.run_name for entry in config.datasets))
    else:
        names = []
        for entry in config.datasets:
            ds = entry.dataset
            wanted = bool({ds.run_name, ds.key, ds.name} & set(replace))
            for note in ingest(store, ds, replace=wanted, progress=progress).notes:
                listener.note(note)
            names.append(entry.dataset.run_name)
    outcome = measure_run(
        store,
        config.labelers,
        config.detectors,
        config.evaluation,
        datasets=names,
        out=config.tables_dir,
        report=False,
        retry_errors=retry_errors,
        cache=cache,
        executor=executor,
        progress=progress,
        listener=listener,
        proxy=config.proxy,
    )
    outcome.generation = generation
    outcome.choice = chosen
    outcome.studies = run_studies(
        store,
        config.studies,
        bootstrap=config.bootstrap,
        reference=config.reference,
        progress=progress,
        on_result=listener.study,
        folder=config.report_dir,
        workers=config.executor.workers if config.executor.workers is not None else study_workers,
    )
    if config.report:
        outcome.report = write_report(store, config.tables_dir, reference=config.reference)
        listener.report(outcome.report)
    return outcome


def _recorded(config: RunConfig) -> dict[str, Any]:
    """The config as the manifest records it: without ``out`` for a run on object storage.

    A run's files do not hold its location (a URI can carry credentials, and
    a bucket can be moved).
    """
    raw = dict(config.raw)
    if config.report_dir is not None:
        raw["run"] = {k: v for k, v in raw["run"].items() if k != "out"}
    return raw
