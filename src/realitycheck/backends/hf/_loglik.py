"""Continuation log-likelihoods on a local causal LM, per token, batched by length.

Each ``(prompt, continuation)`` pair is tokenised twice, the prompt alone
(with the tokenizer's special tokens, e.g. BOS) and prompt + continuation;
the tokens of the joint text after the longest prefix the two share are the
continuation's (:func:`realitycheck.backends._chat.continuation_start`), so a
token spanning the boundary counts to the continuation. On a model with
eager or SDPA attention every context goes through the model once, in one
row with all its continuations behind it under a mask that keeps them apart
(:mod:`realitycheck.backends.hf._packed`). On other models, continuations
that share their context (the options of one question) are scored against
one run of the context with its key/value cache copied per continuation
(:mod:`realitycheck.backends.hf._prefix`), and the other pairs are sorted by
length before batching, so a batch holds sequences of similar length and
little padding. The answers come back in the order of the pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from realitycheck.backends import continuation_start
from realitycheck.backends.hf._forward import forward_features
from realitycheck.backends.hf._packed import packable, packed_logliks
from realitycheck.backends.hf._prefix import shared_context_logliks

__all__ = ["split_pairs", "token_ids", "token_logliks"]


def _plain_backend(tokenizer: Any) -> Any:
    """Return the ``tokenizers`` backend that ``tokenizer(texts)`` only forwards to, else ``None``.

    That is a transformers fast tokenizer whose ``__call__`` and
    ``_encode_plus`` are transformers' own, with no input/target mode switch,
    whose backend has no truncation or padding set (a plain call would reset
    them) and splits special tokens as the tokenizer says.
    """
    try:
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # pragma: no cover - transformers < 5
        return None
    kind = type(tokenizer)
    if (
        not isinstance(tokenizer, TokenizersBackend)
        or kind.__call__ is not PreTrainedTokenizerBase.__call__
        or kind._encode_plus is not TokenizersBackend._encode_plus
        or hasattr(kind, "_switch_to_input_mode")
    ):
        return None
    backend = tokenizer.backend_tokenizer
    if backend.truncation is not None or backend.padding is not None:
        return None
    if not hasattr(backend, "encode_batch_fast"):  # pragma: no cover - tokenizers < 0.21
        return None
    if backend.encode_special_tokens != bool(tokenizer.split_special_tokens):
        return None
    return backend


def token_ids(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Return each text's token ids with the tokenizer's special tokens, as ``tokenizer(texts)``.

    Where the call would only forward to the ``tokenizers`` backend
    (:func:`_plain_backend`), the backend's ``encode_batch_fast`` (ids, no
    character offsets) is called directly, without building transformers'
    per-text encoding dictionaries; the ids are the same.
    """
    if not texts:
        return []
    backend = _plain_backend(tokenizer)
    if backend is None:
        encoded = tokenizer(list(texts), return_attention_mask=False)["input_ids"]
        return [list(ids) for ids in encoded]
    return [e.ids for e in backend.encode_batch_fast(list(texts), add_special_tokens=True)]


def split_pairs(
    tokenizer: Any, pairs: Sequence[tuple[str, str]]
) -> tuple[list[list[int]], list[list[int]]]:
    """Return the context tokens and the continuation tokens of each pair.

    Each distinct prompt is tokenised once, and the joint texts in one batch
    call of the (fast) tokenizer.

    Raises:
        InvalidInputError: If a prompt yields no token to condition on.
    """
    if not pairs:
        return [], []
    prompts = sorted({p for p, _ in pairs})  # options share their prompt: tokenised once
    prompt_ids = dict(zip(prompts, token_ids(tokenizer, prompts), strict=True))
    wholes = token_ids(tokenizer, [p + c for p, c in pairs])
    contexts, continuations = [], []
    for k, ((prompt, _), whole) in enumerate(zip(pairs, wholes, strict=True)):
        ctx = prompt_ids[prompt]
        # Usually the prompt's tokens start the joint text; else find where they part.
        fits = bool(ctx) and whole[: len(ctx)] == ctx
        shared = len(ctx) if fits else continuation_start(ctx, whole, k)
        contexts.append(whole[:shared])
        continuations.append(whole[shared:])
    return contexts, continuations


def token_logliks(
    model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]], *, batch_size: int
) -> list[tuple[float, ...]]:
    """Return ``log p(c_t | prompt, c_<t)`` for every continuation token of every pair.

    Args:
        model: A causal LM in eval mode.
        tokenizer: Its tokenizer; its pad token pads the batches.
        pairs: ``(prompt, continuation)`` texts.
        batch_size: Sequences per forward pass.

    Returns:
        One tuple per pair, in the order of ``pairs`` (empty for an empty continuation).
    """
    contexts, continuations = split_pairs(tokenizer, pairs)
    pad_id = int(tokenizer.pad_token_id)
    if packable(model):
        return packed_logliks(model, contexts, continuations, pad_id=pad_id, batch_size=batch_size)
    uses: dict[tuple[int, ...], int] = {}
    for context, continuation in zip(contexts, continuations, strict=True):
        if continuation:
            uses[tuple(context)] = uses.get(tuple(context), 0) + 1
    shared = [i for i, c in enumerate(contexts) if uses.get(tuple(c), 0) > 1]
    out: list[tuple[float, ...]] = [()] * len(pairs)
    if shared:
        scored = shared_context_logliks(
            model,
            [contexts[i] for i in shared],
            [continuations[i] for i in shared],
            pad_id=pad_id,
            batch_size=batch_size,
        )
        for i, values in zip(shared, scored, strict=True):
            out[i] = values
    alone = [i for i, c in enumerate(contexts) if uses.get(tuple(c), 0) == 1]
    order = sorted(alone, key=lambda i: -(len(contexts[i]) + len(continuations[i])))
    for s in range(0, len(order), batch_size):
        chunk = order[s : s + batch_size]
        feats = forward_features(
            model,
            tokenizer,
            [contexts[i] for i in chunk],
            [continuations[i] for i in chunk],
            pad_id=pad_id,
            entropy=False,
        )
        for i, f in zip(chunk, feats, strict=True):
            out[i] = tuple(f.token_logprobs)
    return out
