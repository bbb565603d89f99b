"""Torch for the local Hugging Face backends: import it, place the model, choose the weight type.

Shared by :mod:`realitycheck.backends.hf`, its pair classifier
(:mod:`realitycheck.backends.hf._pairs`) and
:mod:`realitycheck.backends.hf_seq2seq`; torch is imported only when called.
"""

from __future__ import annotations

from typing import Any

from realitycheck.encoders.bertscore import require_torch

__all__ = ["batch_error", "import_torch", "resolve_device", "torch_dtype"]

_PURPOSE = "The hf backend"


def import_torch() -> Any:
    """Return torch; MissingDependencyError (the ``hf`` extra) for the hf backends if absent."""
    return require_torch(_PURPOSE)


def resolve_device(device: str) -> str:
    """Return ``device``, with ``auto`` replaced by ``cuda`` when a GPU is present, else ``cpu``."""
    torch = import_torch()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def torch_dtype(target: str, dtype: str) -> Any:
    """Return the torch weight type: ``auto`` is float32 on CPU, bfloat16 (or float16) on GPU."""
    torch = import_torch()
    if dtype != "auto":
        return getattr(torch, dtype)
    if target.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def batch_error(torch: Any, exc: Exception) -> str:
    """Return ``"<type>: <message>"``, the error of each item of a failed batch.

    After CUDA runs out of memory the cached blocks are freed first, so the
    next batch starts with the memory the failed one held.
    """
    if "out of memory" in str(exc).lower() and torch.cuda.is_available():
        torch.cuda.empty_cache()
    return f"{type(exc).__name__}: {exc}"
