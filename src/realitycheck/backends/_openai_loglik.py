"""Continuation log-likelihoods from an OpenAI-compatible ``/completions`` endpoint.

The prompt and the continuation are sent as one text with ``echo=True``,
``logprobs=0`` and ``max_tokens=0``: the server returns the log-probability of
every token of the text it was sent (the first has none: nothing precedes it)
with each token's character offset (``text_offset``). The continuation's
tokens are those that end after the prompt's last character, so a token
spanning the boundary counts to the continuation, as in the ``hf`` backend.
vLLM's and llama.cpp's servers and OpenAI's legacy completion models answer
this request; a server that refuses it makes the pair an error.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from realitycheck.errors import BackendError, RetryableBackendError

if TYPE_CHECKING:
    from realitycheck.backends._openai_http import JsonPools
    from realitycheck.backends.openai import OpenAIBackend

__all__ = ["echo_arguments", "echoed_continuation", "score_pairs"]


def echo_arguments(model: str, text: str) -> dict[str, Any]:
    """Return the ``/completions`` body that echoes ``text`` with its token log-probs."""
    return {
        "model": model,
        "prompt": text,
        "echo": True,
        "logprobs": 0,
        "max_tokens": 0,
        "temperature": 0.0,
    }


def echoed_continuation(
    data: Mapping[str, Any], *, prompt_chars: int, text_chars: int
) -> tuple[float, ...]:
    """Return the log-probs of the continuation's tokens in an echo response body.

    Args:
        data: The response body.
        prompt_chars: Length of the prompt in characters.
        text_chars: Length of prompt + continuation (tokens starting later were generated).

    Raises:
        RetryableBackendError: The body lacks the echoed tokens, offsets or log-probs.
    """
    try:
        logprobs = data["choices"][0]["logprobs"]
        tokens = list(logprobs["tokens"])
        values = list(logprobs["token_logprobs"])
        offsets = [int(o) for o in logprobs["text_offset"]]
    except (KeyError, IndexError, TypeError, ValueError):
        raise RetryableBackendError(
            "The echo response lacks choices[0].logprobs with tokens, token_logprobs and "
            "text_offset."
        ) from None
    if not len(tokens) == len(values) == len(offsets):
        raise RetryableBackendError("The echo response's token lists differ in length.")
    kept = [i for i, start in enumerate(offsets) if start < text_chars]
    out = []
    for position, i in enumerate(kept):
        end = offsets[kept[position + 1]] if position + 1 < len(kept) else text_chars
        if end <= prompt_chars:
            continue
        if values[i] is None:
            raise RetryableBackendError(
                f"The echo response has no log-probability for the continuation token "
                f"{tokens[i]!r}."
            )
        out.append(float(values[i]))
    return tuple(out)


async def _score(
    backend: OpenAIBackend, pools: JsonPools, slot: int, pair: tuple[str, str], rng: random.Random
) -> tuple[float, ...]:
    prompt, continuation = pair
    text = prompt + continuation
    args = echo_arguments(backend.model, text)
    data = await retrying_post(backend, pools, slot, args, rng)
    return echoed_continuation(data, prompt_chars=len(prompt), text_chars=len(text))


async def retrying_post(
    backend: OpenAIBackend, pools: JsonPools, slot: int, args: dict[str, Any], rng: random.Random
) -> Mapping[str, Any]:
    """Post ``args`` on worker ``slot``'s pool with the backend's retry policy (:mod:`._retry`)."""
    from realitycheck.backends._openai_http import classify
    from realitycheck.backends._retry import retrying

    return await retrying(
        functools.partial(backend._post, pools, slot, args),
        classify=classify,
        max_retries=backend.max_retries,
        base=backend.backoff,
        rng=rng,
    )


async def _score_all(
    backend: OpenAIBackend, pairs: Sequence[tuple[str, str]], api_key: str
) -> list[tuple[float, ...]]:
    workers = min(backend.concurrency, len(pairs))
    pools = backend._pools(api_key, workers)
    results: list[tuple[float, ...]] = [()] * len(pairs)
    pending = iter(range(len(pairs)))
    rng = random.Random()

    async def worker(slot: int) -> None:
        for index in pending:
            try:
                results[index] = await _score(backend, pools, slot, pairs[index], rng)
            except BackendError as exc:
                raise type(exc)(f"pair {index}: {exc}") from None

    try:
        await asyncio.gather(*(worker(k) for k in range(workers)))
    finally:
        await pools.aclose()
    return results


def score_pairs(
    backend: OpenAIBackend, pairs: Sequence[tuple[str, str]], api_key: str
) -> list[tuple[float, ...]]:
    """Return each pair's continuation token log-probs, ``concurrency`` calls at a time.

    Raises:
        BackendError: A call failed after the backend's retries (naming the pair).
    """
    if not pairs:
        return []
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_score_all(backend, pairs, api_key))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _score_all(backend, pairs, api_key)).result()
