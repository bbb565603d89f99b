"""``realitycheck check``: verify every part of a run folder, and repair it."""

from __future__ import annotations

import click

from realitycheck.cli._common import EXIT_ERROR, cli

__all__: list[str] = []


@cli.command("check")
@click.option(
    "--run",
    "run_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="The run folder, or its URI on object storage (s3://bucket/run).",
)
@click.option(
    "--repair",
    is_flag=True,
    help="Move unreadable or malformed parts to RUN/quarantine/ (on object storage: under "
    "the run's quarantine/ prefix), delete temporary files left by killed writes and the "
    "lock of a writer that no longer runs on this host, and say "
    "what the next stages compute again.",
)
def check_cmd(run_dir: str, repair: bool) -> None:
    """Check a run: every part readable, schemas, repeated ids, sources, manifest.

    Exits with 0 when nothing is wrong (or all of it was repaired), 2 otherwise.
    """
    from realitycheck.store import check_run

    report = check_run(run_dir, repair=repair)
    for finding in report.findings:
        click.echo(f"problem: {finding.path}: {finding.problem}", err=True)
    for src, dest in report.moved:
        click.echo(f"moved: {src} -> {dest}")
    for line in report.notes:
        click.echo(f"repaired: {line}")
    for line in report.recompute:
        click.echo(f"will be recomputed: {line}")
    fixable = sum(bool(f.repair) for f in report.findings)
    click.echo(f"{report.files} files checked, {len(report.findings)} problems")
    if report.findings and not report.repaired and fixable:
        click.echo(f"{fixable} of them can be repaired: rerun with --repair.")
    if not report.ok:
        raise click.exceptions.Exit(EXIT_ERROR)
