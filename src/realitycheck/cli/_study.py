"""The ``study`` verb: run diagnostics over a run and store their results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from realitycheck.cli._common import (
    bootstrap_from,
    bootstrap_options,
    cli,
    lock_run,
    models_option,
    old_out_option,
    progress_for,
    reference_option,
    run_out_folder,
    split_keys,
    workers_option,
)
from realitycheck.cli._echo import listener_for
from realitycheck.cli._fields import field_option
from realitycheck.errors import RealityCheckError
from realitycheck.runner import RunSettings

if TYPE_CHECKING:  # pragma: no cover - the runner is imported when a command runs
    from realitycheck.runner import StudyRun

__all__ = ["exit_if_studies_failed"]


def exit_if_studies_failed(runs: Sequence[StudyRun]) -> None:
    """End the command with a non-zero exit naming every study that failed, if any did.

    Called after every study has run and the report is written, so a failed
    study stops nothing; its error is in its section of the report.

    Raises:
        RealityCheckError: One or more studies failed (the CLI prints it and exits 2).
    """
    failed = [run for run in runs if run.error]
    if failed:
        raise RealityCheckError(
            f"{len(failed)} of {len(runs)} studies failed: "
            + "; ".join(f"{run.result.study} ({run.error})" for run in failed)
            + ". The other results are stored; each failed study's error is in its "
            "section of the report."
        )


@cli.command("study")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--run",
    "run_dir",
    required=True,
    help="The run folder (made by evaluate, label/detect or demo), or its URI on object "
    "storage (s3://bucket/run; then give --report-dir).",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False),
    help="For a run on object storage (and only there): the local folder for the "
    "results (DIR/studies/) and the report.",
)
@old_out_option("--report-dir", "report_dir", type=click.Path(file_okay=False))
@bootstrap_options
@reference_option
@models_option
@field_option(
    RunSettings,
    "report",
    "--report/--no-report",
    show_default=True,
    help="Rewrite report.html / report.md in the run folder (in --report-dir for a run on "
    "object storage) with the study's section.",
)
@workers_option(
    "Processes computing studies side by side (default: one per core, at most one "
    "per study; 1 = one after another in this process). The results are the same."
)
@click.pass_context
def study_cmd(
    ctx: click.Context,
    names: tuple[str, ...],
    run_dir: str,
    report_dir: str | None,
    n_resamples: int,
    confidence: float,
    seed: int,
    reference: str | None,
    models_file: str | None,
    report: bool,
    workers: int | None,
) -> None:
    """Run studies (e.g. length, 'label_noise[rate=0.2]', all) over a run.

    Each result (tables as CSV, figures as PNG, the finding) is stored in
    RUN/studies/<study>/ and becomes a section of the report. A run on object
    storage (--run s3://...) is read, not written (only --models FILE is
    recorded in its manifest): its results go to DIR/studies/<study>/ and its
    report to DIR (--report-dir DIR); `report --run URI --report-dir DIR`
    includes them again.
    --reference KEY is the ground truth of every study whose key does not name its own.
    --models FILE gives the models' family, size and tuning to the studies that
    group by them (significance, model_factors).
    A study that fails is stored with its error and the others still run;
    the command then exits non-zero naming the failed studies.
    """
    import os

    from realitycheck.records.model_info import read_models
    from realitycheck.runner import record_models, run_studies
    from realitycheck.store import RunStore

    target = run_out_folder(run_dir, report_dir, report_dir_on_local_run=False)
    models = read_models(models_file) if models_file is not None else {}
    store = RunStore(lock_run(ctx, run_dir))
    record_models(store, models)
    listener = listener_for(ctx)
    runs = run_studies(
        store,
        split_keys(names),
        bootstrap=bootstrap_from(n_resamples, confidence, seed),
        reference=reference,
        progress=progress_for(ctx),
        on_result=listener.study,
        raise_errors=bool(os.environ.get("REALITYCHECK_DEBUG")),
        folder=target,  # the run folder itself, unless the run is on object storage
        workers=workers,
    )
    if report:
        from realitycheck.report import write_report

        listener.report(write_report(store, target, reference=reference))
    exit_if_studies_failed(runs)
