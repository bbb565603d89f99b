"""The ``generate`` verb (answer a dataset with a model) and ``run CONFIG.toml`` (a whole study)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from realitycheck.cli._common import (
    cli,
    datasets_from_keys,
    echo_stage,
    progress_for,
    retry_errors_option,
    split_keys,
)

__all__: list[str] = []


def _make_backend(key: str, model: str | None) -> Any:
    from realitycheck.backends import backends
    from realitycheck.registry import parse_key

    name, params = parse_key(key)
    if model is not None:
        params["model"] = model
    return backends.create(name, **params)


def _make_cache(no_cache: bool, cache_dir: str | Path | None) -> Any:
    if no_cache:
        return None
    from realitycheck.backends._cache import CallCache

    return CallCache(Path(cache_dir) / "calls.sqlite" if cache_dir is not None else None)


def _echo_generation(name: str, report: Any, run_dir: Path) -> None:
    usage = report.usage
    click.echo(
        f"{name}: {report.computed} responses generated, {report.reused} already stored, "
        f"{report.failed} failed ({usage.calls} calls, {usage.cached} answered from the cache, "
        f"{usage.total_tokens} tokens)"
    )
    if report.failed:
        for line in report.errors:
            click.echo(f"  failed: {line}", err=True)
        click.echo(
            f"  {report.failed} generations failed and are listed in "
            f"{run_dir / 'generation_errors.parquet'}; run the same command again to retry them.",
            err=True,
        )


def _generate_datasets(
    ctx: click.Context,
    store: Any,
    dataset_list: Sequence[tuple[Any, int | None]],
    backend: Any,
    plan: Any,
    *,
    cache: Any,
    batch_size: int,
) -> list[str]:
    from realitycheck.generation import generate, load_inputs

    names = []
    progress = progress_for(ctx)
    for dataset, limit in dataset_list:
        pool = load_inputs(store, dataset, progress=progress)
        report = generate(
            store,
            pool[:limit] if limit is not None else pool,
            backend,
            plan,
            cache=cache,
            demos=pool,
            batch_size=batch_size,
            progress=progress,
        )
        _echo_generation(dataset.key, report, store.path)
        names.append(dataset.name)
    return names


@cli.command("generate")
@click.option(
    "--dataset",
    "-d",
    "dataset_keys",
    multiple=True,
    required=True,
    help="Dataset key, e.g. triviaqa, 'squad-v2[path=dev.parquet]' or nq-open (repeatable).",
)
@click.option("--data-dir", type=click.Path(file_okay=False), help="Folder holding the data.")
@click.option(
    "--backend",
    "-b",
    "backend_key",
    required=True,
    help="Backend key, e.g. 'hf[model=PATH]' or 'openai[model=NAME,base_url=URL]'.",
)
@click.option("--model", help="The backend's model (overrides model= in --backend).")
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
@click.option("--limit", type=click.IntRange(min=1), help="Answer the first N examples only.")
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Folder of the call cache.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the call cache.")
@click.option(
    "--out",
    "--run",
    "run_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="The run folder (created if missing; resumed if present).",
)
@click.pass_context
def generate_cmd(
    ctx: click.Context,
    dataset_keys: tuple[str, ...],
    data_dir: str | None,
    backend_key: str,
    model: str | None,
    plan_key: str,
    variants: tuple[str, ...],
    limit: int | None,
    batch_size: int,
    cache_dir: str | None,
    no_cache: bool,
    run_dir: str,
) -> None:
    """Answer a dataset's questions with a model: best answers, samples and features.

    Finished batches are stored as they complete; run the same command again to
    resume, retry failed calls and reuse every cached answer.
    """
    from realitycheck.generation import make_plan
    from realitycheck.store import RunStore

    overrides: dict[str, Any] = {"variants": split_keys(variants)} if variants else {}
    plan = make_plan(plan_key, **overrides)
    backend = _make_backend(backend_key, model)
    plan.check(backend)
    chosen = datasets_from_keys(dataset_keys, data_dir)
    store = RunStore(run_dir)
    _generate_datasets(
        ctx,
        store,
        [(ds, limit) for ds in chosen],
        backend,
        plan,
        cache=_make_cache(no_cache, cache_dir),
        batch_size=batch_size,
    )


@cli.command("run")
@click.argument("config_path", type=click.Path(dir_okay=False))
@retry_errors_option
@click.pass_context
def run_cmd(ctx: click.Context, config_path: str, retry_errors: bool) -> None:
    """Run a whole study from a TOML file: generate, label, detect, evaluate, studies, report.

    \b
    labelers = ["exact_match", "rouge_l"]    (top-level keys first)
    detectors = ["perplexity", "ln_entropy", "length"]
    studies = ["all"]
    [run]
    out = "runs/trivia"            (relative to the file)
    [[datasets]]
    name = "triviaqa"
    limit = 200
    [backend]                      (leave out to evaluate the datasets' own responses)
    name = "hf"
    params = { model = "PATH", device = "auto" }
    [plan]                         (n_samples, temperature, decoding, variants...)
    n_samples = 10
    [evaluate]
    n_resamples = 1000

    Every stage resumes: running the same file again does only what is missing,
    and retries what failed for a reason that may pass (--retry-errors: all that failed).
    """  # noqa: D301  (click's \\b keeps the example's lines as written)
    from realitycheck.generation import load_run_config
    from realitycheck.pipeline import detect, evaluate, ingest, label
    from realitycheck.store import RunStore

    config = load_run_config(config_path)
    store = RunStore(config.out)
    store.update_manifest(config={"run_file": str(config.path), "run_config": dict(config.raw)})
    progress = progress_for(ctx)
    if config.backend is not None:
        names = _generate_datasets(
            ctx,
            store,
            [(entry.dataset, entry.limit) for entry in config.datasets],
            config.backend,
            config.plan,
            cache=_make_cache(not config.cache, config.cache_dir),
            batch_size=config.batch_size,
        )
    else:
        names = []
        for entry in config.datasets:
            ingest(store, entry.dataset, progress=progress)
            names.append(entry.dataset.name)
    labels = label(
        store, config.labelers, datasets=names, retry_errors=retry_errors, progress=progress
    )
    echo_stage(labels)
    scores = detect(
        store, config.detectors, datasets=names, retry_errors=retry_errors, progress=progress
    )
    echo_stage(scores)
    result = evaluate(store, config.evaluation, progress=progress)
    result.metrics.to_csv(config.out / "metrics.csv", index=False)
    result.agreement.to_csv(config.out / "agreement.csv", index=False)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"metrics: {config.out / 'metrics.csv'} ({len(result.metrics)} rows)")
    _run_studies(store, config.studies, progress)
    if config.report:
        from realitycheck.report import write_report

        click.echo(f"report: {write_report(store, config.out).html}")


def _run_studies(store: Any, keys: Sequence[str], progress: Any) -> None:
    if not keys:
        return
    from realitycheck.studies import RunData, save_result, studies

    expanded = studies.names() if "all" in keys else list(keys)
    data = RunData(store)
    with progress.task("studies", len(expanded)) as task:
        for key in expanded:
            result = studies.create_from_key(key).run(data)
            click.echo(f"study {result.study}: {save_result(store, result)}")
            task.advance()
