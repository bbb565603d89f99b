"""Semantic labelers: closeness of meaning to the references, by sentence embeddings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from realitycheck.labelers._base import labeler
from realitycheck.labelers._similarity import TextSimilarity
from realitycheck.params import Interval, param

__all__ = ["EmbeddingSimilarity"]


@labeler("embedding_similarity")
@dataclass(frozen=True, kw_only=True)
class EmbeddingSimilarity(TextSimilarity):
    """Cosine similarity of all-MiniLM-L6-v2 embeddings to the closest reference.

    The similarity ``s`` is the largest cosine between the response and any of
    the example's references, in [-1, 1]; ``score`` is ``1 - s`` in [0, 2],
    higher = more likely hallucinated, and ``hallucinated`` is ``s <
    threshold``. The default threshold 0.5 is a round value, not tuned: choose
    it on held-out human labels. Needs the ``embed`` extra; texts longer than
    256 word pieces are truncated by the model. An empty response or an
    example without references gets ``hallucinated=None`` and an error.

    Args:
        threshold: Cosine below which a response is labelled hallucinated, in [-1, 1].
    """

    threshold: float = param(0.5, Interval(float, -1, 1))
    similarity_name: ClassVar[str] = "cosine"

    def text_similarities(
        self, texts: Sequence[str], refs: Sequence[Sequence[str]], errors: list[str]
    ) -> list[float | None]:
        """Return each text's cosine to its best reference (``None`` on an error)."""
        from realitycheck.encoders.embeddings import embed

        for k, text in enumerate(texts):
            if not errors[k] and not text.strip():
                errors[k] = "the response is empty"
        todo = [k for k in range(len(texts)) if not errors[k]]
        unique = sorted({texts[k] for k in todo} | {r for k in todo for r in refs[k]})
        row = {text: i for i, text in enumerate(unique)}
        vectors = embed(unique)
        similarities: list[float | None] = [None] * len(texts)
        for k in todo:
            ref_rows = [row[r] for r in refs[k]]
            cosines = vectors[ref_rows] @ vectors[row[texts[k]]]
            # Unit float32 vectors can give a cosine a rounding error past +-1.
            similarities[k] = float(np.clip(cosines.max(), -1.0, 1.0))
        return similarities
