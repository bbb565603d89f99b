"""Scoring several continuations of one context with the context run once (a shared KV cache).

The options of a multiple-choice question continue the same prompt. Instead
of one forward pass over ``context + option`` per option, the distinct
contexts of a batch go through the model once (left-padded, keeping only the
last position's logits, which predict each option's first token) and their
key/value cache is copied to one row per option; the options then run
against it (right-padded, positions continuing after their context). A
causal model's output at a position depends only on the positions before it,
so the numbers are those of the full pass (float rounding apart); the saving
is the context's share of the tokens, times the options per question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from realitycheck.backends.hf._forward import accepts_logits_to_keep, cache_keyword, padded

__all__ = ["by_context", "shared_context_logliks"]


def _score_chunk(
    model: Any, chunk: Sequence[tuple[tuple[int, ...], list[Sequence[int]]]], pad_id: int
) -> list[list[float]]:
    """Return the token log-probs of every option of every context in ``chunk``, in order."""
    import torch

    device = model.device
    ctx_ids, ctx_mask = padded([c for c, _ in chunk], pad_id, left=True)
    ctx_ids, ctx_mask = ctx_ids.to(device), ctx_mask.to(device)
    kwargs: dict[str, Any] = {
        "input_ids": ctx_ids,
        "attention_mask": ctx_mask,
        "position_ids": (ctx_mask.cumsum(dim=-1) - 1).clamp(min=0),
        "use_cache": True,
    }
    if accepts_logits_to_keep(model):
        kwargs["logits_to_keep"] = 1
    options = [o for _, members in chunk for o in members]
    owners = torch.tensor(
        [g for g, (_, members) in enumerate(chunk) for _ in members], device=device
    )
    opt_ids, opt_mask = padded(options, pad_id, left=False)
    opt_ids, opt_mask = opt_ids.to(device), opt_mask.to(device)
    lengths = torch.tensor([len(c) for c, _ in chunk], device=device)
    steps = torch.arange(opt_ids.shape[1], device=device)
    name = cache_keyword(model)  # "cache" from transformers 5.24, else "past_key_values"
    with torch.inference_mode():
        first = model(**kwargs)
        cache = getattr(first, name)
        cache.batch_select_indices(owners)
        second = model(
            input_ids=opt_ids,
            attention_mask=torch.cat([ctx_mask[owners], opt_mask], dim=1),
            position_ids=lengths[owners][:, None] + steps[None, :],
            use_cache=True,
            **{name: cache},
        )
        # Option token j is predicted by the context's last position (j = 0) or by
        # option position j - 1.
        logits = torch.cat(
            [first.logits[:, -1:, :].float()[owners], second.logits[:, :-1, :].float()], dim=1
        )
        chosen = logits.gather(2, opt_ids[:, :, None])[:, :, 0]
        values = (chosen - torch.logsumexp(logits, dim=-1)).tolist()
    return [values[r][: len(o)] for r, o in enumerate(options)]


def shared_context_logliks(
    model: Any,
    contexts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    *,
    pad_id: int,
    batch_size: int,
) -> list[tuple[float, ...]]:
    """Return each continuation's token log-probs, each distinct context run once per batch.

    Args:
        model: A causal LM in eval mode whose cache supports ``batch_select_indices``.
        contexts: Each pair's context token ids (non-empty).
        continuations: Each pair's continuation token ids (empty scores ``()``).
        pad_id: The padding token id (masked out).
        batch_size: Options per forward pass (a context's options are never split;
            a batch may exceed it by one context's options).

    Returns:
        One tuple per pair, in order.
    """
    return by_context(
        contexts,
        continuations,
        batch_size=batch_size,
        score=lambda chunk: _score_chunk(model, chunk, pad_id),
        width=lambda context, options: len(context),
    )


Chunk = list[tuple[tuple[int, ...], list[Sequence[int]]]]


_OPEN = 8  # chunks still offered room when a group is placed (first fit among them)


def _first_fit(sizes: Sequence[int], batch_size: int) -> list[list[int]]:
    """Return chunks of group indices, each group in the first recent chunk it fits.

    Groups are taken in order; a group goes into the first of the last
    ``_OPEN`` chunks with room for all its members, else opens a new chunk
    (alone, if it holds more than ``batch_size``). Filling the gaps that the
    groups of one question size leave keeps the number of forward passes
    near ``ceil(total / batch_size)``.
    """
    chunks: list[list[int]] = []
    room: list[int] = []
    for g, size in enumerate(sizes):
        for c in range(max(0, len(chunks) - _OPEN), len(chunks)):
            if size <= room[c]:
                chunks[c].append(g)
                room[c] -= size
                break
        else:
            chunks.append([g])
            room.append(batch_size - size)
    return chunks


def by_context(
    contexts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    *,
    batch_size: int,
    score: Callable[[Chunk], Sequence[Sequence[float]]],
    width: Callable[[tuple[int, ...], list[Sequence[int]]], int],
) -> list[tuple[float, ...]]:
    """Group pairs by context, batch the groups widest first, and ``score`` each batch.

    ``score`` takes ``[(context, [continuation, ...]), ...]`` and returns the
    token log-probs of each continuation in that order; ``width`` is a group's
    row width, the sort key (similar widths pad little). Groups fill batches
    of at most ``batch_size`` continuations first fit (:func:`_first_fit`). A
    context's continuations are never split across batches, so a batch may
    exceed ``batch_size`` when one context has more. Empty continuations
    score ``()``.
    """
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (context, continuation) in enumerate(zip(contexts, continuations, strict=True)):
        if continuation:
            groups.setdefault(tuple(context), []).append(i)
    ordered = sorted(
        groups.items(), key=lambda kv: -width(kv[0], [continuations[i] for i in kv[1]])
    )
    out: list[tuple[float, ...]] = [()] * len(contexts)
    for members in _first_fit([len(m) for _, m in ordered], batch_size):
        part = [ordered[g] for g in members]
        chunk = [(context, [continuations[i] for i in m]) for context, m in part]
        for i, values in zip([i for _, m in part for i in m], score(chunk), strict=True):
            out[i] = tuple(values)
    return out
