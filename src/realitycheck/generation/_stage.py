"""The generate stage: prompts → cached calls → one Response per example and prompt variant.

Each (example, variant) answered by a backend under a plan gets the response id
``<example_id>/<variant>/<generation>``, where ``generation`` is a short hash of
the backend key and the plan key. Responses are appended to the run one batch
at a time, so a stopped run keeps every finished batch, and a rerun skips the
responses already stored and pays for no call the cache holds. A failed call
never becomes a response: it is a row of ``generation_errors.parquet`` (see
:mod:`realitycheck.generation._errors`) and is retried by the next run.

What a response stores (the shared conventions of the backends):

* ``text``: the best answer; ``samples``: the texts of the stochastic samples;
* ``features``: ``{"best": SEQ, "samples": [SEQ, ...]}`` where ``SEQ`` holds the
  keys the backend supplied among ``tokens``, ``token_logprobs``,
  ``token_entropies``, ``top_logprobs`` and ``hidden`` (feature name → floats);
* ``model``, ``decoding`` (of the best answer) and ``prompt_variant``;
* ``meta``: the backend and plan keys, the generation hash, the ids of few-shot
  demonstrations, the ids of the retrieved passages (``passages``, best first)
  and the retriever's key (``retriever``) when the plan has a retriever, the
  finish reason of the best answer, and ``unsupported`` when the server did not
  give back a feature the plan asked for (feature → cause, see
  :mod:`realitycheck.generation._unsupported`). Such responses are asked for
  again by the next run of the same generation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any

from realitycheck.backends import Backend, CallCache, Generation, Usage, usage_of
from realitycheck.datasets import Dataset
from realitycheck.errors import InvalidInputError
from realitycheck.executors import Executor, LocalExecutor
from realitycheck.generation._errors import update_generation_errors
from realitycheck.generation._manifest import stage_entry
from realitycheck.generation._plans import PlanRequests, SamplingPlan, usable_capabilities
from realitycheck.generation._prompts import (
    RETRIEVAL_TASKS,
    Prompt,
    build_prompt,
    choose_demos,
    parse_variant,
)
from realitycheck.generation._retrieval import retrieval_meta, retrieve
from realitycheck.generation._unsupported import UNSUPPORTED, lacking_responses, unsupported_meta
from realitycheck.params import InstanceOf, Interval, check_arg
from realitycheck.progress import NullProgress, Progress, ProgressTask
from realitycheck.records import Example, Response
from realitycheck.retrievers import Passage
from realitycheck.store import RunStore

__all__ = ["DEFAULT_BATCH_SIZE", "GenerationReport", "generate", "generation_key", "load_inputs"]

DEFAULT_BATCH_SIZE = 16
_SEQUENCE_FIELDS = ("tokens", "token_logprobs", "token_entropies", "top_logprobs", "hidden")
_MAX_ERRORS_SHOWN = 5


@dataclass(kw_only=True)
class GenerationReport:
    """What one generate call did.

    Attributes:
        generation: The hash that identifies the (backend, plan) pair in response ids.
        computed: Responses written now.
        reused: Responses already stored (skipped).
        failed: (example, variant) pairs whose calls failed; listed in ``generation_errors``.
        lacking: Responses written without a feature the plan asked for (their
            ``meta["unsupported"]`` names it); the next run asks for them again.
        usage: Calls, cache hits, tokens and cost of this call (see ``usage_of``).
        errors: The first few error messages.
    """

    generation: str
    computed: int = 0
    reused: int = 0
    failed: int = 0
    lacking: int = 0
    usage: Usage = field(default_factory=Usage)
    errors: list[str] = field(default_factory=list)


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
    """
    with (progress or NullProgress()).task(f"loading {dataset.key}", None) as task:
        bundle = dataset.load(progress=task.advance)
    loaded = store.read_manifest().get("datasets", {}).get(dataset.key)
    if loaded is not None and loaded.get("spec") == dataset.spec:
        return list(bundle.examples)  # already recorded (as input, or ingested whole)
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
    return list(bundle.examples)


def _sequence(generation: Generation, i: int) -> dict[str, Any]:
    """Return the features of sequence ``i`` of a generation, only those supplied."""
    out: dict[str, Any] = {}
    for name in _SEQUENCE_FIELDS:
        values = getattr(generation, name)
        if i < len(values) and values[i]:
            item = values[i]
            if name == "hidden":
                out[name] = {k: list(v) for k, v in item.items()}
            elif name == "top_logprobs":
                out[name] = [dict(step) for step in item]
            else:
                out[name] = list(item)
    return out


@dataclass(frozen=True, kw_only=True)
class _Job:
    example: Example
    variant: str
    response_id: str
    prompt: Prompt
    requests: PlanRequests


def _assemble(
    job: _Job, answers: Sequence[Generation], *, backend: Backend, plan: SamplingPlan, key: str
) -> Response | str:
    """Return the response of one job, or the error text when a call failed."""
    best, samples = answers[0], answers[1:]
    problems = [f"best answer: {best.error}"] if best.error else []
    problems += [f"samples[{i}]: {g.error}" for i, g in enumerate(samples) if g.error]
    if not problems and not best.texts:
        problems.append("best answer: the backend returned no sequence")
    sample_seqs: list[tuple[Generation, int]] = [
        (g, i) for g in samples if not g.error for i in range(len(g.texts))
    ]
    if not problems and len(sample_seqs) != plan.n_samples:
        problems.append(f"samples: got {len(sample_seqs)} sequences for {plan.n_samples} asked")
    if problems:
        return "; ".join(problems)[:1000]
    features: dict[str, Any] = {}
    best_seq = _sequence(best, 0)
    if best_seq:
        features["best"] = best_seq
    seqs = [_sequence(g, i) for g, i in sample_seqs]
    if any(seqs):
        features["samples"] = seqs
    meta: dict[str, Any] = {"backend": backend.key, "plan": plan.key, "generation": key}
    if job.prompt.demos:
        meta["demos"] = list(job.prompt.demos)
    meta.update(retrieval_meta(plan.retriever, job.prompt.passages))
    if best.finish_reasons:
        meta["finish_reason"] = best.finish_reasons[0]
    lacking = unsupported_meta(backend, answers)
    if lacking:
        meta[UNSUPPORTED] = lacking
    return Response(
        response_id=job.response_id,
        example_id=job.example.example_id,
        model=str(getattr(backend, "model", "") or backend.key),
        text=best.texts[0],
        prompt_variant=job.variant,
        decoding=plan.decoding,
        samples=tuple(g.texts[i] for g, i in sample_seqs),
        features=features,
        meta=meta,
    )


class _Forward:
    """Progress that sends every inner task's advances to one outer task."""

    def __init__(self, task: ProgressTask) -> None:
        self._task = task

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        yield self._task


def _jobs(
    examples: Sequence[Example],
    pool: Sequence[Example],
    plan: SamplingPlan,
    backend: Backend,
    key: str,
    done: set[str],
) -> tuple[list[_Job], int]:
    by_dataset: dict[str, list[Example]] = {}
    for example in pool:
        by_dataset.setdefault(example.dataset, []).append(example)
    jobs, reused = [], 0
    capabilities = usable_capabilities(backend)
    todo = [
        e for e in examples if any(f"{e.example_id}/{v}/{key}" not in done for v in plan.variants)
    ]
    retrieved = _retrieve(todo, plan)
    for example in examples:
        for variant in plan.variants:
            response_id = f"{example.example_id}/{variant}/{key}"
            if response_id in done:
                reused += 1
                continue
            demos: list[Example] = []
            if parse_variant(variant)[0] == "few_shot" and example.task == "qa":
                demos = choose_demos(
                    example,
                    by_dataset.get(example.dataset, []),
                    plan.few_shot_k,
                    seed=plan.seed if plan.seed is not None else 0,
                )
            passages = retrieved.get(example.example_id, ())
            prompt = build_prompt(example, variant, demos=demos, passages=passages)
            requests = plan.requests(
                prompt, task=example.task, capabilities=capabilities, tag=response_id
            )
            jobs.append(
                _Job(
                    example=example,
                    variant=variant,
                    response_id=response_id,
                    prompt=prompt,
                    requests=requests,
                )
            )
    return jobs, reused


def _retrieve(examples: Sequence[Example], plan: SamplingPlan) -> dict[str, tuple[Passage, ...]]:
    """Return the passages the plan's retriever finds for each example's question (none without).

    Every task is checked before the corpus is read, and the corpus before any call.
    """
    if plan.retriever is None or not examples:
        return {}
    for example in examples:
        if example.task not in RETRIEVAL_TASKS:
            raise InvalidInputError(
                f"The sampling plan retrieves passages ({plan.retriever.key}), which only "
                f"{' and '.join(RETRIEVAL_TASKS)} prompts can take; example "
                f"{example.example_id!r} has task {example.task!r}."
            )
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
    done = {rid for (rid,) in store.keys("responses", ["response_id"])}
    done -= lacking_responses(store, key)
    jobs, reused = _jobs(examples, examples if demos is None else demos, plan, backend, key, done)
    report = GenerationReport(generation=key, reused=reused)
    _record(store, backend, plan, key, examples, report, start=True)
    stored = {eid for (eid,) in store.keys("examples", ["example_id"])}
    store.append([e for e in examples if e.example_id not in stored])
    total = sum(len(job.requests.all()) for job in jobs)
    from realitycheck.generation._parts import (  # (uses helpers here)
        GenerationContext,
        generate_part,
    )

    batches = [jobs[start : start + batch_size] for start in range(0, len(jobs), batch_size)]
    with (progress or NullProgress()).task(f"generate {backend.key}", total) as task:
        context = GenerationContext(
            store, backend, plan, key=key, cache=cache, progress=_Forward(task)
        )
        for tally in (executor or LocalExecutor()).map(generate_part, context, batches):
            update_generation_errors(store, failed=tally.failed, succeeded=tally.succeeded)
            report.computed += tally.computed
            report.failed += len(tally.failed)
            report.lacking += tally.lacking
            report.errors.extend(tally.errors[: _MAX_ERRORS_SHOWN - len(report.errors)])
            report.usage = _add(report.usage, tally.usage)
            if not tally.advanced:
                task.advance(tally.requests)
    store.compact("responses")
    store.compact("examples")
    _record(store, backend, plan, key, examples, report, start=False)
    return report


def _error_row(
    job: _Job, backend: Backend, plan: SamplingPlan, key: str, error: str
) -> dict[str, Any]:
    return {
        "response_id": job.response_id,
        "example_id": job.example.example_id,
        "prompt_variant": job.variant,
        "backend": backend.key,
        "plan": plan.key,
        "generation": key,
        "error": error,
    }


def _usage(generations: Sequence[Generation], backend: Backend) -> Usage:
    price = getattr(backend, "price_per_1k", None)
    if isinstance(price, tuple | list) and len(price) == 2:
        return usage_of(generations, price_per_1k=(float(price[0]), float(price[1])))
    return usage_of(generations)


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
        entry["usage"] = _add_usage(entry.get("usage", {}), report.usage.as_dict())
        entry["first_errors"] = report.errors
    generations[key] = entry
    store.update_manifest(config={"generation": generations})


def _add(a: Usage, b: Usage) -> Usage:
    """Return the field-wise sum of two usages."""
    return Usage(**{f.name: getattr(a, f.name) + getattr(b, f.name) for f in fields(Usage)})


def _add_usage(before: Mapping[str, float], now: Mapping[str, float]) -> dict[str, float]:
    return {k: before.get(k, 0) + v for k, v in now.items()}
