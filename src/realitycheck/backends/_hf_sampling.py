"""Seeded sampling for the ``hf`` backend: batched, with one random generator per sequence.

``model.generate`` draws every row of a batch from torch's one global random
stream, so a prompt's samples depend on which prompts share its batch and on
the batch size. Here each sequence (prompt ``i``, sample ``j``) owns a
``torch.Generator`` seeded by :func:`row_seed` from the request's ``seed`` and
``j``, and the decoding loop (KV cache, left padding, positions counted from
the attention mask as ``generate`` counts them) draws each row's next token
from that row's generator alone. A prompt's samples are therefore the same
whatever the batch, up to the float rounding that padding brings to the
logits (about 1e-6), which can flip a draw only when it lands that close to
the edge between two tokens.

Each step the next-token distribution is the model's, computed as follows
(the order and the definitions of transformers' samplers):

* the logits (in float32) are divided by the temperature;
* ``top_k`` keeps the ``k`` largest logits (ties at the ``k``-th included);
* ``top_p`` keeps, in order of decreasing probability, the smallest prefix
  of tokens whose mass reaches ``top_p`` (at least one token);
* the kept logits are turned into probabilities by a softmax and one token
  is drawn (``torch.multinomial`` with the row's generator).

A row ends at an EOS token (later positions are filled with the pad token,
as in ``generate``) or when its
new text contains a stop string; the loop ends when every row has ended or
after ``max_new_tokens`` steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from realitycheck.backends._base import GenerationRequest

__all__ = ["is_seeded_sampling", "row_seed", "sample"]


def is_seeded_sampling(request: GenerationRequest) -> bool:
    """Return whether ``request`` samples (temperature > 0, not beam) under a seed."""
    samples = request.decoding in ("sampling", "top_k", "top_p") and request.temperature > 0
    return samples and request.seed is not None


def row_seed(seed: int, sample: int) -> int:
    """Return the seed of sample ``sample`` (0-based) of a request seeded ``seed``.

    A 63-bit integer from numpy's ``SeedSequence((seed mod 2**64, sample))``,
    so neighbouring seeds and neighbouring samples give unrelated streams.
    """
    state = np.random.SeedSequence((seed % 2**64, sample)).generate_state(1, dtype=np.uint64)
    return int(state[0]) & (2**63 - 1)


def _filtered(torch: Any, logits: Any, request: GenerationRequest) -> Any:
    """Return the logits after temperature, ``top_k`` and ``top_p`` (removed = ``-inf``)."""
    logits = logits / request.temperature
    if request.decoding == "top_k":
        k = min(request.top_k if request.top_k > 0 else 40, logits.shape[-1])
        kth = torch.topk(logits, k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    elif request.decoding == "top_p":
        top_p = request.top_p if request.top_p < 1.0 else 0.95
        ordered, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(ordered, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked above
        drop = before >= top_p
        drop[..., 0] = False
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits


def sample(
    model: Any,
    ids: Any,
    mask: Any,
    requests: Sequence[GenerationRequest],
    *,
    eos: set[int],
    pad_id: int,
    stop_hit: Any = None,
) -> Any:
    """Return prompt + drawn tokens, one row per sample, ``n`` rows per prompt in order.

    Args:
        model: The causal LM (on its device, in eval mode).
        ids: Left-padded prompt token ids, ``(prompts, width)``, on the model's device.
        mask: Their attention mask (1 = token, 0 = padding).
        requests: One seeded sampling request per prompt; they share every
            setting but the prompt and the seed.
        eos: Token ids that end a row.
        pad_id: What fills a row after its EOS.
        stop_hit: Optional ``f(new_token_rows) -> list[bool]``: which rows' new
            text contains a stop string.

    Returns:
        A ``(prompts * n, width + steps)`` tensor, like ``model.generate``'s.
    """
    import torch

    first = requests[0]
    n = first.n
    device = ids.device
    generators = []
    for request in requests:
        for j in range(n):
            generator = torch.Generator(device=device)
            generator.manual_seed(row_seed(int(request.seed or 0), j))
            generators.append(generator)
    ids = ids.repeat_interleave(n, dim=0)
    mask = mask.repeat_interleave(n, dim=0)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    done = torch.zeros(ids.shape[0], dtype=torch.bool, device=device)
    eos_ids = torch.tensor(sorted(eos) or [pad_id], device=device)
    drawn: list[Any] = []
    past = None
    step_ids, step_pos = ids, positions
    with torch.inference_mode():
        for _ in range(first.max_tokens):
            out = model(
                input_ids=step_ids,
                attention_mask=mask,
                position_ids=step_pos,
                past_key_values=past,
                use_cache=True,
            )
            past = out.past_key_values
            logits = _filtered(torch, out.logits[:, -1, :].float(), first)
            probs = torch.softmax(logits, dim=-1)
            tokens = torch.stack(
                [torch.multinomial(probs[r], 1, generator=g)[0] for r, g in enumerate(generators)]
            )
            tokens = torch.where(done, torch.full_like(tokens, pad_id), tokens)
            drawn.append(tokens)
            done = done | torch.isin(tokens, eos_ids)
            if stop_hit is not None:
                hits = stop_hit(torch.stack(drawn, dim=1))
                done = done | torch.tensor(hits, dtype=torch.bool, device=device)
            if bool(done.all()):
                break
            step_ids = tokens[:, None]
            step_pos = step_pos[:, -1:] + 1
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
    new = torch.stack(drawn, dim=1) if drawn else ids[:, :0]
    return torch.cat([ids, new], dim=-1)
