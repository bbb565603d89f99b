"""The ``study`` verb: run one diagnostic over a run and store its result."""

from __future__ import annotations

import click

from realitycheck.cli._common import cli, progress_for

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
@click.option(
    "--report/--no-report",
    default=True,
    show_default=True,
    help="Rewrite report.html / report.md in the run folder with the study's section.",
)
@click.pass_context
def study_cmd(ctx: click.Context, names: tuple[str, ...], run_dir: str, report: bool) -> None:
    """Run studies (e.g. length, 'label-noise[rate=0.2]', all) over a run.

    Each result (tables as CSV, figures as PNG, the finding) is stored in
    RUN/studies/<study>/ and becomes a section of the report.
    """
    from realitycheck.cli._common import split_keys
    from realitycheck.store import RunStore
    from realitycheck.studies import RunData, save_result, studies

    keys = split_keys(names)
    if keys == ["all"]:
        keys = studies.names()
    components = [studies.create_from_key(k) for k in keys]
    store = RunStore(run_dir)
    data = RunData(store)
    with progress_for(ctx).task("studies", len(components)) as task:
        for component in components:
            result = component.run(data)
            folder = save_result(store, result)
            click.echo(f"== {component.key} -> {folder}")
            click.echo(result.finding)
            for line in result.skipped:
                click.echo(f"  not run on {line}")
            task.advance()
    if report:
        from realitycheck.report import write_report

        click.echo(f"report: {write_report(store, run_dir).html}")
