"""ROUGE-L F1 against gold references, vectorised, and the ``rouge_l`` labeler.

:func:`rouge_l_f1` gives the same numbers as the ``rouge-score`` package
(``RougeScorer(["rougeL"], use_stemmer=...)``, ``fmeasure``, best reference)
much faster on many short texts:

- the tokenizer is the package's: lowercase, every character outside
  ``[a-z0-9]`` separates tokens (so any non-ASCII letter does too), and with
  the stemmer each token longer than three characters is replaced by its NLTK
  Porter stem (tokens that stem to something outside ``[a-z0-9]+`` are dropped);
- each distinct string is tokenised once and each distinct token stemmed once;
- each distinct (prediction, reference) pair is scored once, and the longest
  common subsequences of thousands of pairs are computed together, row by row,
  with numpy: with ``prev`` the previous DP row, the next row is the running
  maximum of ``max(prev[j], prev[j - 1] + match[j])`` along ``j``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, ClassVar

import numpy as np

from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.labelers._base import labeler
from realitycheck.labelers._similarity import TextSimilarity
from realitycheck.params import (
    InstanceOf,
    Interval,
    Satisfies,
    check_arg,
    param,
    param_error,
    shown,
)

__all__ = ["RougeL", "rouge_l_f1"]

_TOKEN = re.compile(r"[a-z0-9]+")
_SEPARATOR = "\x00"
_TOKEN_OR_SEPARATOR = re.compile(r"[a-z0-9]+|\x00")
# Pairs are scored in chunks of at most this many padded DP cells per row.
_CHUNK_CELLS = 1 << 18
_MIN_PAIRS_BY_ROW = 256


def _porter_stem() -> Callable[[str], str]:
    try:
        from nltk.stem import porter
    except ImportError:  # pragma: no cover - nltk comes with rouge-score
        raise MissingDependencyError(
            "nltk", extra="all", purpose="ROUGE-L with use_stemmer=True"
        ) from None
    return porter.PorterStemmer().stem


class _Index(dict[str, int]):
    """Numbers each new key in order of first lookup: ``index[key]`` is its id."""

    def __missing__(self, key: str) -> int:
        value = self[key] = len(self)
        return value


class _Tokens:
    """Token ids of distinct strings, in one flat array with offsets."""

    def __init__(self, texts: Sequence[str], *, use_stemmer: bool) -> None:
        # Tokenise all texts in one regex pass over their concatenation, with a
        # separator that is never part of a token (lowercasing is per character).
        if any(_SEPARATOR in t for t in texts):
            pieces = ([*_TOKEN.findall(t.lower()), _SEPARATOR] for t in texts)
            tokens = list(chain.from_iterable(pieces))
        else:
            tokens = _TOKEN_OR_SEPARATOR.findall(_SEPARATOR.join([*texts, ""]).lower())
        if use_stemmer:
            stem, stems = _porter_stem(), dict[str, str | None]()
            tokens = [t for t in (self._stem(t, stem, stems) for t in tokens) if t]
        vocab = _Index({_SEPARATOR: -1})
        ids = np.fromiter(map(vocab.__getitem__, tokens), np.int32, len(tokens))
        ends = np.flatnonzero(ids == -1)
        self.starts = np.zeros(len(ends), dtype=np.int64)
        self.starts[1:] = ends[:-1] + 1
        self.lengths = ends - self.starts
        self.flat = ids

    @staticmethod
    def _stem(token: str, stem: Callable[[str], str], cache: dict[str, str | None]) -> str | None:
        if len(token) <= 3:
            return token
        if token not in cache:
            stemmed = stem(token)
            cache[token] = stemmed if _TOKEN.fullmatch(stemmed) else None
        return cache[token]

    def padded(self, rows: np.ndarray, width: int, fill: int) -> np.ndarray:
        """Return the token ids of strings ``rows`` as a (len(rows), width) array."""
        offsets = np.arange(width)
        inside = offsets[None, :] < self.lengths[rows][:, None]
        if self.flat.size == 0:
            return np.full((len(rows), width), fill, dtype=np.int64)
        index = np.minimum(self.starts[rows][:, None] + offsets[None, :], self.flat.size - 1)
        return np.where(inside, self.flat[index], fill)


def _lcs_chunk(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the LCS length of each column pair of padded ``a`` (m, P) and ``b`` (n, P).

    Padding values of ``a`` and ``b`` must differ from each other and from every
    real token, so that they never match. Pairs run along the second axis so
    that every numpy step works on contiguous rows of all pairs at once.
    """
    n_rows, n_pairs = b.shape
    dtype = np.int16 if a.shape[0] < np.iinfo(np.int16).max else np.int64
    prev = np.zeros((n_rows + 1, n_pairs), dtype=dtype)
    best = np.empty((n_rows, n_pairs), dtype=dtype)
    # numpy's maximum.accumulate is slow along an axis; one call per row wins
    # once each row holds a few hundred pairs.
    by_row = n_pairs >= _MIN_PAIRS_BY_ROW
    for i in range(a.shape[0]):
        np.add(prev[:-1], b == a[i], out=best)
        np.maximum(best, prev[1:], out=best)
        if by_row:
            prev[1] = best[0]
            for j in range(1, n_rows):
                np.maximum(prev[j], best[j], out=prev[j + 1])
        else:
            np.maximum.accumulate(best, axis=0, out=prev[1:])
    return prev[-1]


def _grown(size: int) -> int:
    return max(size + 2, size * 5 // 4)


def _lcs_lengths(tokens: _Tokens, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Return the LCS length of each pair of strings ``(left[k], right[k])``."""
    len_left, len_right = tokens.lengths[left], tokens.lengths[right]
    # Iterate over the shorter side of each pair: fewer numpy row steps.
    swap = len_left > len_right
    short = np.where(swap, right, left)
    long = np.where(swap, left, right)
    len_short, len_long = tokens.lengths[short], tokens.lengths[long]
    out = np.zeros(len(left), dtype=np.int64)
    todo = np.flatnonzero(len_short > 0)
    order = todo[np.lexsort((len_long[todo], len_short[todo]))]
    start = 0
    while start < len(order):
        # The longest run of pairs of about the same size (so that padding wastes
        # little) whose padded rows (pairs x widest text) stay small.
        run = order[start : start + _CHUNK_CELLS]
        height, width = len_short[run], len_long[run]
        similar = (height <= _grown(height[0])) & (width <= _grown(width[0]))
        small = np.arange(1, len(run) + 1) * np.maximum.accumulate(width) <= _CHUNK_CELLS
        fits = np.logical_and.accumulate(similar & small)
        stop = start + max(1, int(np.count_nonzero(fits)))
        chunk = order[start:stop]
        a = tokens.padded(short[chunk], int(len_short[chunk].max()), fill=-1)
        b = tokens.padded(long[chunk], int(len_long[chunk].max()), fill=-2)
        out[chunk] = _lcs_chunk(a.T.copy(), b.T.copy())
        start = stop
    return out


def _rouge_l(
    predictions: Sequence[str], references: Sequence[Sequence[str]], *, use_stemmer: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return best F1, prediction token counts and best reference token counts."""
    index = _Index()
    try:
        pred_ids = np.fromiter(map(index.__getitem__, predictions), np.int64, len(predictions))
    except TypeError:  # an unhashable text
        raise _not_texts("predictions", predictions) from None
    try:
        counts = np.fromiter(map(len, references), np.int64, len(references))
        flat_refs = chain.from_iterable(references)
        ref_ids = np.fromiter(map(index.__getitem__, flat_refs), np.int64, int(counts.sum()))
    except TypeError:  # an unhashable text, or a reference list without len()
        raise _not_texts("references", references) from None
    if any(not isinstance(text, str) for text in index):
        bad = [text for text in index if not isinstance(text, str)]
        name = "predictions" if any(p in bad for p in predictions) else "references"
        raise _not_texts(name, predictions if name == "predictions" else references)
    tokens = _Tokens(list(index), use_stemmer=use_stemmer)
    owner = np.repeat(np.arange(len(predictions)), counts)
    pair_keys = pred_ids[owner] * len(index) + ref_ids
    unique_keys, inverse = np.unique(pair_keys, return_inverse=True)
    left, right = np.divmod(unique_keys, len(index))
    lcs = _lcs_lengths(tokens, left, right)[inverse].astype(np.float64)
    n_pred = tokens.lengths[pred_ids[owner]].astype(np.float64)
    n_ref = tokens.lengths[ref_ids].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(n_pred > 0, lcs / n_pred, 0.0)
        recall = np.where(n_ref > 0, lcs / n_ref, 0.0)
        total = precision + recall
        f1 = np.where(total > 0, 2 * precision * recall / total, 0.0)
    best = np.full(len(predictions), np.nan)
    np.fmax.at(best, owner, f1)
    longest_ref = np.zeros(len(predictions), dtype=np.int64)
    np.maximum.at(longest_ref, owner, tokens.lengths[ref_ids])
    return best, tokens.lengths[pred_ids], longest_ref


def _is_sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


_EXPECTED = {
    "predictions": "a sequence of strings",
    "references": "a sequence of sequences of strings",
}


def _not_texts(name: str, value: Sequence[Any]) -> InvalidInputError:
    """Return the error for ``predictions`` or ``references`` holding something else than text."""
    got = "something else"
    for i, item in enumerate(value):
        if name == "predictions":
            ok = isinstance(item, str)
        else:
            ok = _is_sequence(item) and all(isinstance(x, str) for x in item)
        if not ok:
            got = f"{shown(item)} at position {i}"
            break
    return param_error(name, "rouge_l_f1", _EXPECTED[name], got=got)


def _check_inputs(
    predictions: Sequence[str], references: Sequence[Sequence[str]], *, use_stemmer: bool
) -> None:
    for name, value in (("predictions", predictions), ("references", references)):
        check_arg(value, Satisfies(_is_sequence, _EXPECTED[name]), name=name, owner="rouge_l_f1")
    check_arg(use_stemmer, InstanceOf(bool), name="use_stemmer", owner="rouge_l_f1")
    if len(predictions) != len(references):
        raise param_error(
            "references",
            "rouge_l_f1",
            "one entry per prediction",
            got=f"{len(references)} entries for {len(predictions)} predictions",
        )
    i = next((i for i, refs in enumerate(references) if isinstance(refs, str)), None)
    if i is not None:
        raise param_error(
            "references",
            "rouge_l_f1",
            _EXPECTED["references"],
            got=f"the string {references[i]!r} at position {i}",
        )


def rouge_l_f1(
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    use_stemmer: bool = False,
) -> np.ndarray:
    """Return the ROUGE-L F1 of each prediction against its best reference.

    Equal (to floating-point rounding) to ``max(RougeScorer(["rougeL"],
    use_stemmer=use_stemmer).score(ref, pred)["rougeL"].fmeasure for ref in refs)``
    of the ``rouge-score`` package, including its conventions: a prediction or
    reference without any token scores 0 against it.

    Args:
        predictions: The texts to score.
        references: For each prediction, its gold references.
        use_stemmer: Stem tokens longer than three characters with the Porter
            stemmer (NLTK), as ``rouge-score`` does.

    Returns:
        Array of shape ``(len(predictions),)`` with values in [0, 1], higher =
        closer to a reference; NaN where a prediction has no reference.

    Raises:
        InvalidInputError: If the inputs are not strings or their lengths differ.
    """
    _check_inputs(predictions, references, use_stemmer=use_stemmer)
    return _rouge_l(predictions, references, use_stemmer=use_stemmer)[0]


@labeler("rouge_l")
@dataclass(frozen=True, kw_only=True)
class RougeL(TextSimilarity):
    """ROUGE-L F1 against the example's references, thresholded.

    ``score`` is ``1 - F1`` of the best reference, in [0, 1] (higher = more
    likely hallucinated); ``hallucinated`` is ``F1 < threshold``; ``raw`` keeps
    the F1 (``rouge_l_f1=0.4123``). The default threshold 0.3 is a common
    choice in the hallucination-detection literature that labels free-form QA
    answers by ROUGE-L; tune it on held-out human labels. A response whose text
    has no token, or whose example has no reference with a token, gets
    ``hallucinated=None`` and an error.

    Args:
        threshold: F1 below which a response is labelled hallucinated, in [0, 1].
        use_stemmer: Porter-stem tokens longer than three characters.
    """

    threshold: float = param(0.3, Interval(float, 0, 1))
    use_stemmer: bool = param(False, InstanceOf(bool))
    similarity_name: ClassVar[str] = "rouge_l_f1"
    # Columnar and about 10 µs a response: large parts tokenise shared references once.
    batch_rows: ClassVar[int] = 1 << 16

    def text_similarities(
        self, texts: Sequence[str], refs: Sequence[Sequence[str]], errors: list[str]
    ) -> list[float | None]:
        """Return each text's rouge_l_f1 to its best reference (``None`` on an error).

        Sets ``errors[k]`` where text ``k`` or all its references have no word.
        """
        f1, n_pred, longest_ref = _rouge_l(texts, refs, use_stemmer=self.use_stemmer)
        for k in np.flatnonzero((n_pred == 0) | (longest_ref == 0)).tolist():
            if not errors[k] and n_pred[k] == 0:
                errors[k] = "the response has no word (letters a-z or digits) to compare"
            elif not errors[k] and longest_ref[k] == 0:
                errors[k] = "no reference has a word (letters a-z or digits) to compare"
        return [None if e else v for v, e in zip(f1.tolist(), errors, strict=True)]
