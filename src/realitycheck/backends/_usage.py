"""What the calls of a run cost: a pure function of the generations they returned.

Only calls actually paid for in this run (``cached=False``) count, and the
cost follows from per-1,000-token prices. A request that took several calls
(a server that ignores or caps ``n``) counts each of them, as its
``usage["calls"]`` says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from realitycheck.backends._base import Generation
from realitycheck.params import param_error, shown

__all__ = ["Usage", "usage_of"]


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Token usage and cost of the calls a run actually paid for.

    Attributes:
        calls: Calls answered by the backend in this run: one per generation, or
            what the generation's ``usage["calls"]`` says (a request for ``n``
            sequences from a server that ignores ``n`` takes ``n`` calls; those of a
            failed request that answered count too).
        cached: Generations served from the cache or from a duplicate in the batch.
        errors: Generations that failed.
        attempts: HTTP attempts made, retries included (backends that report them).
        prompt_tokens: Prompt tokens of the paid calls.
        completion_tokens: Completion tokens of the paid calls.
        cost: ``prompt_tokens / 1000 * price[0] + completion_tokens / 1000 * price[1]``.
    """

    calls: int = 0
    cached: int = 0
    errors: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int | float]:
        """Return the usage as plain data (for the run manifest)."""
        return {**dataclasses.asdict(self), "total_tokens": self.total_tokens}


def usage_of(
    generations: Iterable[Generation], *, price_per_1k: tuple[float, float] = (0.0, 0.0)
) -> Usage:
    """Add up the usage of the generations this run paid for.

    Cached generations cost nothing now and only count in ``cached``; failed
    ones count in ``errors`` (their attempts, and the calls and tokens of a
    failed request's answered calls, still count).

    Args:
        generations: What :func:`cached_generate` returned.
        price_per_1k: Price per 1,000 prompt tokens and per 1,000 completion tokens.
    """
    totals = {"calls": 0, "cached": 0, "errors": 0, "attempts": 0, "prompt": 0, "completion": 0}
    for generation in _iter_generations(generations):
        if generation.cached:
            totals["cached"] += 1
            continue
        usage = generation.usage
        totals["attempts"] += int(usage.get("attempts", 0))
        if generation.error:
            totals["errors"] += 1
            totals["calls"] += int(usage.get("calls", 0))
        else:
            totals["calls"] += int(usage.get("calls", 1))
        totals["prompt"] += int(usage.get("prompt_tokens", 0))
        totals["completion"] += int(usage.get("completion_tokens", 0))
    prompt_price, completion_price = price_per_1k
    return Usage(
        calls=totals["calls"],
        cached=totals["cached"],
        errors=totals["errors"],
        attempts=totals["attempts"],
        prompt_tokens=totals["prompt"],
        completion_tokens=totals["completion"],
        cost=totals["prompt"] / 1000 * prompt_price
        + totals["completion"] / 1000 * completion_price,
    )


def _iter_generations(generations: Iterable[Generation]) -> Iterator[Generation]:
    for i, generation in enumerate(generations):
        if not isinstance(generation, Generation):
            raise param_error(
                "generations",
                "usage_of",
                "an iterable of Generation values",
                got=f"{shown(generation)} at position {i}",
            )
        yield generation
