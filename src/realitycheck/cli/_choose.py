"""The ``choose`` verb: answer multiple-choice datasets by likelihood, under prompt variants."""

from __future__ import annotations

from typing import Any

import click

from realitycheck.cli._common import (
    backend_from,
    backend_options,
    cache_from,
    cache_options,
    cli,
    data_dir_option,
    dataset_option,
    datasets_from_keys,
    lock_run,
    progress_for,
    run_option,
    split_keys,
)
from realitycheck.cli._echo import echo_choice
from realitycheck.cli._fields import field_option
from realitycheck.executors import DEFAULT_CHOICE_BATCH_SIZE
from realitycheck.generation import ChoicePlan
from realitycheck.runner import DatasetTable

__all__: list[str] = []


@cli.command("choose")
@dataset_option(
    "MCQ dataset key, e.g. factor, 'factor[part=expert]' or 'truthfulqa_mc[variant=mc2]'."
)
@data_dir_option("Folder holding the data.")
@backend_options(
    "A backend that scores continuations: 'hf[model=PATH]', 'vllm[model=PATH]' or "
    "'openai[model=NAME,base_url=URL,mode=completions]'."
)
@field_option(
    ChoicePlan,
    "normalisation",
    show_default=True,
    help="Compare options by log-likelihood per token, per character, or the plain sum.",
)
@field_option(
    ChoicePlan,
    "template",
    show_default=True,
    help="plain: prompt + option; qa: 'Q: ... A:' + option; letters: options listed, "
    "letters scored.",
)
@field_option(
    ChoicePlan,
    "shots",
    ranged=True,
    show_default=True,
    help="Fixed demonstrations: the dataset's first N other questions.",
)
@field_option(
    ChoicePlan,
    "top_logprobs",
    ranged=True,
    show_default=True,
    help="Alternatives per token of the chosen option to keep in its features (backends that "
    "read fixed answers: hf).",
)
@click.option(
    "--variant",
    "variant_keys",
    multiple=True,
    help="Prompt variant key (repeatable; default 'default'), e.g. 'shuffle_options[seed=1]', "
    "'k_shot[k=3,seed=2]', 'instruction[file=W.txt,line=2]', "
    "'paraphrase[backend=openai[model=M]]'.",
)
@click.option(
    "--retriever",
    "retriever_key",
    help="Passages shown before each question, the question as the query, e.g. "
    "'bm25[corpus=passages.jsonl,k=3]'.",
)
@click.option(
    "--without-retrieval",
    is_flag=True,
    help="With --retriever: also answer every question without retrieval (both kept).",
)
@field_option(DatasetTable, "limit", ranged=True, help="Answer the first N questions only.")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=DEFAULT_CHOICE_BATCH_SIZE,
    show_default=True,
)
@cache_options
@run_option("The run folder (created if missing; resumed if present).")
@click.pass_context
def choose_cmd(
    ctx: click.Context,
    dataset_keys: tuple[str, ...],
    data_dir: str | None,
    backend_key: str,
    model: str | None,
    normalisation: str,
    template: str,
    shots: int,
    top_logprobs: int,
    variant_keys: tuple[str, ...],
    retriever_key: str | None,
    without_retrieval: bool,
    limit: int | None,
    batch_size: int,
    cache_dir: str | None,
    no_cache: bool,
    run_dir: str,
) -> None:
    """Answer MCQ questions by the likelihood of each option: one response per variant.

    Each response's text is the chosen option; its meta holds every option's
    summed, per-token and per-character log-likelihood, and a 'gold' label
    says whether the choice is correct. Its features hold the chosen option's
    token log-probs (and, on hf, its tokens and token entropies), so
    'detect -D perplexity' scores the answers. With --retriever, the retrieved
    passages come before each question and their ids are stored. Run the
    same command again to resume; scored options come from the call cache.
    """
    from realitycheck.backends import require
    from realitycheck.generation import variants
    from realitycheck.runner import ChoiceSettings, choose_datasets
    from realitycheck.store import RunStore

    if without_retrieval and retriever_key is None:
        raise click.UsageError("--without-retrieval compares with a --retriever; name one.")
    extra: dict[str, Any] = {} if retriever_key is None else {"retriever": retriever_key}
    plan = ChoicePlan(
        normalisation=normalisation,
        template=template,
        shots=shots,
        top_logprobs=top_logprobs,
        **extra,
    )
    keys = split_keys(variant_keys) if variant_keys else ["default"]
    chosen_variants = tuple(variants.create_from_key(k) for k in keys)
    backend = backend_from(backend_key, model)
    require({"loglik"}, backend, who="choose")
    chosen = datasets_from_keys(dataset_keys, data_dir)
    reports = choose_datasets(
        RunStore(lock_run(ctx, run_dir)),
        [(ds, limit) for ds in chosen],
        backend,
        ChoiceSettings(plan=plan, variants=chosen_variants, without_retrieval=without_retrieval),
        cache=cache_from(no_cache, cache_dir),
        batch_size=batch_size,
        progress=progress_for(ctx),
    )
    for name, report in reports.items():
        echo_choice(name, report)
