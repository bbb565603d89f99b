"""Continuation log-likelihoods from an OpenAI-compatible ``/completions`` endpoint.

The prompt and the continuation are sent as one text with ``echo=True``,
``logprobs=0`` and ``max_tokens=1``: the server returns the log-probability of
every token of the text it was sent (the first has none: nothing precedes it)
with each token's character offset (``text_offset``), then one generated token,
which is ignored. ``max_tokens`` is never 0: ``llama-cpp-python``'s server reads
0 as "no limit" and generated 1,194 tokens for one option.

The continuation's tokens are those that end after the prompt's last
character, so a token spanning the boundary counts to the continuation, as in
the ``hf`` backend. Offsets are checked against the token texts: where they
disagree (``llama-cpp-python`` shifts them by one character with SentencePiece
vocabularies, which counted the prompt's last token into the option), the
offsets are rebuilt from the token texts themselves. A server that does not
echo the prompt (``llama-server`` ignores ``echo``) gives a fatal error that
says so.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from realitycheck.backends.openai._client import CallSettings, call, call_each, run_blocking
from realitycheck.errors import BackendError, FatalBackendError, RetryableBackendError

__all__ = ["echo_arguments", "echoed_continuation", "score_pairs", "token_offsets"]

_MAX_LEAD = 8  # characters a tokenizer may put before the text (a prefix space, "<s>")


def echo_arguments(model: str, text: str) -> dict[str, Any]:
    """Return the ``/completions`` body that echoes ``text`` with its token log-probs."""
    return {
        "model": model,
        "prompt": text,
        "echo": True,
        "logprobs": 0,
        "max_tokens": 1,  # never 0: some servers read it as "no limit"
        "temperature": 0.0,
    }


def token_offsets(tokens: Sequence[str], offsets: Sequence[int], text: str) -> list[int]:
    """Return each token's start in ``text``: the server's offsets where they fit the tokens.

    The server's offsets fit when every echoed token's text is found at its
    offset. Otherwise the offsets are rebuilt by laying the token texts end to
    end (after a prefix space the tokenizer may add); when the tokens do not
    spell the text either (byte tokens), the server's offsets are kept.
    """
    if all(
        text.startswith(token, start) or start >= len(text)
        for token, start in zip(tokens, offsets, strict=True)
        if token
    ):
        return list(offsets)
    lead = "".join(tokens).find(text)
    if not 0 <= lead <= _MAX_LEAD:
        return list(offsets)
    out, position = [], -lead
    for token in tokens:
        out.append(max(position, 0))
        position += len(token)
    return out


def echoed_continuation(
    data: Mapping[str, Any], *, prompt: str, continuation: str
) -> tuple[float, ...]:
    """Return the log-probs of the continuation's tokens in an echo response body.

    Args:
        data: The response body.
        prompt: The prompt sent.
        continuation: The continuation sent after it (tokens starting later were generated).

    Raises:
        FatalBackendError: The body lacks the echoed tokens, offsets or log-probs, or
            the server did not echo the prompt (it would answer the same again).
        RetryableBackendError: A token of the continuation has no log-probability.
    """
    try:
        logprobs = data["choices"][0]["logprobs"]
        tokens = list(logprobs["tokens"])
        values = list(logprobs["token_logprobs"])
        offsets = [int(o) for o in logprobs["text_offset"]]
    except (KeyError, IndexError, TypeError, ValueError):
        raise FatalBackendError(
            "The echo response lacks choices[0].logprobs with tokens, token_logprobs and "
            "text_offset: the server does not echo prompt log-probabilities ('echo' with "
            "'logprobs' on /completions), so it cannot score fixed continuations."
        ) from None
    if not len(tokens) == len(values) == len(offsets):
        raise FatalBackendError("The echo response's token lists differ in length.")
    text = prompt + continuation
    prompt_chars, text_chars = len(prompt), len(text)
    offsets = token_offsets([str(t) for t in tokens], offsets, text)
    said = str(data["choices"][0].get("text") or "")
    spelled = "".join(str(t) for t in tokens).find(prompt)
    if prompt and not said.startswith(prompt) and not 0 <= spelled <= _MAX_LEAD:
        raise FatalBackendError(
            "The server did not echo the prompt's tokens ('echo' is not supported), so it "
            "cannot score fixed continuations; use a server that echoes (vLLM, "
            "llama-cpp-python) or another backend."
        )
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
    backend: CallSettings, client: Any, pair: tuple[str, str], rng: random.Random
) -> tuple[float, ...]:
    prompt, continuation = pair
    args = echo_arguments(backend.model, prompt + continuation)
    data = await call(backend, client, args, chat=False, rng=rng)
    return echoed_continuation(data, prompt=prompt, continuation=continuation)


async def _score_all(
    backend: CallSettings, pairs: Sequence[tuple[str, str]], api_key: str
) -> list[tuple[float, ...]]:
    results: list[tuple[float, ...]] = [()] * len(pairs)

    async def work(client: Any, index: int, rng: random.Random) -> None:
        try:
            results[index] = await _score(backend, client, pairs[index], rng)
        except BackendError as exc:
            raise type(exc)(f"pair {index}: {exc}") from None

    await call_each(backend, api_key, len(pairs), work)
    return results


def score_pairs(
    backend: CallSettings, pairs: Sequence[tuple[str, str]], api_key: str
) -> list[tuple[float, ...]]:
    """Return each pair's continuation token log-probs, ``concurrency`` calls at a time.

    Raises:
        BackendError: A call failed after the backend's retries (naming the pair).
    """
    if not pairs:
        return []
    return run_blocking(lambda: _score_all(backend, pairs, api_key))
