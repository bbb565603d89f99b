"""The ``hf_seq2seq`` backend: a local encoder-decoder model (T5, BART…) that generates text.

For seq2seq rewriters, above all the ``paraphrase`` prompt variant's
paraphraser (``paraphrase[backend=hf_seq2seq[model=PATH]]``). The prompt is
the encoder's input (chat messages are joined as ``role: content`` lines);
the decoder's output, special tokens removed, is the reply. Each request is
generated on its own: greedy, beam search, or sampling (``sampling``,
``top_k``, ``top_p``) under the request's seed, so a sampled reply does not
depend on what else was asked. No token log-probabilities or hidden states.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.backends._base import (
    Backend,
    Dtype,
    Generation,
    GenerationRequest,
    backend,
)
from realitycheck.backends.hf import import_torch, resolve_device, torch_dtype
from realitycheck.errors import InvalidInputError
from realitycheck.params import NonEmptyStr, OneOf, param, required

__all__ = ["HFSeq2SeqBackend"]


@functools.lru_cache(maxsize=2)
def _load(model: str, device: str, dtype: str) -> tuple[Any, Any]:
    """Load (once per process and spec) the encoder-decoder model and its tokenizer."""
    import_torch()
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    target = resolve_device(device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
        lm: Any = AutoModelForSeq2SeqLM.from_pretrained(model, dtype=torch_dtype(target, dtype))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"Cannot load the model {model!r}: {exc}", field="model") from None
    return lm.to(target).eval(), tokenizer


def _text(request: GenerationRequest) -> str:
    if request.prompt:
        return request.prompt
    return "\n".join(f"{m['role']}: {m['content']}" for m in request.messages)


def _options(request: GenerationRequest) -> dict[str, Any]:
    """Return ``model.generate`` keyword arguments for the request's decoding."""
    options: dict[str, Any] = {
        "max_new_tokens": request.max_tokens,
        "num_return_sequences": request.n,
    }
    if request.decoding == "greedy":
        return options | {"do_sample": False, "num_beams": 1}
    if request.decoding == "beam":
        return options | {"do_sample": False, "num_beams": max(request.num_beams, request.n)}
    sampled = {"do_sample": True, "temperature": max(request.temperature, 1e-5), "top_k": 0}
    if request.decoding == "top_k":
        sampled["top_k"] = request.top_k
    if request.decoding == "top_p":
        sampled["top_p"] = request.top_p
    return options | sampled


@backend("hf_seq2seq")
@dataclass(frozen=True, kw_only=True)
class HFSeq2SeqBackend(Backend):
    """A local Hugging Face encoder-decoder model (``AutoModelForSeq2SeqLM``) that generates.

    Args:
        model: Local folder or hub id, loaded with ``from_pretrained``.
        device: ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``, ``cuda:1``…
        dtype: ``auto``, ``float32``, ``float16`` or ``bfloat16``.
    """

    model: str = required(NonEmptyStr())
    device: str = param("auto", NonEmptyStr())
    dtype: Dtype = param("auto", OneOf(Dtype))

    capabilities: ClassVar[frozenset[str]] = frozenset({"completion", "chat", "n", "beam"})
    version: ClassVar[str] = "1"

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate each request's ``n`` replies, one request at a time."""
        if not requests:
            return []
        import torch

        lm, tokenizer = _load(self.model, self.device, self.dtype)
        out = []
        for request in requests:
            encoded = tokenizer(_text(request), return_tensors="pt").to(lm.device)
            if request.seed is not None:
                torch.manual_seed(request.seed)
            with torch.inference_mode():
                ids = lm.generate(**encoded, **_options(request))
            texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
            out.append(Generation(texts=tuple(t.strip() for t in texts)))
        return out
