"""What the generate stage makes of a job's answers: a response, or the row of its failure.

Shared by the stage's driver (:mod:`realitycheck.pipeline._generate`) and its
batches, wherever the executor computes them (:mod:`realitycheck.pipeline._generate_parts`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from realitycheck.backends import Backend, Generation, Usage, usage_of
from realitycheck.generation import PlanRequests, Prompt, SamplingPlan
from realitycheck.pipeline._retrieval import retrieval_meta
from realitycheck.pipeline._unsupported import UNSUPPORTED, unsupported_meta
from realitycheck.progress import ProgressTask
from realitycheck.records import Example, Response

__all__ = ["Forward", "Job", "assemble_response", "error_row", "paid_usage"]

_SEQUENCE_FIELDS = ("tokens", "token_logprobs", "token_entropies", "top_logprobs", "hidden")


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
class Job:
    """One (example, prompt variant) to answer.

    Attributes:
        example: The example, as stored.
        variant: The prompt variant's key (the response's ``prompt_variant``).
        response_id: The id of the response.
        prompt: The prompt sent.
        requests: The requests answering it.
        rewritten: The question as a rewriting variant (a paraphrase) put it in
            the prompt, stored as ``meta["paraphrase"]``; ``None`` for a style.
    """

    example: Example
    variant: str
    response_id: str
    prompt: Prompt
    requests: PlanRequests
    rewritten: str | None = None


def assemble_response(
    job: Job, answers: Sequence[Generation], *, backend: Backend, plan: SamplingPlan, key: str
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
    if job.rewritten is not None:
        meta["paraphrase"] = job.rewritten
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


class Forward:
    """Progress that sends every inner task's advances to one outer task."""

    def __init__(self, task: ProgressTask) -> None:
        self._task = task

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        yield self._task


def error_row(
    job: Job, backend: Backend, plan: SamplingPlan, key: str, error: str
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


def paid_usage(generations: Sequence[Generation], backend: Backend) -> Usage:
    price = getattr(backend, "price_per_1k", None)
    if isinstance(price, tuple | list) and len(price) == 2:
        return usage_of(generations, price_per_1k=(float(price[0]), float(price[1])))
    return usage_of(generations)
