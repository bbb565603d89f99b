"""The ``study`` verb: run diagnostics over a run and store their results."""

from __future__ import annotations

import click

from realitycheck.cli._common import (
    bootstrap_from,
    bootstrap_options,
    cli,
    listener_for,
    progress_for,
    reference_option,
)

__all__: list[str] = []


@cli.command("study")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--run",
    "run_dir",
    type=click.Path(file_okay=False, exists=True),
    required=True,
    help="The run folder (made by evaluate, label/detect or demo).",
)
@bootstrap_options
@reference_option
@click.option(
    "--report/--no-report",
    default=True,
    show_default=True,
    help="Rewrite report.html / report.md in the run folder with the study's section.",
)
@click.pass_context
def study_cmd(
    ctx: click.Context,
    names: tuple[str, ...],
    run_dir: str,
    n_resamples: int,
    confidence: float,
    seed: int,
    reference: str | None,
    report: bool,
) -> None:
    """Run studies (e.g. length, 'label_noise[rate=0.2]', all) over a run.

    Each result (tables as CSV, figures as PNG, the finding) is stored in
    RUN/studies/<study>/ and becomes a section of the report. --reference KEY
    is the ground truth of every study whose key does not name its own.
    """
    from realitycheck.cli._common import lock_run, split_keys
    from realitycheck.runner import run_studies
    from realitycheck.store import RunStore

    lock_run(ctx, run_dir)
    store = RunStore(run_dir)
    listener = listener_for(ctx)
    run_studies(
        store,
        split_keys(names),
        bootstrap=bootstrap_from(n_resamples, confidence, seed),
        reference=reference,
        progress=progress_for(ctx),
        on_result=listener.study,
    )
    if report:
        from realitycheck.report import write_report

        listener.report(write_report(store, run_dir, reference=reference))
