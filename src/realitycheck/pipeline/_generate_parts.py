"""One batch of the generate stage, computed wherever the executor runs it.

:func:`generate_part` answers one batch of (example, variant) jobs through the
call cache, writes their responses as one atomic part of the run and returns
what the driver records itself (:class:`GenerationTally`): the failed jobs'
rows for ``generation_errors``, the ids that succeeded, the usage. The driver
alone rewrites ``generation_errors.parquet``, so workers never race on it.

:class:`GenerationContext` pickles (for a Ray worker) as the run's path, the
backend and plan (configuration only; a worker loads its own model) and the
cache's path, without the progress; a worker reopens the run and the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from realitycheck.backends import Backend, CallCache, Usage, cached_generate
from realitycheck.generation import SamplingPlan
from realitycheck.pipeline._generate_responses import (
    Forward,
    assemble_response,
    error_row,
    paid_usage,
)
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import Response
from realitycheck.store import RunStore

__all__ = ["GenerationContext", "GenerationTally", "generate_part"]


class GenerationContext:
    """What every batch of one generate call shares.

    Args:
        store: The run the responses are written to.
        backend: The model.
        plan: How to sample.
        key: The generation hash of (backend, plan).
        cache: The call cache, or ``None``.
        progress: Progress advanced per request (in this process only; not pickled).
    """

    def __init__(
        self,
        store: RunStore,
        backend: Backend,
        plan: SamplingPlan,
        *,
        key: str,
        cache: CallCache | None,
        progress: Progress | None = None,
    ) -> None:
        self.store = store
        self.backend = backend
        self.plan = plan
        self.key = key
        self.cache = cache
        self.progress = progress

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the progress, which advances in this process only."""
        return {**self.__dict__, "progress": None}


@dataclass
class GenerationTally:
    """What one written batch did.

    Attributes:
        requests: Requests the batch sent (or found in the cache).
        advanced: Whether the batch advanced the progress itself (in this process).
        computed: Responses written.
        failed: Rows of ``generation_errors`` for the jobs that failed.
        succeeded: Response ids written.
        errors: ``"<response id>: <error>"`` of each failed job.
        lacking: Responses written without a feature the plan asked for.
        permanent: Failed jobs with a call that failed for good (a refusal, a
            deterministic failure), which a plain rerun would repeat.
        usage: Calls, cache hits, tokens and cost of the batch.
    """

    requests: int = 0
    advanced: bool = False
    computed: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    succeeded: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lacking: int = 0
    permanent: int = 0
    usage: Usage = field(default_factory=Usage)


def generate_part(context: GenerationContext, batch: Sequence[Any]) -> GenerationTally:
    """Answer a batch of jobs, store their responses as one part, and return the tally."""
    backend, plan, key = context.backend, context.plan, context.key
    requests = [r for job in batch for r in job.requests.all()]
    tally = GenerationTally(requests=len(requests), advanced=context.progress is not None)
    with (context.progress or NullProgress()).task(f"generate {backend.key}", None) as task:
        results = cached_generate(backend, requests, cache=context.cache, progress=Forward(task))
    responses: list[Response] = []
    offset = 0
    for job in batch:
        width = len(job.requests.all())
        outcome = assemble_response(
            job, results[offset : offset + width], backend=backend, plan=plan, key=key
        )
        answers = results[offset : offset + width]
        offset += width
        if isinstance(outcome, Response):
            responses.append(outcome)
            continue
        tally.permanent += any(g.error and not g.retryable for g in answers)
        tally.failed.append(error_row(job, backend, plan, key, outcome))
        tally.errors.append(f"{job.response_id}: {outcome}")
    context.store.append(responses)
    tally.computed = len(responses)
    tally.lacking = sum(1 for r in responses if r.meta.get("unsupported"))
    tally.succeeded = [r.response_id for r in responses]
    tally.usage = paid_usage(results, backend)
    return tally
