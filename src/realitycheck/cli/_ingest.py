"""The ``ingest`` verb: load datasets into a run, label and evaluate nothing."""

from __future__ import annotations

from typing import Any

import click

from realitycheck.cli._common import cli, replace_option
from realitycheck.cli._stages import _data_dir_option, _dataset_option, _load_run, _run_option

__all__: list[str] = []


@cli.command("ingest")
@_dataset_option
@_data_dir_option
@replace_option
@_run_option
@click.pass_context
def ingest_cmd(
    ctx: click.Context,
    dataset_keys: tuple[str, ...],
    data_dir: str | None,
    replace: tuple[str, ...],
    run_dir: str,
) -> None:
    """Load datasets into a run without labelling, detecting or evaluating.

    Prints, per dataset, the examples, responses, labels (those of ``human``
    split into hallucinated / not / no verdict) and recorded scores the run now holds. Later verbs
    (label, detect, evaluate) on the same --out reuse what was loaded.
    """
    store, names = _load_run(ctx, run_dir, dataset_keys, data_dir, replace)
    for line in _count_lines(store, names):
        click.echo(line)


def _count_lines(store: Any, names: list[str]) -> list[str]:
    """Return one line of counts per dataset loaded."""
    from realitycheck.store import RunData

    data = RunData(store)
    responses = data.responses
    out = []
    for name in names:
        ids = set(responses.loc[responses["dataset"] == name, "response_id"])
        labels = data.labels[data.labels["response_id"].isin(ids)]
        scores = data.scores[data.scores["response_id"].isin(ids)]
        human = labels[labels["labeler"] == "human"]
        verdicts = human["hallucinated"]
        n_yes = int((verdicts == True).sum())  # noqa: E712  (a column of True/False/None)
        n_no = int((verdicts == False).sum())  # noqa: E712
        with_samples = int(
            responses.loc[responses["dataset"] == name, "samples"].map(_count).gt(0).sum()
        )
        out.append(
            f"{name}: {int((data.examples['dataset'] == name).sum())} examples, "
            f"{len(ids)} responses ({with_samples} with samples), "
            f"{len(labels)} labels ({len(human)} by 'human': {n_yes} hallucinated, {n_no} not, "
            f"{len(human) - n_yes - n_no} without a verdict), {len(scores)} recorded scores"
        )
    out.append(f"run: {store.location}")
    return out


def _count(value: Any) -> int:
    """Return the number of samples in a stored cell (a list, an array or None)."""
    return 0 if value is None else len(value)
