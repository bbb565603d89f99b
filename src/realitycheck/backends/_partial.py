"""Partial answers: the sequences of a request that were answered before a later call failed.

A request for ``n`` sequences can take several calls (a server that ignores
or caps ``n``). When a later call fails, the backend returns the failure with
the sequences already answered; the call cache stores them under
``partial:<key>`` and the next run asks only for the rest
(:func:`rest_of`: ``n`` minus what is kept, the seed moved on by the calls
already made, as the backend moves it for each further call), then stores
the merged answer (:func:`merged`) under the request's own key.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from realitycheck.backends._base import Generation, GenerationRequest

__all__ = ["PARTIAL", "merged", "rest_of", "without_sequences"]

PARTIAL = "partial:"
"""Prefix of the cache key under which a request's partial answer is kept."""
_SEQUENCE_FIELDS = (
    "tokens",
    "token_logprobs",
    "top_logprobs",
    "token_entropies",
    "hidden",
    "finish_reasons",
)


def rest_of(request: GenerationRequest, partial: Generation | None) -> GenerationRequest:
    """Return the request for what ``partial`` lacks (``request`` itself without one)."""
    if partial is None or not 0 < len(partial.texts) < request.n:
        return request
    seed = request.seed
    if seed is not None:
        seed += int(partial.usage.get("calls", 0))
    return dataclasses.replace(request, n=request.n - len(partial.texts), seed=seed)


def merged(before: Generation, now: Generation) -> Generation:
    """Return ``before``'s sequences followed by ``now``'s, with ``now``'s outcome.

    A per-sequence field is kept only where both parts have it for every
    sequence; the usage is the sum of both parts (the calls ``now`` made are
    in ``now.usage``).
    """
    if not before.texts:
        return now
    fields: dict[str, Any] = {}
    for name in _SEQUENCE_FIELDS:
        first, second = getattr(before, name), getattr(now, name)
        whole = len(first) == len(before.texts) and len(second) == len(now.texts)
        fields[name] = tuple(first) + tuple(second) if whole else ()
    usage = dict(before.usage)
    for name, value in now.usage.items():
        usage[name] = usage.get(name, 0) + value
    return dataclasses.replace(now, texts=before.texts + now.texts, usage=usage, **fields)


def without_sequences(generation: Generation) -> Generation:
    """Return a failure without the sequences it kept (what callers of a failure see)."""
    return Generation(
        usage=generation.usage,
        error=generation.error,
        retryable=generation.retryable,
        unsupported=generation.unsupported,
    )
