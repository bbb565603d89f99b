"""Grounding by sentence embeddings: is each response sentence close to some source sentence?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.records import Response, Score
from realitycheck.text import split_sentences

__all__ = ["EmbeddingGrounding"]


@detector("embedding_grounding")
@dataclass(frozen=True, kw_only=True)
class EmbeddingGrounding(Detector):
    """One minus the support of the least supported response sentence.

    The response and the example's context are split into sentences
    (:func:`realitycheck.text.split_sentences`) and embedded with
    all-MiniLM-L6-v2; a response sentence's support is its largest cosine to
    any context sentence. ``value`` is ``1 - min(support)`` over the response
    sentences, in [0, 2]: 0 when every sentence appears in the context, higher
    = some sentence far from anything in the source = more likely
    hallucinated. Needs the ``embed`` extra. An empty response or an example
    without context gets ``value=None`` and an error.
    """

    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        from realitycheck.encoders.embeddings import embed

        split: dict[str, list[str]] = {}

        def sentences(text: str) -> list[str]:
            if text not in split:
                split[text] = split_sentences(text)
            return split[text]

        errors: list[str] = []
        for response in responses:
            example = run.examples.get(response.example_id)
            if example is None:
                errors.append(f"example {response.example_id!r} was not given")
            elif not sentences(example.context):
                errors.append("the example has no context")
            elif not sentences(response.text):
                errors.append("the response is empty")
            else:
                errors.append("")
        wanted: set[str] = set()
        for response, error in zip(responses, errors, strict=True):
            if not error:
                wanted.update(sentences(response.text))
                wanted.update(sentences(run.examples[response.example_id].context))
        texts = sorted(wanted)
        row = {text: i for i, text in enumerate(texts)}
        vectors = embed(texts) if texts else np.empty((0, 0), dtype=np.float32)
        out = []
        for response, error in zip(responses, errors, strict=True):
            if error:
                out.append(self._score(response, None, error=error))
                continue
            context = run.examples[response.example_id].context
            own = vectors[[row[s] for s in sentences(response.text)]]
            source = vectors[[row[s] for s in sentences(context)]]
            support = (own @ source.T).max(axis=1)
            # Unit float32 vectors can give a cosine a rounding error past +-1.
            out.append(self._score(response, float(1.0 - np.clip(support.min(), -1.0, 1.0))))
        return out
