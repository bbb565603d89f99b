"""One verb per stage: label, detect, evaluate (report and demo: :mod:`._reports`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from realitycheck.cli._common import (
    allow_failures_option,
    backend_from,
    bootstrap_from,
    bootstrap_options,
    cache_from,
    cache_options,
    check_replace_names,
    cli,
    data_dir_option,
    dataset_option,
    datasets_from_keys,
    executor_from,
    executor_options,
    local_out,
    lock_run,
    models_option,
    progress_for,
    reference_option,
    replace_option,
    retry_errors_option,
    run_option,
    split_keys,
    terminal_lines,
    workers_option,
)
from realitycheck.cli._echo import echo_stage, listener_for
from realitycheck.cli._failures import FailureTally
from realitycheck.cli._fields import field_option
from realitycheck.errors import InvalidInputError
from realitycheck.pipeline import EvaluationConfig
from realitycheck.records.keys import is_stored
from realitycheck.runner import RunSettings

__all__: list[str] = []

# -- stages ---------------------------------------------------------------------------------

_dataset_option = dataset_option(
    "Dataset key, e.g. ragtruth or 'faithbench[protocol=worst]' (repeatable)."
)
_data_dir_option = data_dir_option("Folder holding the dataset files.")
_run_option = run_option("The run folder (created if missing; reused and resumed if present).")


def _load_run(
    ctx: click.Context,
    run_dir: str,
    dataset_keys: Sequence[str],
    data_dir: str | None,
    replace: Sequence[str] = (),
) -> Any:
    from realitycheck.pipeline import ingest
    from realitycheck.store import RunStore

    chosen = datasets_from_keys(dataset_keys, data_dir)
    check_replace_names(replace, chosen)
    store = RunStore(lock_run(ctx, run_dir))
    names = []
    for ds in chosen:
        report = ingest(
            store,
            ds,
            replace=bool({ds.run_name, ds.key, ds.name} & set(replace)),
            progress=progress_for(ctx),
        )
        for note in report.notes:
            click.echo(terminal_lines(f"note: {note}"), err=True)
        names.append(ds.run_name)
    return store, names


def _stage_options(command: Any) -> Any:
    """The options every stage verb shares: datasets, data folder, retries, cache, run."""
    for option in (
        _run_option,
        allow_failures_option,
        executor_options,
        cache_options,
        retry_errors_option,
        replace_option,
        _data_dir_option,
    ):
        command = option(command)
    return _dataset_option(command)


def _run_stage(
    ctx: click.Context,
    stage: str,
    keys: Sequence[str],
    proxy_key: str | None = None,
    **options: Any,
) -> None:
    """Build the components of ``keys`` and run the ``label`` or ``detect`` stage with them."""
    from realitycheck import detectors, labelers, pipeline
    from realitycheck.backends import warm_up

    registry = labelers if stage == "label" else detectors
    components = [registry.create_from_key(k) for k in split_keys(keys)]
    warm_up(components)  # a client library imports while the data loads
    extra: dict[str, Any] = {}
    if proxy_key is not None:
        extra["proxy"] = _proxy_from(proxy_key)
        extra["proxy"].check(components)  # before the dataset is loaded
    executor = executor_from(ctx, options["executor"], options["ray_address"])
    store, names = _load_run(
        ctx, options["run_dir"], options["dataset_keys"], options["data_dir"], options["replace"]
    )
    report = getattr(pipeline, stage)(
        store,
        components,
        datasets=names,
        retry_errors=options["retry_errors"],
        cache=cache_from(options["no_cache"], options["cache_dir"]),
        executor=executor,
        progress=progress_for(ctx),
        **extra,
    )
    echo_stage(report)
    failures = FailureTally()
    failures.stage(report)
    failures.exit(allowed=options["allow_failures"])


@cli.command("label")
@_stage_options
@click.option("--labelers", "-l", multiple=True, required=True, help="Labeler keys (comma list).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print each judge's first prompts and the estimated tokens and cost of all its calls; "
    "call nothing, write nothing.",
)
@click.option(
    "--show",
    default=2,
    show_default=True,
    type=click.IntRange(min=0),
    help="Prompts to print with --dry-run.",
)
@click.pass_context
def label_cmd(
    ctx: click.Context, labelers: tuple[str, ...], dry_run: bool, show: int, **options: Any
) -> None:
    """Label a dataset's responses with correctness labelers."""
    if dry_run:
        from realitycheck.cli._dry_run import echo_dry_run

        cache = cache_from(options["no_cache"], options["cache_dir"])
        echo_dry_run(
            labelers,
            options["dataset_keys"],
            options["data_dir"],
            run_dir=options["run_dir"],
            cache=cache,
            show=show,
        )
        return
    _run_stage(ctx, "label", labelers, **options)


@cli.command("detect")
@_stage_options
@click.option("--detectors", "-D", multiple=True, required=True, help="Detector keys (comma list).")
@click.option(
    "--backend",
    "-b",
    "proxy_key",
    metavar="KEY",
    help="A local white-box model, e.g. 'hf[model=PATH]', that reads responses carrying no "
    "token log-probabilities or hidden states of their own (a dataset's answers): each is "
    "teacher-forced after the prompt generation would send, once (stored in the run), and "
    "perplexity, entropies, LogDet, eRank... score this proxy's view, named as such in "
    "their specs.",
)
@click.pass_context
def detect_cmd(
    ctx: click.Context, detectors: tuple[str, ...], proxy_key: str | None, **options: Any
) -> None:
    """Score a dataset's responses with hallucination detectors."""
    _run_stage(ctx, "detect", detectors, proxy_key, **options)


def _proxy_from(key: str) -> Any:
    """The proxy model of ``--backend`` on detect: the backend, with generation's prompts."""
    from realitycheck.generation import GenerationPrompt
    from realitycheck.pipeline import ProxyModel

    backend = backend_from(key, None)
    return ProxyModel(backend=backend, prompt=GenerationPrompt(backend))


@cli.command("evaluate")
@_dataset_option
@_data_dir_option
@click.option(
    "--labelers",
    "-l",
    multiple=True,
    help="Labeler keys to run; each is compared with humans beside every labeler already "
    "stored (see --only).",
)
@click.option(
    "--detectors",
    "-D",
    multiple=True,
    help="Detector keys to run; each is measured beside every detector already stored "
    "(see --only).",
)
@click.option(
    "--only",
    is_flag=True,
    help="Measure only the detectors and labelers named with -D / -l: metrics.csv and "
    "agreement.csv then hold them alone. Without it every stored detector and labeler is "
    "measured, so the tables describe the whole run.",
)
@click.option(
    "--references",
    "-r",
    multiple=True,
    help="Ground-truth labelers for detectors (default: human + every labeler).",
)
@reference_option
@bootstrap_options
# type=str: the choices are checked by EvaluationConfig (the one message shape), and the
# help keeps its words.
@field_option(
    EvaluationConfig,
    "threshold_objective",
    type=str,
    show_default=True,
    help="What the calibration-split threshold maximises.",
)
@field_option(
    EvaluationConfig,
    "calibration",
    type=str,
    show_default=True,
    help="How a detector's score becomes a probability before ECE and Brier, fitted on the "
    "calibration split: platt, isotonic, or none (scores in [0, 1] taken as they are).",
)
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    help="Fixed threshold for a detector, KEY=VALUE (repeatable); others are chosen "
    "on the calibration split.",
)
@click.option(
    "--slice-by",
    "slice_by",
    multiple=True,
    metavar="COLUMN",
    help="Also measure per value of this column: prompt_variant (sliced only when named), "
    "model, task, dataset, or a files dataset's meta= column; repeatable or a comma list.",
)
@field_option(
    RunSettings,
    "report",
    "--report/--no-report",
    show_default=True,
    help="Also write report.html / report.md / CSV tables into the run folder.",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False),
    help="Write metrics.csv, agreement.csv and the report here instead of the run folder "
    "(required for a run on object storage, e.g. --out s3://bucket/run).",
)
@workers_option(
    "Threads measuring the metrics with --executor local (default: one per usable "
    "core; 1 = one unit after another). The tables are the same."
)
@models_option
@retry_errors_option
@allow_failures_option
@replace_option
@cache_options
@executor_options
@_run_option
@click.pass_context
def evaluate_cmd(
    ctx: click.Context,
    dataset_keys: tuple[str, ...],
    data_dir: str | None,
    labelers: tuple[str, ...],
    detectors: tuple[str, ...],
    only: bool,
    references: tuple[str, ...],
    reference: str | None,
    n_resamples: int,
    confidence: float,
    seed: int,
    threshold_objective: str,
    calibration: str,
    thresholds: tuple[str, ...],
    slice_by: tuple[str, ...],
    report: bool,
    models_file: str | None,
    retry_errors: bool,
    allow_failures: bool,
    replace: tuple[str, ...],
    cache_dir: str | None,
    no_cache: bool,
    executor: str,
    ray_address: str | None,
    run_dir: str,
    report_dir: str | None,
    workers: int | None,
) -> None:
    """Label, detect and measure detectors and labelers against human labels.

    The labelers (-l) and detectors (-D) named are run first; then every
    detector and labeler the run stores is measured, those of earlier
    commands too, and metrics.csv and agreement.csv are written anew for the
    whole run. With --only, the tables hold the named ones alone.

    With --reference KEY, every other labeler is measured against KEY instead,
    and KEY comes first among the detectors' references.
    """
    from realitycheck.detectors import detectors as det_registry
    from realitycheck.labelers import labelers as lab_registry
    from realitycheck.pipeline import check_slice_by
    from realitycheck.records.model_info import read_models
    from realitycheck.runner import measure_run, record_models

    out = local_out(run_dir, report_dir, "--report-dir")
    lab_keys, det_keys = split_keys(labelers), split_keys(detectors)
    labs = [lab_registry.create_from_key(k) for k in lab_keys if not is_stored(k)]
    dets = [det_registry.create_from_key(k) for k in det_keys if not is_stored(k)]
    config = EvaluationConfig(
        detectors=tuple(_measured_keys(det_keys, dets)) if det_keys else None,
        labelers=tuple(_measured_keys(lab_keys, labs)) if lab_keys else None,
        only=only,
        references=tuple(split_keys(references)) or None,
        reference=reference,
        bootstrap=bootstrap_from(n_resamples, confidence, seed),
        threshold_objective=threshold_objective,
        calibration=calibration,
        thresholds=_parse_thresholds(thresholds),
        slice_by=tuple(c.strip() for v in slice_by for c in v.split(",") if c.strip()),
    )
    models = read_models(models_file) if models_file is not None else {}
    runs_on = executor_from(ctx, executor, ray_address, workers)
    store, names = _load_run(ctx, run_dir, dataset_keys, data_dir, replace)
    record_models(store, models)
    check_slice_by(store, config.slice_by)
    _warn_other_datasets(store, names)
    failures = FailureTally()
    measure_run(
        store,
        labs,
        dets,
        config,
        datasets=names,
        out=out,
        report=report,
        retry_errors=retry_errors,
        cache=cache_from(no_cache, cache_dir),
        executor=runs_on,
        progress=progress_for(ctx),
        listener=listener_for(ctx, failures),
    )
    failures.exit(allowed=allow_failures)


def _warn_other_datasets(store: Any, names: Sequence[str]) -> None:
    """Say so when the run holds datasets this command did not name: they are measured too."""
    entries = dict(store.read_manifest().get("datasets") or {})
    held = {
        str(e.get("name") or (e.get("spec") or {}).get("name") or k)
        for k, e in entries.items()
        if isinstance(e, dict)
    }
    others = sorted(held - set(names))
    if others:
        click.echo(
            f"note: the run also holds {', '.join(others)}, loaded by earlier commands; "
            "evaluate measures them too, with these settings. Use another --out folder to "
            "keep them apart.",
            err=True,
        )


def _parse_thresholds(values: Sequence[str]) -> dict[str, float]:
    out = {}
    for value in values:
        key, sep, number = value.rpartition("=")
        try:
            out[key.strip()] = float(number)
        except ValueError:
            key = ""
        if not sep or not key.strip():
            raise InvalidInputError(
                f"A --threshold must be written KEY=NUMBER, e.g. length=120. Got {value!r} instead."
            )
    return out


def _measured_keys(keys: Sequence[str], comps: Sequence[Any]) -> list[str]:
    """Return the keys to measure: built components' keys plus stored ones (``recorded``…)."""
    return [c.key for c in comps] + [k for k in keys if is_stored(k)]
