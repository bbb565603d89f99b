"""The verbs that write reports: report (for an evaluated run) and demo (the whole job)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from realitycheck.cli._common import (
    EXIT_FAILURES,
    allow_failures_option,
    bootstrap_from,
    bootstrap_options,
    cli,
    lock_run,
    old_out_option,
    progress_for,
    reference_option,
    run_out_folder,
)
from realitycheck.cli._echo import echo_findings
from realitycheck.cli._failures import FailureTally
from realitycheck.cli._stages import _data_dir_option
from realitycheck.errors import InvalidInputError

__all__: list[str] = []


def _write_report(store: Any, out: Path, reference: str | None = None) -> None:
    from realitycheck.report import write_report

    files = write_report(store, out, reference=reference)
    click.echo(f"report: {files.html}")


@cli.command("report")
@click.option(
    "--run",
    "run_dir",
    required=True,
    help="The run folder, or its URI on object storage (s3://bucket/run; then give --report-dir).",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False),
    help="Where to write (default: the run folder; required for a run on object storage).",
)
@old_out_option("--report-dir", "report_dir", type=click.Path(file_okay=False))
@reference_option
@click.pass_context
def report_cmd(
    ctx: click.Context, run_dir: str, report_dir: str | None, reference: str | None
) -> None:
    """Write report.html, report.md and CSV tables for an evaluated run.

    The reference defaults to the one the evaluate stage used; one the run
    holds no labels of is refused, as evaluate refuses it, and nothing is written.
    """
    from realitycheck.store import RunStore

    made = report_dir is not None and not Path(report_dir).exists()
    target = run_out_folder(run_dir, report_dir)
    try:
        _write_report(RunStore(lock_run(ctx, run_dir)), target, reference)
    except InvalidInputError:
        if made and not any(target.iterdir()):
            target.rmdir()  # the --report-dir folder this command made for a report it refused
        raise


@cli.command("demo")
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False),
    default="demo-report",
    show_default=True,
    help="The folder for the report and the tables; the run is stored in DIR/run.",
)
@old_out_option("--report-dir", "report_dir", type=click.Path(file_okay=False))
@_data_dir_option
@bootstrap_options
@reference_option
@allow_failures_option
@click.pass_context
def demo_cmd(
    ctx: click.Context,
    report_dir: str,
    data_dir: str | None,
    n_resamples: int,
    confidence: float,
    seed: int,
    reference: str | None,
    allow_failures: bool,
) -> None:
    """Detectors, labelers and every study on six human-labelled datasets.

    RAGTruth, FaithBench, HaluEval-general, TruthfulQA, BEGIN and FaithDial.

    Everything stored is reused when the demo runs again into the same folder.
    Its first findings (a quick evaluation) come within about a minute, before
    the MiniLM embeddings, the final evaluation and the studies; a first run
    took about 4.5 CPU minutes (2.6 minutes on two idle cores). The embeddings
    are cached on disk, so a rerun, even into a new folder, embeds nothing.

    With --reference KEY (e.g. recorded:gpt_4o, FaithBench's GPT-4o judge),
    evaluate, the studies and the report measure against KEY instead of humans.
    """
    from realitycheck.cli._study import exit_if_studies_failed
    from realitycheck.runner import PRELIMINARY_RESAMPLES, run_demo
    from realitycheck.store import RunStore, is_uri, shown_uri

    if is_uri(report_dir):
        raise InvalidInputError(
            f"The demo writes its run, studies and report into a local folder; got "
            f"{shown_uri(report_dir)}.",
            field="--report-dir",
        )
    lock_run(ctx, Path(report_dir) / "run")
    started = time.monotonic()

    def first_findings(findings: Sequence[str]) -> None:
        elapsed = time.monotonic() - started
        echo_findings(
            findings,
            title=f"first findings after {elapsed:.0f} s (quick intervals from "
            f"{PRELIMINARY_RESAMPLES} resamples, without the embedding components; "
            "they, the final evaluation, the studies and the report follow):",
        )

    result = run_demo(
        report_dir,
        data_dir=data_dir,
        bootstrap=bootstrap_from(n_resamples, confidence, seed),
        reference=reference,
        progress=progress_for(ctx),
        workers=None,  # one per usable core
        on_first_findings=first_findings,
    )
    click.echo(f"run: {result.run_dir}; studies: {', '.join(result.studies) or 'none'}")
    _write_report(RunStore(result.run_dir), Path(report_dir), reference)
    echo_findings(result.findings)
    failures = FailureTally()
    for report in result.stages:
        failures.stage(report)
    items_failed = failures.echo(allowed=allow_failures)
    exit_if_studies_failed(result.runs)
    if items_failed:
        raise click.exceptions.Exit(EXIT_FAILURES)
