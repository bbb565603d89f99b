"""``annotate export`` and ``annotate import``: humans in the loop.

The annotation package (pyarrow, the store, the rater statistics) loads
when a command runs; only its name lists are read here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from realitycheck.annotation import AGGREGATES, FORMATS, STRATEGIES
from realitycheck.cli._common import cli, lock_run, old_out_option, terminal_text
from realitycheck.errors import InvalidInputError

__all__: list[str] = []


def _open_run(ctx: click.Context, run_dir: str) -> Any:
    """The run at ``run_dir`` (which must exist), locked until the command ends."""
    from realitycheck.store import RunStore, is_uri

    if not is_uri(run_dir) and not Path(run_dir).is_dir():
        raise InvalidInputError(f"There is no run folder at {run_dir}.", field="--run")
    return RunStore(lock_run(ctx, run_dir))


_run_option = click.option(
    "--run",
    "run_dir",
    required=True,
    help="The run folder (made by ingest, label, evaluate…).",
)


@cli.group("annotate")
def annotate_group() -> None:
    """Humans in the loop: export responses for people to label, import their verdicts.

    \b
    realitycheck annotate export --run RUN --export-dir sheets -l rouge_l,qa_judge --n 200
    (label the files in Label Studio or a spreadsheet)
    realitycheck annotate import --run RUN export.json
    realitycheck evaluate -d DATASET --run RUN --reference human
    """  # noqa: D301  (click's \b keeps the lines as written)


@annotate_group.command("export")
@_run_option
@click.option(
    "--export-dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for the files (created if missing).",
)
@old_out_option("--export-dir", "export_dir", type=click.Path(file_okay=False))
@click.option(
    "--strategy",
    type=click.Choice(STRATEGIES),
    default="disagreement",
    show_default=True,
    help="disagreement: responses on which --labelers disagree (balanced over the verdict "
    "patterns); stratified: equal turns over the strata of --by; random.",
)
@click.option(
    "--labelers",
    "-l",
    multiple=True,
    help="Labeler keys (comma list): whose disagreement is sought; with --show-verdicts, "
    "whose verdicts are shown.",
)
@click.option(
    "--by",
    default="dataset",
    show_default=True,
    help="Strata of --strategy stratified: dataset, model, length (quantile bins) or "
    "label:<labeler> (its verdict).",
)
@click.option("--bins", type=int, default=4, show_default=True, help="Length bins of --by length.")
@click.option(
    "--n",
    "n",
    type=int,
    default=None,
    help="How many responses at most (default: 100; with --escalate, every disputed one).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw.")
@click.option(
    "--format",
    "formats",
    multiple=True,
    type=click.Choice(FORMATS),
    help="File formats (repeatable; default: all): Label Studio tasks + labeling config, "
    "CSV, JSONL.",
)
@click.option(
    "--annotators",
    type=int,
    default=1,
    show_default=True,
    help="Annotations wanted per item: rows per item in CSV/JSONL; Label Studio's "
    "'maximum annotations' (noted in annotation.json).",
)
@click.option(
    "--escalate",
    is_flag=True,
    help="Choose the items whose human annotators (an imported round) disagree, for a "
    "round with more annotators; --strategy, --labelers and --by are not used.",
)
@click.option(
    "--show-verdicts",
    is_flag=True,
    help="Show the automatic verdicts (of --labelers, else of every labeler) to the "
    "annotators; they are blinded by default.",
)
@click.option("--instructions", default="", help="A line of guidance atop each Label Studio task.")
@click.pass_context
def export_cmd(ctx: click.Context, run_dir: str, export_dir: str, **options: Any) -> None:
    """Choose responses of a run and write them for people to label.

    Each item shows the question, references, context and response. The
    choice (strategy, seed, n, labelers, the response ids) is written to
    DIR/annotation.json (--export-dir DIR) and to the run's manifest, so that import checks the
    items came from this run.
    """
    from realitycheck.annotation import Selection, export_items
    from realitycheck.cli._common import split_keys

    store = _open_run(ctx, run_dir)
    labelers = tuple(split_keys(options["labelers"]))
    n = options["n"] if options["n"] is not None or options["escalate"] else 100
    selection = Selection(
        strategy=options["strategy"],
        n=n,
        seed=options["seed"],
        labelers=labelers,
        by=options["by"],
        bins=options["bins"],
        escalate=options["escalate"],
    )
    report = export_items(
        store,
        export_dir,
        selection,
        formats=options["formats"] or FORMATS,
        annotators=options["annotators"],
        show_verdicts=options["show_verdicts"],
        instructions=options["instructions"],
    )
    how = "escalate" if selection.escalate else selection.strategy
    choice = report.choice
    click.echo(
        f"round {report.round_id}: {len(choice.response_ids)} items of {choice.candidates} "
        f"candidates, by {how} (seed {selection.seed}), {report.annotators} annotation(s) "
        "wanted per item"
    )
    for group, count in choice.counts().items():
        if group:
            click.echo(f"  {terminal_text(group)}: {count}")
    click.echo(f"wrote {', '.join(f.name for f in report.files)} in {terminal_text(export_dir)}")
    if (report.folder / "tasks.json").exists() and "label-studio" in (
        options["formats"] or FORMATS
    ):
        click.echo(
            "Label Studio: create a project with label_config.xml as its labeling interface, "
            f"set its maximum annotations per task to {report.annotators}, import tasks.json; "
            "then Export -> JSON and run `realitycheck annotate import`."
        )


@annotate_group.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_run_option
@click.option(
    "--aggregate",
    type=click.Choice(AGGREGATES),
    default="majority",
    show_default=True,
    help="How the annotators make the human label: majority (a tie is hallucinated), worst "
    "(hallucinated if any says so) or dawid_skene (score = P(hallucinated | votes)).",
)
@click.option(
    "--drop-weakest",
    type=int,
    default=0,
    show_default=True,
    help="Leave this many least reliable annotators (Dawid-Skene) out of the aggregate.",
)
@click.option(
    "--min-reliability",
    type=float,
    default=None,
    help="Also leave out annotators whose Dawid-Skene reliability ((sensitivity + "
    "specificity) / 2) is below this.",
)
@click.option(
    "--into",
    default="human",
    show_default=True,
    help="The aggregate's key: human, or human[protocol=NAME] to keep it apart from a "
    "dataset's own human labels.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Replace human labels the dataset shipped for the imported items (refused without it).",
)
@click.option(
    "--skip-unknown",
    is_flag=True,
    help="Leave out (and count) items that are not responses exported from this run, "
    "instead of refusing the import.",
)
@click.pass_context
def import_cmd(ctx: click.Context, files: tuple[str, ...], run_dir: str, **options: Any) -> None:
    """Import annotated files: Label Studio JSON exports, or filled CSV / JSONL sheets.

    Each annotator's verdicts become the labels human:<annotator> (a Label
    Studio annotator is named by the e-mail its export gives, else user<id>);
    every imported annotator of every round makes the aggregate (human). A human
    label the dataset shipped is not replaced without --replace. Importing a file
    again changes nothing. Prints the inter-annotator agreement and each
    annotator's Dawid-Skene reliability, and stores them as the study result
    'annotation', which the report shows.
    """
    from realitycheck.annotation import import_annotations

    store = _open_run(ctx, run_dir)
    report = import_annotations(store, files, **options)
    for f in report.files:
        left = ", ".join(f"{n} {why}" for why, n in f.skipped.items())
        click.echo(
            f"{terminal_text(str(f.path))} ({f.format}, sha256 {f.sha256[:12]}): "
            f"{f.annotations} annotations" + (f"; left out: {left}" if left else "")
        )
    if report.foreign:
        click.echo(
            f"warning: {report.foreign} annotation(s) left out: not items exported from this run",
            err=True,
        )
    for note in report.notes:
        click.echo(f"note: {terminal_text(note, limit=600)}", err=True)
    click.echo(
        f"labels: {report.added} added, {report.changed} changed, {report.unchanged} unchanged"
    )
    _echo_agreement(report)
    c = report.counts
    click.echo(
        f"{terminal_text(report.into)}: {c['hallucinated']} hallucinated, {c['faithful']} "
        f"faithful, {c['no verdict']} without a verdict"
        + (
            f" (left out: {', '.join(map(terminal_text, report.dropped))})"
            if report.dropped
            else ""
        )
    )
    if report.result_dir is not None:
        click.echo(f"agreement stored in {report.result_dir}")


def _number(value: Any) -> str:
    return (
        "n/a"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.2f}"
    )


def _echo_agreement(report: Any) -> None:
    ag = report.agreement
    if ag is None:
        return
    click.echo("annotators (Dawid-Skene sensitivity / specificity / reliability):")
    for row in ag.annotators.to_dict("records"):
        click.echo(
            f"  {terminal_text(row['annotator'])}: {row['n_items']} items, "
            f"{_number(row['hallucinated_share'])} hallucinated, "
            f"{_number(row['ds_sensitivity'])} / {_number(row['ds_specificity'])} / "
            f"{_number(row['ds_reliability'])}" + (" (dropped)" if row["dropped"] else "")
        )
    click.echo("agreement:")
    for row in ag.measures.to_dict("records"):
        click.echo(f"  {row['measure']}: {_number(row['value'])} ({row['scope']})")
    for row in ag.pairwise.to_dict("records"):
        click.echo(
            f"  cohen_kappa {terminal_text(row['rater_a'])} / {terminal_text(row['rater_b'])}: "
            f"{_number(row['cohen_kappa'])} on {row['n_overlap']} items "
            f"(raw agreement {_number(row['agreement'])})"
        )
