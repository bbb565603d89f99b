"""The ``hf`` backend's own decoding loop: greedy and seeded sampling, features as it goes.

Greedy requests and seeded sampling requests are decoded here rather than by
``model.generate``, for two reasons:

* **Samples per prompt, whatever the batch.** ``model.generate`` draws every
  row of a batch from torch's one global random stream, so a prompt's samples
  would depend on which prompts share its batch. Here sequence ``j`` of a
  request seeded ``s`` draws from its own stream, seeded by :func:`row_seed`
  ``(s, j)``, so a prompt's samples are the same whatever the batch, up to
  the float rounding that padding brings to the logits (about 1e-6), which
  can flip a draw only when it lands that close to the edge between tokens.
* **One pass, not two.** The logits and hidden states the loop computes to
  decode are the ones the teacher-forced pass (:mod:`._hf_forward`) would
  compute again, so token log-probabilities, entropies, top-k alternatives
  and hidden states are taken from the loop itself; and a prompt is encoded
  once (its KV cache is then repeated for its ``n`` samples).

Each step, row ``r`` picks its next token from the logits (float32) of its
last position:

* greedy: the most likely token (``argmax``, as ``generate`` does);
* sampling: the logits are divided by the temperature, ``top_k`` keeps the
  ``k`` largest (ties at the ``k``-th included), ``top_p`` keeps, in order of
  decreasing probability, the smallest prefix of tokens whose mass reaches
  ``top_p`` (at least one token), a softmax gives the probabilities
  ``p_1..p_V``, and the token is drawn by inverse transform sampling: with
  ``u`` the row's next uniform number in ``[0, 1)`` and ``C_i = p_1 + … + p_i``
  (float64), the first ``i`` with ``C_i > u * C_V``. Row ``r``'s uniforms are
  ``torch.rand(max_tokens, dtype=float64)`` from a CPU ``torch.Generator``
  seeded with its :func:`row_seed`: step ``t`` uses the ``t``-th.

A row ends at an EOS token (later positions are filled with the pad token,
as in ``generate``) or when its new text contains a stop string; the loop
ends when every row has ended or after ``max_new_tokens`` steps. Positions
are counted from the attention mask, as ``generate`` counts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from realitycheck.backends import GenerationRequest
from realitycheck.backends.hf._forward import accepts_logits_to_keep, cache_keyword

__all__ = ["Decoded", "decode", "is_loop_decoded", "is_seeded_sampling", "row_seed"]


def is_seeded_sampling(request: GenerationRequest) -> bool:
    """Return whether ``request`` samples (temperature > 0, not beam) under a seed."""
    return _samples(request) and request.seed is not None


def is_loop_decoded(request: GenerationRequest) -> bool:
    """Return whether :func:`decode` answers ``request``: greedy, or seeded sampling.

    Beam search and unseeded sampling are left to ``model.generate``.
    """
    if request.decoding == "beam":
        return False
    return not _samples(request) or request.seed is not None


def _samples(request: GenerationRequest) -> bool:
    return request.decoding in ("sampling", "top_k", "top_p") and request.temperature > 0


def row_seed(seed: int, sample: int) -> int:
    """Return the seed of sample ``sample`` (0-based) of a request seeded ``seed``.

    A 63-bit integer from numpy's ``SeedSequence((seed mod 2**64, sample))``,
    so neighbouring seeds and neighbouring samples give unrelated streams.
    """
    state = np.random.SeedSequence((seed % 2**64, sample)).generate_state(1, dtype=np.uint64)
    return int(state[0]) & (2**63 - 1)


def row_uniforms(torch: Any, requests: Sequence[GenerationRequest], steps: int) -> Any:
    """Return the ``(prompts * n, steps)`` float64 uniforms of the rows, on the CPU."""
    rows = []
    for request in requests:
        for j in range(request.n):
            generator = torch.Generator().manual_seed(row_seed(int(request.seed or 0), j))
            rows.append(torch.rand(steps, dtype=torch.float64, generator=generator))
    return torch.stack(rows) if rows else torch.zeros((0, steps), dtype=torch.float64)


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


def _draw(torch: Any, logits: Any, request: GenerationRequest, u: Any) -> Any:
    """Return each row's token: argmax when ``u`` is None, else the inverse-CDF draw at ``u``."""
    if u is None:
        return logits.argmax(dim=-1)
    probs = torch.softmax(_filtered(torch, logits, request), dim=-1).double()
    cdf = torch.cumsum(probs, dim=-1)
    target = (u * cdf[:, -1])[:, None]
    token = torch.searchsorted(cdf, target, right=True)[:, 0]
    return token.clamp(max=logits.shape[-1] - 1)


@dataclass
class Decoded:
    """What :func:`decode` drew and measured, one row per sequence.

    ``tokens`` is ``(rows, steps)`` (pad after a row's end). For drawn token
    ``t`` of row ``r``: ``logprobs[r, t]`` is its log-probability and
    ``entropies[r, t]`` the entropy (nats) of the model's own next-token
    distribution (temperature 1, no truncation); ``top`` holds the
    ``(values, indices)`` of the ``k`` largest log-probabilities there;
    ``hidden[l][r, t]`` is token ``t``'s hidden state at layer ``l``
    (``hidden_states[l]``: 0 = embeddings). Each is present only when asked.
    """

    tokens: Any
    logprobs: Any = None
    entropies: Any = None
    top: tuple[Any, Any] | None = None
    hidden: dict[int, Any] = field(default_factory=dict)


class _Recorder:
    """Collects the per-step features that :class:`Decoded` returns."""

    def __init__(self, torch: Any, *, logprobs: bool, top_k: int, layers: Sequence[int]) -> None:
        self.torch = torch
        self.logprobs, self.top_k, self.layers = logprobs, top_k, tuple(layers)
        self.chosen: list[Any] = []
        self.entropy: list[Any] = []
        self.top_values: list[Any] = []
        self.top_indices: list[Any] = []
        self.states: dict[int, list[Any]] = {layer: [] for layer in self.layers}

    def scores(self, logits: Any, tokens: Any) -> None:
        """Record the log-probability and entropy of ``tokens`` under ``logits``."""
        if not self.logprobs and not self.top_k:
            return
        logp = self.torch.log_softmax(logits, dim=-1)
        if self.logprobs:
            self.chosen.append(logp.gather(1, tokens[:, None])[:, 0])
            self.entropy.append(-(logp.exp() * logp).sum(dim=-1))
        if self.top_k:
            top = logp.topk(min(self.top_k, logp.shape[-1]), dim=-1)
            self.top_values.append(top.values)
            self.top_indices.append(top.indices)

    def states_of(self, hidden_states: Any) -> None:
        """Record the hidden states of the tokens just fed to the model."""
        for layer in self.layers:
            self.states[layer].append(hidden_states[layer][:, -1, :].float())

    def result(self, tokens: Any) -> Decoded:
        stack = self.torch.stack
        done = Decoded(tokens=tokens)
        if self.chosen:
            done.logprobs, done.entropies = stack(self.chosen, 1), stack(self.entropy, 1)
        if self.top_values:
            done.top = (stack(self.top_values, 1), stack(self.top_indices, 1))
        empty = tokens.new_zeros((tokens.shape[0], 0, 1), dtype=self.torch.float32)
        done.hidden = {layer: stack(s, 1) if s else empty for layer, s in self.states.items()}
        return done


def decode(
    model: Any,
    ids: Any,
    mask: Any,
    requests: Sequence[GenerationRequest],
    *,
    eos: set[int],
    pad_id: int,
    stop_hit: Any = None,
) -> Decoded:
    """Decode ``requests`` (greedy or seeded sampling): ``n`` rows per prompt, in order.

    Args:
        model: The causal LM (on its device, in eval mode).
        ids: Left-padded prompt token ids, ``(prompts, width)``, on the model's device.
        mask: Their attention mask (1 = token, 0 = padding).
        requests: One request per prompt, all sharing every setting but the
            prompt and the seed (:func:`is_loop_decoded`). Greedy gives one
            row per prompt, seeded sampling ``n``. The features recorded
            follow the first request's ``logprobs``, ``top_logprobs`` and
            ``hidden_layers``.
        eos: Token ids that end a row.
        pad_id: What fills a row after its end.
        stop_hit: Optional ``f(new_token_rows) -> list[bool]``: which rows' new
            text contains a stop string.

    Returns:
        The drawn tokens, ``(prompts * rows per prompt, steps)``, and their features.
    """
    import torch

    first = requests[0]
    seeded = is_seeded_sampling(first)
    n = first.n if seeded else 1
    record = _Recorder(
        torch, logprobs=first.logprobs, top_k=first.top_logprobs, layers=first.hidden_layers
    )
    uniforms = row_uniforms(torch, requests, first.max_tokens).to(ids.device) if seeded else None
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    eos_ids = torch.tensor(sorted(eos) or [pad_id], device=ids.device)
    keep = {"logits_to_keep": 1} if accepts_logits_to_keep(model) else {}
    name = cache_keyword(model)  # "cache" from transformers 5.24, else "past_key_values"
    with torch.inference_mode():
        out = model(
            input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **keep
        )
        past, logits = getattr(out, name), out.logits[:, -1, :].float()
        if n > 1:  # the prompt is encoded once, its cache shared by its n rows
            past.batch_repeat_interleave(n)
            logits = logits.repeat_interleave(n, dim=0)
            mask = mask.repeat_interleave(n, dim=0)
            positions = positions.repeat_interleave(n, dim=0)
        step_pos = positions[:, -1:]
        done = torch.zeros(logits.shape[0], dtype=torch.bool, device=ids.device)
        drawn: list[Any] = []
        for step in range(first.max_tokens):
            tokens = _draw(torch, logits, first, None if uniforms is None else uniforms[:, step])
            record.scores(logits, tokens)
            tokens = torch.where(done, torch.full_like(tokens, pad_id), tokens)
            drawn.append(tokens)
            done = done | torch.isin(tokens, eos_ids)
            if stop_hit is not None:
                hits = stop_hit(torch.stack(drawn, dim=1))
                done = done | torch.tensor(hits, dtype=torch.bool, device=ids.device)
            ended = bool(done.all())
            # One more pass after the last step only to read the last token's states.
            if ended or (step == first.max_tokens - 1 and not record.layers):
                break
            step_pos = step_pos + 1
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
            out = model(
                input_ids=tokens[:, None],
                attention_mask=mask,
                position_ids=step_pos,
                use_cache=True,
                output_hidden_states=bool(record.layers),
                **{name: past},
            )
            past, logits = getattr(out, name), out.logits[:, -1, :].float()
            if record.layers:
                record.states_of(out.hidden_states)
    tokens = torch.stack(drawn, dim=1) if drawn else ids.new_zeros((ids.shape[0] * n, 0))
    return record.result(tokens)
