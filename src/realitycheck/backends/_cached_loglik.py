"""Continuation log-likelihoods through the shared call cache.

A ``(prompt, continuation)`` pair scored by a backend is stored in the same
content-addressed :class:`~realitycheck.backends.CallCache` as generations,
under the SHA-256 of the backend's call identity and the pair; the stored
value is a :class:`~realitycheck.backends.Generation` whose one sequence is
the continuation, with its token log-probabilities. A pair is never scored
twice: neither within a call (duplicates are sent once) nor across runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from realitycheck.backends._base import Backend, Generation
from realitycheck.backends._cache import CallCache, call_identity
from realitycheck.errors import InvalidInputError
from realitycheck.params import InstanceOf, SequenceOf, check_arg

__all__ = ["cached_loglik_tokens", "loglik_key"]

_PAIRS = SequenceOf(SequenceOf(InstanceOf(str), length=2))


def loglik_key(identity: dict[str, object], prompt: str, continuation: str) -> str:
    """Return the cache key of one scored pair under a backend's call identity."""
    text = json.dumps(
        {"backend": identity, "loglik": {"prompt": prompt, "continuation": continuation}},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cached_loglik_tokens(
    backend: Backend, pairs: Sequence[tuple[str, str]], *, cache: CallCache | None
) -> tuple[list[tuple[float, ...]], int]:
    """Return each pair's continuation token log-probs, paying only for pairs not cached.

    Args:
        backend: A backend with the ``loglik`` capability.
        pairs: ``(prompt, continuation)`` texts.
        cache: The call cache, or ``None`` to only deduplicate.

    Returns:
        The token log-probs of each pair, in order, and the number of pairs sent
        to the backend (0 when every pair was cached).

    Raises:
        InvalidInputError: If ``pairs`` is malformed or the backend answers the wrong count.
    """
    check_arg(pairs, _PAIRS, name="pairs", owner="cached_loglik_tokens")
    identity = call_identity(backend)
    keys = [loglik_key(identity, p, c) for p, c in pairs]
    found = cache.get_many(set(keys)) if cache is not None else {}
    values = {k: tuple(g.token_logprobs[0]) for k, g in found.items() if g.token_logprobs}
    todo: dict[str, tuple[str, str]] = {}
    for key, pair in zip(keys, pairs, strict=True):
        if key not in values:
            todo.setdefault(key, (pair[0], pair[1]))
    if todo:
        answers = backend.loglik_tokens(list(todo.values()))
        if len(answers) != len(todo):
            raise InvalidInputError(
                f"The backend {backend.key!r} returned {len(answers)} scores for "
                f"{len(todo)} pairs; a backend must score every pair in order."
            )
        for (key, (_, continuation)), scores in zip(todo.items(), answers, strict=True):
            values[key] = tuple(float(v) for v in scores)
            if cache is not None:
                stored = Generation(texts=(continuation,), token_logprobs=(values[key],))
                cache.put(key, stored, backend=backend.key)
    return [values[k] for k in keys], len(todo)
