"""``label --dry-run``: the exact prompts and the estimated tokens and cost, calling nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from realitycheck.cli._common import datasets_from_keys, split_keys

__all__ = ["echo_dry_run"]


def echo_dry_run(
    labeler_keys: Sequence[str],
    dataset_keys: Sequence[str],
    data_dir: str | None,
    *,
    run_dir: str | None = None,
    cache: Any,
    show: int,
) -> None:
    """Print, for each judge, ``show`` prompts and the size and cost of every call it would make.

    The responses are those the run already holds for the datasets (generated
    ones included), or, when it holds none, the datasets' own responses, read
    but not loaded into the run. The call cache is only
    looked up (when its file exists); no backend is called. Labelers that call no backend are
    listed as such.
    """
    from realitycheck.labelers import Judge, estimate_tokens, labelers, plan_calls

    components = [labelers.create_from_key(k) for k in split_keys(labeler_keys)]
    if cache is not None and not cache.path.exists():
        cache = None  # nothing to look up, and a lookup would create the file
    examples: dict[str, Any] = {}
    responses: list[Any] = []
    labels: list[Any] = []  # a few-shot judge's worked examples are graded by them
    chosen = datasets_from_keys(dataset_keys, data_dir)
    from realitycheck.store import is_uri

    if run_dir is not None and (is_uri(run_dir) or Path(run_dir, "manifest.json").exists()):
        from realitycheck.records import Example, Label, Response
        from realitycheck.store import RunStore

        store = RunStore(run_dir)
        names = {ds.run_name for ds in chosen}
        examples = {e.example_id: e for e in store.read(Example) if e.dataset in names}
        responses = [r for r in store.read(Response) if r.example_id in examples]
        labels = store.read(Label) if responses else []
    if not responses:
        for ds in chosen:
            bundle = ds.load()
            examples.update((e.example_id, e) for e in bundle.examples)
            responses.extend(bundle.responses)
            labels.extend(bundle.labels)
    click.echo(f"dry run: {len(responses)} responses; nothing is called or written.")
    for component in components:
        if not isinstance(component, Judge):
            click.echo(f"\n{component.key}: computed locally, no model calls.")
            continue
        plan = plan_calls(component, responses, examples, cache=cache, show=show, labels=labels)
        click.echo(f"\n{plan.labeler}")
        for i, prompt in enumerate(plan.prompts, 1):
            click.echo(
                f"--- prompt {i} of {len(plan.prompts)} shown (~{estimate_tokens(prompt)} tokens)"
            )
            click.echo(prompt.rstrip("\n"))
        click.echo("---")
        click.echo(
            f"responses judged: {plan.responses} ({plan.unjudgeable} cannot be judged: "
            "no reference or empty text)"
        )
        click.echo(
            f"calls: {plan.requests} ({plan.cached} free: cached or repeated), "
            f"{plan.requests - plan.cached} to pay for"
        )
        if plan.search_requests:
            click.echo(
                f"of which the prompt search on the calibration split: {plan.search_requests} "
                "calls (its responses are not judged; the test responses are planned at the "
                "longest candidate prompt)"
            )
        click.echo(
            f"tokens to pay for: ~{plan.prompt_tokens:,} prompt (estimated at 4 characters "
            f"a token), at most {plan.completion_tokens:,} completion (max_tokens per call)"
        )
        if plan.cost is None:
            click.echo("cost: no price (give the backend price_per_1k=IN+OUT, per 1,000 tokens)")
        else:
            p_in, p_out = plan.price_per_1k or (0.0, 0.0)
            click.echo(f"cost: at most {plan.cost:,.4f} at {p_in:g} / {p_out:g} per 1,000 tokens")
