"""The generate stage: prompts → cached calls → one Response per example and prompt variant.

Each (example, variant) answered by a backend under a plan gets the response id
``<example_id>/<variant>/<generation>``, where ``generation`` is a short hash of
the backend key and the plan key. Responses are appended to the run one batch
at a time, so a stopped run keeps every finished batch, and a rerun skips the
responses already stored and pays for no call the cache holds. A failed call
never becomes a response: it is a row of ``generation_errors.parquet`` (see
:mod:`realitycheck.pipeline._generation_errors`) and is retried by the next run.

What a response stores (the shared conventions of the backends):

* ``text``: the best answer; ``samples``: the texts of the stochastic samples;
* ``features``: ``{"best": SEQ, "samples": [SEQ, ...]}`` where ``SEQ`` holds the
  keys the backend supplied among ``tokens``, ``token_logprobs``,
  ``token_entropies``, ``top_logprobs`` and ``hidden`` (feature name → floats);
* ``model``, ``decoding`` (of the best answer) and ``prompt_variant``;
* ``meta``: the backend and plan keys, the generation hash, the ids of few-shot
  demonstrations, the rewritten question (``paraphrase``) of a variant that
  rewrites questions (see :mod:`realitycheck.generation._rewrites`, whose
  response ids name the variant by a short hash of its key), the ids of the
  retrieved passages (``passages``, best first)
  and the retriever's key (``retriever``) when the plan has a retriever, the
  finish reason of the best answer, and ``unsupported`` when the server did not
  give back a feature the plan asked for (feature → cause, see
  :mod:`realitycheck.pipeline._unsupported`). Such responses are asked for
  again by the next run of the same generation.

A response asked for again is replaced by its new version (same id, new text,
samples and features), so the labels and scores stored for the old version no
longer describe it: they are dropped before the first call, and the next label
and detect stages compute them for the new version. Dropping them first keeps
a killed run safe (an old response without its records is recomputed, never a
new one with the old records); a response whose new call fails keeps its old
version and has its records recomputed, LLM judges' calls from the call cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from realitycheck.backends import Backend, CallCache, Usage
from realitycheck.datasets import Bundle, Dataset
from realitycheck.errors import InvalidInputError
from realitycheck.executors import DEFAULT_BATCH_SIZE, Executor, LocalExecutor
from realitycheck.generation import (
    BASE_STYLE,
    FAITHFUL_REPLIES,
    FEW_SHOT_TASKS,
    RETRIEVAL_TASKS,
    PromptVariant,
    SamplingPlan,
    build_prompt,
    check_rewritable,
    choose_demos,
    parse_variant,
    rewrite_examples,
    rewriter,
    usable_capabilities,
    variant_part,
)
from realitycheck.params import InstanceOf, Interval, check_arg
from realitycheck.pipeline._generate_parts import GenerationContext, generate_part
from realitycheck.pipeline._generate_responses import Forward, Job, paid_usage
from realitycheck.pipeline._generation_errors import update_generation_errors
from realitycheck.pipeline._retrieval import retrieve
from realitycheck.pipeline._stage_entry import stage_entry
from realitycheck.pipeline._unsupported import lacking_responses
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import Example
from realitycheck.retrievers import Passage
from realitycheck.store import RunStore, from_texts

__all__ = ["GenerationReport", "generate", "generation_key", "load_inputs"]

_MAX_ERRORS_SHOWN = 5


@dataclass(kw_only=True)
class GenerationReport:
    """What one generate call did.

    Attributes:
        generation: The hash that identifies the (backend, plan) pair in response ids.
        computed: Responses written now.
        reused: Responses already stored (skipped).
        failed: (example, variant) pairs whose calls failed; listed in ``generation_errors``.
        permanent: Of ``failed``, those with a call that failed for good (a refusal such
            as HTTP 400/422, or a parameter the server refused before): a rerun
            repeats the failure unless its cause is fixed, so "run again to retry" does
            not apply to them.
        lacking: Responses written without a feature the plan asked for (their
            ``meta["unsupported"]`` names it); the next run asks for them again.
        regenerated: Stored responses asked for again (they lacked a feature).
        dropped_labels: Stored labels dropped because their response is regenerated
            (computed from the old version; the next label stage recomputes them).
        dropped_scores: Stored scores dropped likewise (recomputed by the next detect stage).
        usage: Calls, cache hits, tokens and cost of this call (see ``usage_of``), the
            calls of a variant that rewrites questions (a paraphraser) included.
        errors: The first few error messages.
        skipped: Per variant key that rewrites questions, the examples it left
            unanswered because they have no question (``{"questions": n, "reason": ...}``).
    """

    generation: str
    computed: int = 0
    reused: int = 0
    failed: int = 0
    permanent: int = 0
    lacking: int = 0
    regenerated: int = 0
    dropped_labels: int = 0
    dropped_scores: int = 0
    usage: Usage = field(default_factory=Usage)
    errors: list[str] = field(default_factory=list)
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)


def generation_key(backend: Backend, plan: SamplingPlan) -> str:
    """Return the 12-hex-digit hash of the backend and plan keys (part of response ids)."""
    text = json.dumps(
        {"backend": backend.key, "version": backend.version, "plan": plan.key}, sort_keys=True
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def load_inputs(
    store: RunStore, dataset: Dataset, *, progress: Progress | None = None
) -> list[Example]:
    """Load a dataset's examples as generation input (its own responses are not stored).

    The run's manifest records the dataset as loaded (``generation_input: true``),
    so later stages on this run label and score the generated responses only.
    Pass a slice of the result to :func:`generate` and the whole of it as
    ``demos``, so few-shot demonstrations do not depend on the slice.

    A dialogue example without references gets, as ``meta["faithful_replies"]``,
    the texts of the dataset's own replies to it that its ``human`` labels judge
    not hallucinated (FaithDial's BEGIN entailment or uncooperative turns,
    BEGIN's fully attributable ones), so another example's few-shot prompt
    can show one as a demonstration; the example's own replies never appear in
    its own prompt.
    """
    with (progress or NullProgress()).task(f"loading {dataset.key}", None) as task:
        bundle = dataset.load(progress=task.advance)
    examples = _with_faithful_replies(bundle)
    loaded = store.read_manifest().get("datasets", {}).get(dataset.key)
    if loaded is not None and loaded.get("spec") == dataset.spec:
        return examples  # already recorded (as input, or ingested whole)
    store.update_manifest(
        datasets={
            dataset.key: {
                "spec": dataset.spec,
                "examples": len(bundle.examples),
                "responses": 0,
                "labels": 0,
                "scores": 0,
                "generation_input": True,
                "notes": bundle.notes,
            }
        }
    )
    return examples


def _with_faithful_replies(bundle: Bundle) -> list[Example]:
    """The bundle's examples, dialogues without references given their faithful replies."""
    dialogues = {e.example_id for e in bundle.examples if e.task == "dialogue" and not e.references}
    if not dialogues:
        return list(bundle.examples)
    faithful = {
        label.response_id
        for label in bundle.labels
        if label.labeler == "human" and label.hallucinated is False
    }
    replies: dict[str, list[str]] = {}
    for response in bundle.responses:
        if response.example_id in dialogues and response.response_id in faithful:
            texts = replies.setdefault(response.example_id, [])
            if response.text.strip() and response.text not in texts:
                texts.append(response.text)
    return [
        dataclasses.replace(e, meta={**e.meta, FAITHFUL_REPLIES: replies[e.example_id]})
        if e.example_id in replies
        else e
        for e in bundle.examples
    ]


@dataclass
class _Plan:
    """The jobs of one generate call, and what was settled before any answer was asked for."""

    jobs: list[Job] = field(default_factory=list)
    reused: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    permanent: int = 0
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


def _variants(plan: SamplingPlan) -> list[tuple[str, PromptVariant | None]]:
    """Each plan variant as (its key in responses, its rewriting variant or None for a style).

    Raises:
        InvalidInputError: Two of the plan's variants are one variant written twice.
    """
    out: dict[str, tuple[str, PromptVariant | None]] = {}
    for given in plan.variants:
        rewriting = rewriter(given)
        key = given if rewriting is None else rewriting.key
        if key in out:
            raise InvalidInputError(
                f"The prompt variants {out[key][0]!r} and {given!r} of the sampling plan are "
                f"one variant ({key!r}); give it once."
            )
        out[key] = (given, rewriting)
    return [(key, rewriting) for key, (_, rewriting) in out.items()]


def _jobs(
    examples: Sequence[Example],
    pool: Sequence[Example],
    plan: SamplingPlan,
    backend: Backend,
    key: str,
    done: set[str],
    cache: CallCache | None,
) -> _Plan:
    by_dataset: dict[str, list[Example]] = {}
    for example in pool:
        by_dataset.setdefault(example.dataset, []).append(example)
    out = _Plan()
    capabilities = usable_capabilities(backend)
    chosen = _variants(plan)
    ids = {
        v: {e.example_id: f"{e.example_id}/{variant_part(v)}/{key}" for e in examples}
        for v, _ in chosen
    }
    todo = {v: [e for e in examples if ids[v][e.example_id] not in done] for v, _ in chosen}
    out.reused = sum(len(examples) - len(todo[v]) for v, _ in chosen)
    styled = {e.example_id: e for v, r in chosen if r is None for e in todo[v]}
    for v, rewriting in chosen:
        if rewriting is not None:
            check_rewritable(rewriting, todo[v])
    _check_retrieval([e for v, _ in chosen for e in todo[v]], plan)
    retrieved = _retrieve(list(styled.values()), plan)
    rewritten: dict[str, dict[str, Example]] = {}
    found: dict[str, dict[str, tuple[Passage, ...]]] = {}
    for v, rewriting in chosen:
        if rewriting is None or not todo[v]:
            continue
        result = rewrite_examples(rewriting, todo[v], cache=cache)
        paraphraser = getattr(rewriting, "backend", None)  # priced by the backend it calls
        if isinstance(paraphraser, Backend):
            out.usage = _add(out.usage, paid_usage(result.generations, paraphraser))
        rewritten[v] = result.examples
        found[v] = _retrieve(list(result.examples.values()), plan)  # the new question is the query
        if result.skipped:
            out.skipped[v] = {
                "questions": len(result.skipped),
                "reason": "no question to rewrite (a dialogue the model opens)",
            }
        for example_id, why in result.failed.items():
            response_id = ids[v][example_id]
            out.failed.append(
                {
                    "response_id": response_id,
                    "example_id": example_id,
                    "prompt_variant": v,
                    "backend": backend.key,
                    "plan": plan.key,
                    "generation": key,
                    "error": why.reason,
                }
            )
            out.errors.append(f"{response_id}: {why.reason}")
            out.permanent += not why.retryable
    for example in examples:
        for v, rewriting in chosen:
            response_id = ids[v][example.example_id]
            if response_id in done:
                continue
            if rewriting is None:
                asked, style = example, v
                passages = retrieved.get(example.example_id, ())
            elif example.example_id in rewritten.get(v, {}):
                asked, style = rewritten[v][example.example_id], BASE_STYLE
                passages = found[v].get(example.example_id, ())
            else:
                continue  # skipped or failed: counted above
            demos: list[Example] = []
            if parse_variant(style)[0] == "few_shot" and example.task in FEW_SHOT_TASKS:
                demos = choose_demos(
                    example,
                    by_dataset.get(example.dataset, []),
                    plan.few_shot_k,
                    seed=plan.seed if plan.seed is not None else 0,
                )
            prompt = build_prompt(asked, style, demos=demos, passages=passages)
            requests = plan.requests(
                prompt, task=example.task, capabilities=capabilities, tag=response_id
            )
            out.jobs.append(
                Job(
                    example=example,
                    variant=v,
                    response_id=response_id,
                    prompt=prompt,
                    requests=requests,
                    rewritten=asked.question if rewriting is not None else None,
                )
            )
    return out


def _check_retrieval(examples: Sequence[Example], plan: SamplingPlan) -> None:
    """Fail when the plan retrieves passages for a task whose prompts cannot take them."""
    if plan.retriever is None:
        return
    for example in examples:
        if example.task not in RETRIEVAL_TASKS:
            raise InvalidInputError(
                f"The sampling plan retrieves passages ({plan.retriever.key}), which only "
                f"{' and '.join(RETRIEVAL_TASKS)} prompts can take; example "
                f"{example.example_id!r} has task {example.task!r}."
            )


def _retrieve(examples: Sequence[Example], plan: SamplingPlan) -> dict[str, tuple[Passage, ...]]:
    """Return the passages the plan's retriever finds for each example's question (none without).

    Every task is checked (:func:`_check_retrieval`) before the corpus is read,
    and the corpus before any call.
    """
    if plan.retriever is None or not examples:
        return {}
    return retrieve(plan.retriever, examples)


def generate(
    store: RunStore,
    examples: Sequence[Example],
    backend: Backend,
    plan: SamplingPlan,
    *,
    cache: CallCache | None = None,
    demos: Sequence[Example] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> GenerationReport:
    """Answer every example with every prompt variant of ``plan``, resuming a stopped run.

    Everything is checked before the first call: the backend's capabilities
    against the plan, every prompt (task, inputs, few-shot demonstrations).

    Args:
        store: The run; examples not stored yet are added.
        examples: What to answer.
        backend: The model.
        plan: How to sample.
        cache: The shared call cache (``None``: no cache, only in-batch deduplication).
        demos: The pool few-shot demonstrations are drawn from (default: ``examples``);
            pass the whole dataset when ``examples`` is a part of it.
        batch_size: (example, variant) pairs per stored batch.
        executor: Computes the batches (default: this process, in order); a
            :class:`~realitycheck.executors.RayExecutor` answers them on a cluster's
            workers, each writing its part into the run (the backend must be
            configuration only: each worker loads its own model).
        progress: Progress seam (one step per request).

    Returns:
        Counts of responses written, reused and failed, and the usage of the calls.
    """
    check_arg(batch_size, Interval(int, 1), name="batch_size", owner="generate")
    check_arg(backend, InstanceOf(Backend), name="backend", owner="generate")
    check_arg(plan, InstanceOf(SamplingPlan), name="plan", owner="generate")
    seen: set[str] = set()
    for example in examples:
        if example.example_id in seen:
            raise InvalidInputError(
                f"The example id {example.example_id!r} occurs twice in the input of generate."
            )
        seen.add(example.example_id)
    plan.check(backend)
    key = generation_key(backend, plan)
    # A response that lacks an asked feature is asked for again, like a failed one.
    stored_ids = {rid for (rid,) in store.keys("responses", ["response_id"])}
    lacking = lacking_responses(store, key)
    planned = _jobs(
        examples,
        examples if demos is None else demos,
        plan,
        backend,
        key,
        stored_ids - lacking,
        cache,
    )
    jobs = planned.jobs
    report = GenerationReport(generation=key, reused=planned.reused, skipped=planned.skipped)
    report.failed, report.permanent = len(planned.failed), planned.permanent
    report.errors = planned.errors[:_MAX_ERRORS_SHOWN]
    report.usage = planned.usage
    if planned.failed:
        update_generation_errors(store, failed=planned.failed, succeeded=())
    _drop_records_of(store, [job.response_id for job in jobs if job.response_id in lacking], report)
    _record(store, backend, plan, key, examples, report, start=True)
    stored = {eid for (eid,) in store.keys("examples", ["example_id"])}
    store.append([e for e in examples if e.example_id not in stored])
    total = sum(len(job.requests.all()) for job in jobs)
    batches = [jobs[start : start + batch_size] for start in range(0, len(jobs), batch_size)]
    with (progress or NullProgress()).task(f"generate {backend.key}", total) as task:
        context = GenerationContext(
            store, backend, plan, key=key, cache=cache, progress=Forward(task)
        )
        for tally in (executor or LocalExecutor()).map(generate_part, context, batches):
            update_generation_errors(store, failed=tally.failed, succeeded=tally.succeeded)
            report.computed += tally.computed
            report.failed += len(tally.failed)
            report.lacking += tally.lacking
            report.permanent += tally.permanent
            report.errors.extend(tally.errors[: _MAX_ERRORS_SHOWN - len(report.errors)])
            report.usage = _add(report.usage, tally.usage)
            if not tally.advanced:
                task.advance(tally.requests)
    store.compact("responses")
    store.compact("examples")
    _record(store, backend, plan, key, examples, report, start=False)
    return report


def _drop_records_of(store: RunStore, replaced: Sequence[str], report: GenerationReport) -> None:
    """Drop the stored labels and scores of responses about to be replaced by a new version."""
    report.regenerated = len(replaced)
    if replaced:
        ids = from_texts(replaced)
        report.dropped_labels = store.drop_matching("labels", "response_id", ids)
        report.dropped_scores = store.drop_matching("scores", "response_id", ids)


def _record(
    store: RunStore,
    backend: Backend,
    plan: SamplingPlan,
    key: str,
    examples: Sequence[Example],
    report: GenerationReport,
    *,
    start: bool,
) -> None:
    """Write what this generation is, and (at the end) what it did and cost, to the manifest."""
    generations, entry = stage_entry(
        store, "generation", key, backend, plan, variants=plan.variants, examples=examples
    )
    if not start:
        entry["responses"] = int(entry.get("responses", 0)) + report.computed
        entry["failed"] = report.failed
        entry["lacking"] = report.lacking
        entry["permanent"] = report.permanent
        entry["regenerated"] = report.regenerated
        entry["dropped"] = {"labels": report.dropped_labels, "scores": report.dropped_scores}
        entry["usage"] = _add_usage(entry.get("usage", {}), report.usage.as_dict())
        entry["first_errors"] = report.errors
        if report.skipped:
            entry["skipped"] = report.skipped
    generations[key] = entry
    store.update_manifest(config={"generation": generations})


def _add(a: Usage, b: Usage) -> Usage:
    """Return the field-wise sum of two usages."""
    return Usage(**{f.name: getattr(a, f.name) + getattr(b, f.name) for f in fields(Usage)})


def _add_usage(before: Mapping[str, float], now: Mapping[str, float]) -> dict[str, float]:
    return {k: before.get(k, 0) + v for k, v in now.items()}
