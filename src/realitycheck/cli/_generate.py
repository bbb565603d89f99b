"""The ``generate`` verb (answer a dataset with a model) and ``run CONFIG.toml`` (a whole study)."""

from __future__ import annotations

from typing import Any

import click

from realitycheck.cli._common import (
    EXIT_FAILURES,
    allow_failures_option,
    backend_from,
    backend_options,
    cache_from,
    cache_options,
    check_replace_names,
    cli,
    data_dir_option,
    dataset_option,
    datasets_from_keys,
    executor_from,
    executor_options,
    lock_run,
    models_option,
    progress_for,
    reference_option,
    replace_option,
    retry_errors_option,
    run_executor_options,
    run_option,
    split_keys,
    workers_option,
)
from realitycheck.cli._echo import listener_for
from realitycheck.cli._failures import FailureTally
from realitycheck.cli._fields import field_option
from realitycheck.runner import DatasetTable, RunSettings

__all__: list[str] = []


@cli.command("generate")
@dataset_option("Dataset key, e.g. triviaqa, 'squad-v2[path=dev.parquet]' or nq-open (repeatable).")
@data_dir_option("Folder holding the data.")
@backend_options("Backend key, e.g. 'hf[model=PATH]' or 'openai[model=NAME,base_url=URL]'.")
@click.option(
    "--plan",
    "plan_key",
    default="default",
    show_default=True,
    help="Sampling plan: default (10 samples at T=1 plus a best answer at T=0.1), greedy or "
    "beam, with parameters, e.g. 'default[n_samples=5,decoding=greedy]'.",
)
@click.option(
    "--variant",
    "variants",
    multiple=True,
    help="Prompt variant: zero_shot, few_shot, zero_shot@2 ... (repeatable; default zero_shot).",
)
@click.option(
    "--retriever",
    "retriever_key",
    help="Prepend retrieved passages to each question, e.g. "
    "'bm25[corpus=passages.jsonl,k=3]' (a JSONL of {id, text, title}); their ids are "
    "stored in each response's meta.",
)
@field_option(DatasetTable, "limit", ranged=True)
@field_option(RunSettings, "batch_size", ranged=True, show_default=True, help="")
@allow_failures_option
@cache_options
@executor_options
@run_option("The run folder (created if missing; resumed if present).")
@click.pass_context
def generate_cmd(
    ctx: click.Context,
    dataset_keys: tuple[str, ...],
    data_dir: str | None,
    backend_key: str,
    model: str | None,
    plan_key: str,
    variants: tuple[str, ...],
    retriever_key: str | None,
    limit: int | None,
    batch_size: int,
    allow_failures: bool,
    cache_dir: str | None,
    no_cache: bool,
    executor: str,
    ray_address: str | None,
    run_dir: str,
) -> None:
    """Answer a dataset's questions with a model: best answers, samples and features.

    Finished batches are stored as they complete; run the same command again to
    resume, retry failed calls and reuse every cached answer. Exits 3 when
    generations failed (unless --allow-failures).
    """
    from realitycheck.generation import make_plan
    from realitycheck.runner import generate_datasets
    from realitycheck.store import RunStore

    overrides: dict[str, Any] = {"variants": split_keys(variants)} if variants else {}
    if retriever_key is not None:
        overrides["retriever"] = retriever_key
    plan = make_plan(plan_key, **overrides)
    backend = backend_from(backend_key, model)
    plan.check(backend)
    chosen = datasets_from_keys(dataset_keys, data_dir)
    runs_on = executor_from(ctx, executor, ray_address)
    failures = FailureTally()
    generate_datasets(
        RunStore(lock_run(ctx, run_dir)),
        [(ds, limit) for ds in chosen],
        backend,
        plan,
        cache=cache_from(no_cache, cache_dir),
        batch_size=batch_size,
        executor=runs_on,
        progress=progress_for(ctx),
        listener=listener_for(ctx, failures),
    )
    failures.exit(allowed=allow_failures)


def _merge_models(config: Any, models_file: str) -> dict[str, Any]:
    """The run config's [models] and the --models file's; a model in both is an error."""
    from realitycheck.errors import InvalidInputError
    from realitycheck.records.model_info import read_models

    extra = read_models(models_file)
    for name in extra:
        if name in config.models:
            raise InvalidInputError(
                f"The model {name!r} is given twice: in the [models] table of "
                f"{config.path} and in this file. Keep one.",
                path=models_file,
                field=name,
            )
    return {**config.models, **extra}


@cli.command("run")
@click.argument("config_path", type=click.Path(dir_okay=False))
@models_option
@retry_errors_option
@allow_failures_option
@reference_option
@replace_option
@run_executor_options
@workers_option(
    "How many of this machine's cores the run uses: evaluate's threads and the processes "
    "computing the studies side by side (overrides the [executor] workers; default: one per "
    "usable core; local executor only). The results are the same whatever it is."
)
@click.pass_context
def run_cmd(
    ctx: click.Context,
    config_path: str,
    models_file: str | None,
    retry_errors: bool,
    allow_failures: bool,
    reference: str | None,
    replace: tuple[str, ...],
    executor: str | None,
    ray_address: str | None,
    workers: int | None,
) -> None:
    """Run a whole study from a TOML file: generate, label, detect, evaluate, studies, report.

    \b
    labelers = ["exact_match", "rouge_l"]    (top-level keys first)
    detectors = ["perplexity", "ln_entropy", "length"]
    studies = ["all"]
    reference = "human"            (the ground truth; --reference overrides it)
    [run]
    out = "runs/trivia"            (relative to the file)
    report_dir = "tables"          (only with out = "s3://bucket/run": tables, studies, report)
    [[datasets]]
    name = "triviaqa"
    limit = 200
    [backend]                      (leave out to evaluate the datasets' own responses)
    name = "hf"
    params = { model = "PATH", device = "auto" }
    [plan]                         (n_samples, temperature, decoding, variants...)
    n_samples = 10
    retriever = { name = "bm25", params = { corpus = "passages.jsonl", k = 3 } }
    [bootstrap]                    (every interval: n_resamples, confidence, seed)
    n_resamples = 1000
    [models."org/model-7b"]        (per-model metadata for the studies; or --models FILE)
    family = "org"
    size = 7e9
    instruction_tuned = false
    [executor]                     (--executor / --ray-address override it)
    kind = "ray"                   (local | ray; address = "HOST:PORT", or $RAY_ADDRESS)
    workers = 4                    (local: cores used; default: all usable ones)

    Every stage resumes: running the same file again does only what is missing,
    and retries what failed for a reason that may pass (--retry-errors: all that failed).
    Exits 3 when items failed (a call that never succeeded), unless --allow-failures.
    """  # noqa: D301  (click's \\b keeps the example's lines as written)
    import dataclasses

    from realitycheck.runner import load_run_config, run_config

    config = load_run_config(config_path)
    if models_file is not None:
        config = dataclasses.replace(config, models=_merge_models(config, models_file))
    if reference is not None:
        config = dataclasses.replace(
            config,
            reference=reference,
            evaluation=dataclasses.replace(config.evaluation, reference=reference),
        )
    from realitycheck.cli._study import exit_if_studies_failed

    check_replace_names(replace, [entry.dataset for entry in config.datasets])
    settings = config.executor.overridden(executor, ray_address, workers)
    config = dataclasses.replace(config, executor=settings)
    runs_on = executor_from(ctx, settings.kind, settings.address, settings.workers)
    # The folder the lock checked: on object storage the bucket is not asked for again.
    config = dataclasses.replace(config, out=lock_run(ctx, config.out))
    failures = FailureTally()
    outcome = run_config(
        config,
        retry_errors=retry_errors,
        replace=replace,
        executor=runs_on,
        progress=progress_for(ctx),
        listener=listener_for(ctx, failures),
        study_workers=None,  # one per usable core, unless --workers or the config says
    )
    items_failed = failures.echo(allowed=allow_failures)
    exit_if_studies_failed(outcome.studies)
    if items_failed:
        raise click.exceptions.Exit(EXIT_FAILURES)
