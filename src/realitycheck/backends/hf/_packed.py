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

Rows are left-padded (a padding position attends to itself only). On the
decoder-only models whose logits are a plain linear head over the
decoder's last hidden states (:data:`_PLAIN_HEAD`: Llama, Mistral, Qwen2,
Qwen3, GPT-2), the decoder (``get_decoder()``) runs alone and the head is
applied here to the rows that predict an option token only, in blocks of
:data:`_BLOCK` rows, each normalised (a float32 log-softmax over the
vocabulary) while its logits are still in the processor's cache (at a
vocabulary of a few thousand); a ``(tokens, vocabulary)`` array of logits
is never built, which also bounds memory at a large vocabulary. On other models
the full model runs, keeping the last ``max(sum of option lengths) + 1``
positions (``logits_to_keep``), of which only the predicting rows reach the
LM head (a pre-hook selects them, :func:`_predictor_logits`), so whatever
the model does to the head's output (e.g. a logit soft-cap) still applies.
The rows, positions, mask and gather indices are built with array
operations over the chunk's tokens, not a Python loop per option; the mask
is additive with ``-inf`` where attention is barred (every row keeps its
own position, so no row is all ``-inf``), which transformers passes to the
attention as it is and which PyTorch's CPU SDPA kernel handles faster than
the dtype's finite minimum. A custom 4D mask is honoured by the eager
and SDPA attention of transformers' decoder models; models with another
attention, a sliding window or no ``position_ids`` argument take the
key/value cache path instead (:func:`packable`,
:mod:`realitycheck.backends.hf._prefix`).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from realitycheck.backends.hf._prefix import Chunk, by_context

__all__ = ["packable", "packed_logliks", "plain_head"]

_MASKED_ATTENTION = ("eager", "sdpa")
# Causal LMs whose forward is ``lm_head(decoder(...).last_hidden_state)`` and nothing more.
_PLAIN_HEAD = frozenset(
    {
        "GPT2LMHeadModel",
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
    }
)
_BLOCK = 64  # head rows normalised at once (64 x a small vocabulary of float32 stay in cache)


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


@dataclass(frozen=True)
class _Packed:
    """The model inputs of a chunk of packed rows and where to read each option token's score.

    ``ids``, ``positions``: ``(rows, width)``; ``mask``: additive ``(rows, 1, width, width)``,
    0 or ``-inf``; ``cells``: for each option token, in order, the flat index
    (``row * width + column``) of the position that predicts it; ``predictors``: the
    same position's flat index (``row * keep + j``) among the kept logits; ``targets``:
    the token ids; ``lengths``: the option lengths, in order; ``keep``: the logits kept
    per row.
    """

    ids: Any
    positions: Any
    mask: Any
    cells: Any
    predictors: Any
    targets: Any
    lengths: list[int]
    keep: int


def _segments(chunk: Chunk) -> tuple[Any, Any, Any]:
    """Return each segment's length, id (0 context, ``k`` option ``k``) and row, flat."""
    import numpy as np

    per_row = [len(options) + 1 for _, options in chunk]
    length = np.fromiter(
        (n for context, options in chunk for n in (len(context), *map(len, options))),
        dtype=np.int64,
    )
    ident = np.concatenate([np.arange(n) for n in per_row])
    row = np.repeat(np.arange(len(chunk)), per_row)
    return length, ident, row


def _pack(chunk: Chunk, pad_id: int, dtype: Any) -> _Packed:
    """Lay out ``chunk`` as left-padded packed rows, vectorised over its tokens.

    Row ``r`` is ``context + option_1 + … + option_k`` right-aligned to the
    widest row. A context token at ``j`` has position ``j``; option token
    ``j`` has position ``len(context) + j``. Attention (additive mask, 0 or
    ``-inf``): causal, and a token sees the context and its own segment
    only; a padding position sees itself only (no row is all masked).
    """
    import numpy as np
    import torch

    seg_len, seg_id, seg_row = _segments(chunk)
    rows = len(chunk)
    parts = (part for context, options in chunk for part in (context, *options))
    tokens = np.fromiter(itertools.chain.from_iterable(parts), dtype=np.int64)
    row_len = np.bincount(seg_row, weights=seg_len, minlength=rows).astype(np.int64)
    ctx_len = seg_len[seg_id == 0]
    width = int(row_len.max())
    keep = int((row_len - ctx_len).max()) + 1
    seg_start = np.cumsum(seg_len) - seg_len
    flat = np.arange(len(tokens))
    within = flat - np.repeat(seg_start, seg_len)  # index inside the segment
    row = np.repeat(seg_row, seg_len)
    segment = np.repeat(seg_id, seg_len)
    pad = width - row_len  # padding on the left of each row
    column = pad[row] + flat - seg_start[seg_id == 0][row]
    cell = row * width + column
    ids = np.full(rows * width, pad_id, dtype=np.int64)
    ids[cell] = tokens
    positions = np.zeros(rows * width, dtype=np.int64)
    positions[cell] = within + np.where(segment > 0, ctx_len[row], 0)
    seg = np.full(rows * width, -1, dtype=np.int64)
    seg[cell] = segment
    option = segment > 0
    # Option token j is predicted by the context's last position (j = 0) or by its own
    # position j - 1; kept logits cover the last ``keep`` columns.
    ctx_last = pad + ctx_len - 1
    predictor = np.where(within == 0, ctx_last[row], column - 1)[option]
    predictors = row[option] * keep + predictor - (width - keep)
    return _Packed(
        ids=torch.from_numpy(ids.reshape(rows, width)),
        positions=torch.from_numpy(positions.reshape(rows, width)),
        mask=_block_mask(seg.reshape(rows, width), dtype),
        cells=torch.from_numpy(row[option] * width + predictor),
        predictors=torch.from_numpy(predictors),
        targets=torch.from_numpy(tokens[option]),
        lengths=seg_len[seg_id > 0].tolist(),
        keep=keep,
    )


def _block_mask(segments: Any, dtype: Any) -> Any:
    """Return the additive ``(rows, 1, width, width)`` mask of rows of ``segments``.

    ``segments[r, j]`` is 0 for a context token, ``k`` for a token of option
    ``k`` and -1 for padding. Query ``i`` may attend key ``j`` (0) when
    ``j <= i`` and key ``j`` is context or of query ``i``'s own segment, or
    when ``j == i``; else ``-inf``.
    """
    import numpy as np
    import torch

    rows, width = segments.shape
    q = segments[:, :, None]
    kv = segments[:, None, :]
    allowed = (kv == 0) | (kv == q)
    allowed &= q >= 0
    allowed &= np.tri(width, dtype=bool)
    allowed |= np.eye(width, dtype=bool)
    barred = torch.from_numpy(~allowed[:, None])
    return torch.zeros(barred.shape, dtype=dtype).masked_fill_(barred, float("-inf"))


def plain_head(model: Any) -> bool:
    """Return whether ``model``'s logits are its linear output embeddings over its decoder's output.

    True for the causal LM classes of :data:`_PLAIN_HEAD` (their forward is
    ``lm_head(decoder(...).last_hidden_state)``, nothing applied after) whose
    output embeddings are a ``torch.nn.Linear``; the head can then run on
    chosen rows of the decoder's output and give the model's own logits.
    """
    import torch

    if type(model).__name__ not in _PLAIN_HEAD or not hasattr(model, "get_decoder"):
        return False
    return isinstance(model.get_output_embeddings(), torch.nn.Linear)


def _predictor_hidden(model: Any, packed: _Packed) -> Any:
    """Return the decoder's ``(option tokens, hidden)`` output at the rows predicting each token."""
    device = model.device
    hidden = model.get_decoder()(
        input_ids=packed.ids.to(device),
        attention_mask=packed.mask.to(device),
        position_ids=packed.positions.to(device),
        use_cache=False,
    ).last_hidden_state
    return hidden.reshape(-1, hidden.shape[-1]).index_select(0, packed.cells.to(device))


def _predictor_logits(model: Any, packed: _Packed) -> Any:
    """Return the ``(option tokens, vocabulary)`` logits of the rows that predict an option token.

    A forward pre-hook on the output embeddings (the LM head) keeps only
    those rows of the hidden states, so the head never runs on context or
    padding positions; whatever the model does to the head's output (e.g.
    a logit soft-cap) is elementwise and still applies. Without an output
    embedding module the kept logits are computed and the rows taken after.
    """
    device = model.device
    rows = packed.predictors.to(device)
    head = model.get_output_embeddings()
    taken: list[bool] = []

    def only_predictors(_module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        taken.append(True)
        hidden = args[0]
        return (hidden.reshape(-1, hidden.shape[-1]).index_select(0, rows)[None], *args[1:])

    handle = head.register_forward_pre_hook(only_predictors) if head is not None else None
    try:
        logits = model(
            input_ids=packed.ids.to(device),
            attention_mask=packed.mask.to(device),
            position_ids=packed.positions.to(device),
            use_cache=False,
            logits_to_keep=packed.keep,
        ).logits
    finally:
        if handle is not None:
            handle.remove()
    if taken:
        return logits[0]
    return logits.reshape(-1, logits.shape[-1]).index_select(0, rows)


def _target_logprobs(rows: Any, head: Any, targets: Any) -> list[float]:
    """Return ``log_softmax(head(rows[t]))[targets[t]]`` for every ``t``, in float32.

    ``rows`` are hidden states (``head`` the output embeddings) or logits
    (``head`` ``None``). Taken :data:`_BLOCK` rows at a time: one block's
    logits are normalised while they are in cache (the negated cross-entropy
    of the target, one fused log-softmax and pick), and no logits array of
    all rows is allocated.
    """
    import torch

    parts = []
    for start in range(0, rows.shape[0], _BLOCK):
        block = rows[start : start + _BLOCK]
        logits = block if head is None else head(block[None])[0]
        picked = targets[start : start + _BLOCK]
        parts.append(torch.nn.functional.cross_entropy(logits.float(), picked, reduction="none"))
    return torch.cat(parts).neg_().tolist() if parts else []


def _score_chunk(model: Any, chunk: Chunk, pad_id: int) -> list[list[float]]:
    """Return the token log-probs of every option of every context in ``chunk``, in order.

    A float32 log-softmax over the vocabulary, on the logit rows that predict
    an option token only: the head applied to the decoder's rows
    (:func:`plain_head` models), else the model's own logits of those rows.
    """
    import torch

    packed = _pack(chunk, pad_id, model.dtype)
    targets = packed.targets.to(model.device)
    with torch.inference_mode():
        if plain_head(model):
            head = model.get_output_embeddings()
            values = _target_logprobs(_predictor_hidden(model, packed), head, targets)
        else:
            values = _target_logprobs(_predictor_logits(model, packed), None, targets)
    out, at = [], 0
    for n in packed.lengths:
        out.append(values[at : at + n])
        at += n
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
