"""Scoring several continuations of one context in one row: the context once, no cache copies.

The options of a multiple-choice question continue the same context. Here a
question becomes one sequence, ``context + option_1 + … + option_k``, run
with a custom attention mask in which every option attends to the whole
context and to its own earlier tokens only, never to another option, and
with position ids that restart after the context for every option
(option token ``j`` sits at position ``len(context) + j``). A causal model's
output at a position depends only on the positions it attends to and on
their positions, so each option's numbers are those of a full pass over
``context + option`` (float rounding apart), while the context's tokens
go through the model once and no key/value cache is copied.

Rows are left-padded (a padding position attends to itself only) and the
logits are kept for the last ``max(sum of option lengths) + 1`` positions
(``logits_to_keep``). Only the positions that predict an option token are
normalised: ``log p(t) = logit_t - logsumexp(logits)`` on those rows, not a
log-softmax over every position. A custom 4D mask is honoured by the eager
and SDPA attention of transformers' decoder models; models with another
attention, a sliding window or no ``position_ids`` argument take the
key/value cache path instead (:func:`packable`,
:mod:`realitycheck.backends._hf_prefix`).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from realitycheck.backends._hf_prefix import by_context

__all__ = ["packable", "packed_logliks"]

_MASKED_ATTENTION = ("eager", "sdpa")


def packable(model: Any) -> bool:
    """Return whether ``model`` honours the custom mask and positions the packed rows need.

    True for eager or SDPA attention, with a ``position_ids`` argument, and
    every layer attending to the full context (no sliding window).
    """
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) not in _MASKED_ATTENTION:
        return False
    if getattr(config, "sliding_window", None) is not None:
        return False
    if any(t != "full_attention" for t in getattr(config, "layer_types", None) or ()):
        return False
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - exotic wrappers
        return False
    return "position_ids" in parameters and "logits_to_keep" in parameters


def _rows(
    chunk: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]], pad_id: int, dtype: Any
) -> tuple[Any, Any, Any]:
    """Return the left-padded ids, position ids and additive 4D mask of the packed rows.

    Segment ids per position: -1 padding, 0 context, ``k + 1`` option ``k``.
    """
    import torch

    width = max(len(c) + sum(len(o) for o in opts) for c, opts in chunk)
    ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
    pos = torch.zeros((len(chunk), width), dtype=torch.long)
    seg = torch.full((len(chunk), width), -1, dtype=torch.long)
    for r, (context, options) in enumerate(chunk):
        tokens = list(context) + [t for o in options for t in o]
        at = width - len(tokens)
        ids[r, at:] = torch.tensor(tokens, dtype=torch.long)
        pos[r, at : at + len(context)] = torch.arange(len(context))
        seg[r, at : at + len(context)] = 0
        at += len(context)
        for k, option in enumerate(options):
            pos[r, at : at + len(option)] = torch.arange(len(option)) + len(context)
            seg[r, at : at + len(option)] = k + 1
            at += len(option)
    q, kv = seg[:, :, None], seg[:, None, :]
    causal = torch.ones((width, width), dtype=torch.bool).tril()
    allowed = causal & (((kv == 0) & (q >= 0)) | ((kv == q) & (q > 0)))
    allowed |= torch.eye(width, dtype=torch.bool)  # padding attends to itself (rows not all -inf)
    mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill_(~allowed, torch.finfo(dtype).min)
    return ids, pos, mask[:, None, :, :]


def _score_chunk(
    model: Any, chunk: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]], pad_id: int
) -> list[list[float]]:
    """Return the token log-probs of every option of every context in ``chunk``, in order."""
    import torch

    device = model.device
    ids, pos, mask = _rows(chunk, pad_id, model.dtype)
    width = ids.shape[1]
    keep = max(sum(len(o) for o in opts) for _, opts in chunk) + 1
    rows: list[int] = []
    where: list[int] = []
    targets: list[int] = []
    for r, (_, options) in enumerate(chunk):
        start = width - sum(len(o) for o in options)  # first option token
        last = start - 1  # the context's last position
        for option in options:
            # Token j of an option is predicted by the context's last position
            # (j = 0) or by the option's own position j - 1.
            predictors = [last] + list(range(start, start + len(option) - 1))
            rows.extend([r] * len(option))
            where.extend(p - (width - keep) for p in predictors)
            targets.extend(option)
            start += len(option)
    with torch.inference_mode():
        logits = model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=pos.to(device),
            use_cache=False,
            logits_to_keep=keep,
        ).logits
        picked = logits[torch.tensor(rows, device=device), torch.tensor(where, device=device)]
        picked = picked.float()
        chosen = picked.gather(1, torch.tensor(targets, device=device)[:, None])[:, 0]
        values = (chosen - torch.logsumexp(picked, dim=-1)).tolist()
    out, at = [], 0
    for _, options in chunk:
        for option in options:
            out.append(values[at : at + len(option)])
            at += len(option)
    return out


def packed_logliks(
    model: Any,
    contexts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    *,
    pad_id: int,
    batch_size: int,
) -> list[tuple[float, ...]]:
    """Return each continuation's token log-probs, each distinct context run once, in one row.

    Args:
        model: A causal LM in eval mode for which :func:`packable` holds.
        contexts: Each pair's context token ids (non-empty).
        continuations: Each pair's continuation token ids (empty scores ``()``).
        pad_id: The padding token id (masked out).
        batch_size: Continuations per forward pass (a context's continuations are
            never split; a pass may exceed it by one context's continuations).

    Returns:
        One tuple per pair, in order.
    """
    return by_context(
        contexts,
        continuations,
        batch_size=batch_size,
        score=lambda chunk: _score_chunk(model, chunk, pad_id),
        width=lambda context, options: len(context) + sum(len(o) for o in options),
    )
