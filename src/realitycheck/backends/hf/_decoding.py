"""Decoding settings and output clean-up for the ``hf`` backend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from realitycheck.backends import GenerationRequest

__all__ = ["cut", "eos_ids", "generate_kwargs", "rng_devices", "stop_hit", "stop_on_text"]


def generate_kwargs(request: GenerationRequest) -> dict[str, Any]:
    """Map a request to ``model.generate`` keyword arguments (every decoding flag explicit).

    ``greedy`` (and any sampling strategy at temperature <= 0) decodes
    greedily; ``beam`` keeps ``max(num_beams, n)`` beams and returns the
    ``n`` best (transformers' length penalty 1.0); ``sampling`` draws from
    the full distribution at ``temperature``; ``top_k`` keeps the ``top_k``
    most likely tokens (40 when the request says 0); ``top_p`` keeps the
    nucleus of mass ``top_p`` (0.95 when the request says 1.0). Values a
    model's ``generation_config.json`` sets (e.g. a default temperature) are
    always overridden.
    """
    neutral = {"temperature": 1.0, "top_k": 50, "top_p": 1.0}  # ignored, but no warnings
    common: dict[str, Any] = {
        "max_new_tokens": request.max_tokens,
        "repetition_penalty": 1.0,
        "no_repeat_ngram_size": 0,
        "typical_p": 1.0,
        "min_p": None,
        "length_penalty": 1.0,
    }
    sampling = request.decoding in ("sampling", "top_k", "top_p") and request.temperature > 0
    if request.decoding == "beam":
        beams = max(request.num_beams, request.n)
        return {
            **common,
            **neutral,
            "do_sample": False,
            "num_beams": beams,
            "num_return_sequences": request.n,
        }
    if not sampling:
        return {**common, **neutral, "do_sample": False, "num_beams": 1, "num_return_sequences": 1}
    top_k = 0
    top_p = 1.0
    if request.decoding == "top_k":
        top_k = request.top_k if request.top_k > 0 else 40
    elif request.decoding == "top_p":
        top_p = request.top_p if request.top_p < 1.0 else 0.95
    return {
        **common,
        "do_sample": True,
        "num_beams": 1,
        "temperature": request.temperature,
        "top_k": top_k,
        "top_p": top_p,
        "num_return_sequences": request.n,
    }


def rng_devices(torch: Any, model: Any) -> list[int]:
    device = model.device
    if device.type == "cuda":
        return [device.index if device.index is not None else torch.cuda.current_device()]
    return []


def eos_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    configured = getattr(model.generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(t) for t in configured)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return ids


def stop_on_text(tokenizer: Any, stop: Sequence[str], start: int) -> Any:
    """Return stopping criteria that end a row once its new text contains a stop string."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class StopOnText(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            texts = tokenizer.batch_decode(input_ids[:, start:], skip_special_tokens=True)
            done = [any(s and s in t for s in stop) for t in texts]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([StopOnText()])


def stop_hit(tokenizer: Any, stop: Sequence[str]) -> Any:
    """Return ``f(new_ids) -> list[bool]``: which rows' new text contains a stop string."""

    def hit(new_ids: Any) -> list[bool]:
        texts = tokenizer.batch_decode(new_ids, skip_special_tokens=True)
        return [any(s and s in t for s in stop) for t in texts]

    return hit


def cut(
    tokenizer: Any, row: list[int], eos: set[int], stop: Sequence[str]
) -> tuple[list[int], str, str]:
    """Return (kept token ids, text, finish reason) of one generated row."""
    end = next((j for j, t in enumerate(row) if t in eos), None)
    ids = row if end is None else row[:end]
    reason = "length" if end is None else "stop"
    text = tokenizer.decode(ids, skip_special_tokens=True)
    hits = [p for p in (text.find(s) for s in stop if s) if p >= 0]
    if hits:
        pos = min(hits)
        text, reason = text[:pos], "stop"
        keep = len(ids)
        while keep > 0 and len(tokenizer.decode(ids[:keep], skip_special_tokens=True)) > pos:
            keep -= 1
        ids = ids[:keep]
    return ids, text, reason
