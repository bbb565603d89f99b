"""What the verbs print as a run goes: one line per dataset, component, study or file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from realitycheck.cli._common import terminal_lines, terminal_text
from realitycheck.cli._failures import FailureTally

__all__ = [
    "echo_choice",
    "echo_findings",
    "echo_generation",
    "echo_stage",
    "echo_wrong_way",
    "listener_for",
]


def echo_generation(name: str, report: Any, run_dir: Any) -> None:
    """Print what generation did for one dataset, and where its failures are listed."""
    usage = report.usage
    click.echo(
        f"{name}: {report.computed} responses generated, {report.reused} already stored, "
        f"{report.failed} failed ({usage.calls} calls, {usage.cached} answered from the cache, "
        f"{usage.total_tokens} tokens)"
    )
    if report.lacking:
        click.echo(
            f"  {report.lacking} responses lack a feature the plan asked for (the server did "
            "not return it; see the warning above); a rerun asks for them again.",
            err=True,
        )
    dropped_labels = report.dropped_labels
    dropped_scores = report.dropped_scores
    if dropped_labels or dropped_scores:
        click.echo(
            f"  {report.regenerated} stored responses were asked for again: "
            f"{dropped_labels} labels and {dropped_scores} scores computed from their old "
            "version were dropped; the next label and detect stages compute them again "
            "(and evaluate after them).",
            err=True,
        )
    if report.failed:
        for line in report.errors:
            click.echo(f"  failed: {terminal_text(line)}", err=True)
        permanent = report.permanent
        passing = report.failed - permanent
        where = f"{run_dir}/generation_errors.parquet"
        if not permanent:
            advice = "run the same command again to retry them."
        elif not passing:
            advice = (
                "they failed for good (the same request fails again): fix the cause above; "
                "rerunning the same command repeats them."
            )
        else:
            advice = (
                f"{passing} may pass on a rerun of the same command; the other {permanent} "
                "failed for good: fix the cause above."
            )
        click.echo(
            f"  {report.failed} generations failed and are listed in {where}; {advice}", err=True
        )


def echo_choice(name: str, report: Any) -> None:
    """Print what the choose stage did for one dataset, and which variants it skipped where."""
    click.echo(
        f"{name}: {report.computed} questions answered by likelihood, {report.reused} already "
        f"stored ({report.pairs_scored} options scored, the rest from the cache)"
    )
    for key, skipped in report.skipped.items():
        click.echo(
            terminal_lines(
                f"  {key} skipped {skipped['questions']} questions, e.g. {skipped['reason']}"
            ),
            err=True,
        )


def echo_stage(report: Any) -> None:
    """Print what a label or detect stage did, one line per component.

    Each line counts the records computed now (with a value), missing (no
    value the component defines), failed (a call never succeeded), with
    unreadable replies, and already stored; on stderr, why values are missing
    and the commonest error of the failed ones.
    """
    for key, n in report.computed.items():
        shown = terminal_text(key, limit=1000)  # a key holds model names: untrusted
        missing, failed = report.missing.get(key, 0), report.failed.get(key, 0)
        unreadable = report.unreadable.get(key, 0)
        retried = report.retried.get(key, 0)
        again = f" ({retried} retried after an error)" if retried else ""
        parts = [f"{n - missing - failed} computed{again}"]
        parts += [f"{missing} missing"] if missing else []
        parts += [f"{failed} failed"] if failed else []
        parts += [f"{unreadable} with unreadable replies"] if unreadable else []
        stored = f"{report.reused.get(key, 0)} already stored"
        before = report.failed_before.get(key, 0)
        if before:
            stored += f" ({before} of them failed before; --retry-errors computes them again)"
        click.echo(f"{shown}: {', '.join(parts)}, {stored}")
        if key in report.missing_why:
            why = terminal_text(report.missing_why[key])
            click.echo(f"{shown}: missing because {why}", err=True)
        commonest = report.commonest_failure(key)
        if commonest is not None:
            text, count = commonest
            click.echo(
                f"{shown}: {count} of {failed + before} failed with: {terminal_text(text)}",
                err=True,
            )
    for key, why in report.skipped.items():
        click.echo(terminal_text(f"{key}: skipped {why}", limit=1000), err=True)
    for note in report.notes:
        click.echo(terminal_text(f"note: {note}", limit=1000), err=True)


def _where(slice_name: str) -> str:
    return "all responses" if slice_name == "all" else f"slice {slice_name}"


def echo_wrong_way(evaluation: Any, reference: str) -> None:
    """Warn, one line each, of every AUROC against ``reference`` ranked the wrong way round.

    The rule is the report's (:func:`realitycheck.analysis.wrong_way`: the whole
    confidence interval below 0.5; an AUROC without an interval is not judged),
    over the detectors (``evaluation.metrics``) and the labelers' scores
    (``evaluation.agreement``), on all responses and on every slice. Each line
    names the detector or labeler, the dataset and slice, and the AUROC with its
    interval; the names are untrusted and escaped for the terminal.
    """
    from realitycheck.analysis import wrong_way

    # The metrics table names a detector and its reference labeler; the agreement
    # table a labeler and its reference.
    sides = (
        ("detector", "labeler", evaluation.metrics),
        ("labeler", "reference", evaluation.agreement),
    )
    for measured, truth, table in sides:
        if table is None or table.empty:
            continue
        rows = table[(table[truth] == reference) & (table["metric"] == "auroc")]
        for key, r in zip(rows[measured], rows.itertuples(index=False), strict=True):
            if not wrong_way("auroc", r.value, r.ci_low, r.ci_high):
                continue
            what = "detector" if measured == "detector" else "the score of labeler"
            line = (
                f"warning: ranked the wrong way round: {what} {key} on {r.dataset}, "
                f"{_where(str(r.slice))}, against {reference} labels: AUROC {r.value:.3f} "
                f"[{r.ci_low:.3f}, {r.ci_high:.3f}] (n = {int(r.n):,}), its whole interval "
                "below 0.5; a higher score means less likely hallucinated here: check its sign."
            )
            click.echo(terminal_text(line, limit=1000), err=True)


def echo_findings(findings: Sequence[str], *, title: str = "key findings:") -> None:
    """Print a run's headline findings (the demo's: :attr:`DemoResult.findings`), one per line.

    They name models, datasets and components: untrusted, escaped for the
    terminal. Nothing is printed when there are none. ``title`` heads them.
    """
    if not findings:
        return
    click.echo(title)
    for finding in findings:
        click.echo(terminal_text(f"  - {finding}", limit=2000))


def listener_for(ctx: click.Context, failures: FailureTally | None = None) -> Any:
    """A runner Listener that prints each stage, study and file as the run goes.

    ``failures``, when given, gathers the failed items of every generate,
    label and detect stage (for the command's exit code). After the evaluate
    stage it warns of every AUROC ranked the wrong way round against the
    reference it used (:func:`echo_wrong_way`), as the report marks them.
    """
    from realitycheck.runner import Listener

    tally = failures if failures is not None else FailureTally()

    class Echo(Listener):
        def generation(self, dataset: str, report: Any, run_dir: Any) -> None:
            echo_generation(dataset, report, run_dir)
            tally.generation(dataset, report, run_dir)

        def choice(self, dataset: str, report: Any) -> None:
            echo_choice(dataset, report)

        def stage(self, report: Any) -> None:
            echo_stage(report)
            tally.stage(report)

        def evaluation(self, evaluation: Any, out: Any) -> None:
            for note in evaluation.notes:
                click.echo(terminal_lines(f"note: {note}"), err=True)
            click.echo(f"metrics: {out / 'metrics.csv'} ({len(evaluation.metrics)} rows)")
            echo_wrong_way(evaluation, evaluation.reference)

        def study(self, done: Any) -> None:
            click.echo(terminal_text(f"== {done.result.study} -> {done.folder}", limit=1000))
            click.echo(terminal_lines(done.result.finding))  # it names models: untrusted
            for line in done.result.skipped:
                click.echo(terminal_text(f"  not run on {line}", limit=1000))

        def report(self, files: Any) -> None:
            click.echo(f"report: {files.html}")

        def note(self, text: str) -> None:
            click.echo(terminal_lines(f"note: {text}"), err=True)

    return Echo()
