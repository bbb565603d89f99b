"""Lexical grounding detectors: words and numbers of the response missing from the source.

Both read the example's ``context`` (the source passages, article or data) and
score what the response says that the source does not: a response copied from
its source scores 0, one full of invented words or numbers scores high.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from realitycheck.detectors._base import Detector, RunContext, detector
from realitycheck.params import Interval, OneOf, param
from realitycheck.records import Response, Score
from realitycheck.text import STOPWORDS, extract_numbers, words

if TYPE_CHECKING:
    import pyarrow as pa

    from realitycheck.store import ResponseBatch

__all__ = ["NovelNumbers", "SourceOverlap"]

Measure = Literal["count", "share"]


_NO_CONTEXT = "the example has no context"


class _PerContext:
    """Caches a set computed from each distinct context (sources repeat)."""

    def __init__(self, build: Callable[[str], frozenset[object]]) -> None:
        self._build = build
        self._cache: dict[str, frozenset[object]] = {}

    def __call__(self, context: str) -> frozenset[object]:
        found = self._cache.get(context)
        if found is None:
            found = self._cache[context] = self._build(context)
        return found


def _ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    """Return the word n-grams of ``text`` that hold at least one content word."""
    tokens = words(text)
    if n == 1:  # the same grams, without a slice and a subset test per word
        return [(w,) for w in tokens if w not in STOPWORDS]
    grams = (tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return [g for g in grams if not STOPWORDS.issuperset(g)]  # some word is a content word


@dataclass(frozen=True, kw_only=True)
class _Grounding(Detector):
    """A detector whose value compares each response's text with its example's context.

    Subclasses implement :meth:`values`; both paths use it: the record path
    (:meth:`score`) and the detect stage's columnar path (:meth:`score_batch`,
    the batch's text and context columns, no record per response).
    """

    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def score(self, responses: Sequence[Response], run: RunContext) -> list[Score]:
        """Return one score per response, in order."""
        return _scores(self, responses, run)

    def score_batch(self, batch: ResponseBatch, run: RunContext) -> pa.Table:
        """Return the scores of :meth:`score`, from the batch's columns (no record per response)."""
        return _score_table(self, batch)

    def values(
        self, texts: Sequence[str], contexts: Sequence[str]
    ) -> tuple[list[float | None], list[str]]:
        """Return each text's value against its context (``None`` where it has an error)."""
        raise NotImplementedError


@detector("source_overlap")
@dataclass(frozen=True, kw_only=True)
class SourceOverlap(_Grounding):
    """Share of the response's content n-grams that do not occur in the context.

    Words are :func:`realitycheck.text.words` (lowercased letters and digits);
    an n-gram of consecutive words counts when at least one of its words is
    not a stopword (for ``n=1``: the content words). ``value`` is the number
    of such n-gram occurrences absent from the context's n-grams divided by
    their total, in [0, 1]: 0 when every one is in the context, higher = more
    unsupported wording = more likely hallucinated. Words are compared exactly
    (no stemming, no synonyms). A response without any such n-gram, or an
    example without context, gets ``value=None`` and an error.

    Args:
        n: The n-gram size, an int >= 1.
    """

    n: int = param(1, Interval(int, 1))

    def values(
        self, texts: Sequence[str], contexts: Sequence[str]
    ) -> tuple[list[float | None], list[str]]:
        """Each text's share of novel n-grams against its context (``None``: see the error)."""
        source = _PerContext(lambda text: frozenset(_ngrams(text, self.n)))
        what = "content word" if self.n == 1 else f"{self.n}-gram with a content word"
        values: list[float | None] = []
        errors: list[str] = []
        for text, context in zip(texts, contexts, strict=True):
            grams = _ngrams(text, self.n) if context.strip() else []
            error = _NO_CONTEXT if not context.strip() else ""
            if not error and not grams:
                error = f"the response has no {what}"
            errors.append(error)
            if error:
                values.append(None)
                continue
            known = source(context)
            values.append(sum(g not in known for g in grams) / len(grams))
        return values, errors


@detector("novel_numbers")
@dataclass(frozen=True, kw_only=True)
class NovelNumbers(_Grounding):
    """Numbers in the response that do not occur in the context.

    Numbers are read and normalised by :func:`realitycheck.text.extract_numbers`
    (digits only; ``1,000`` equals ``1000``, ``5.0`` equals ``5``; number words
    are not read). With ``measure="count"`` ``value`` is how many number
    occurrences of the response are absent from the context (0, 1, 2…); with
    ``measure="share"`` it is that count divided by the number of number
    occurrences in the response, in [0, 1], and 0 for a response without
    numbers. Higher = more unsupported numbers = more likely hallucinated. An
    example without context gets ``value=None`` and an error.

    Args:
        measure: ``count`` or ``share``.
    """

    measure: Measure = param("count", OneOf(Measure))

    def values(
        self, texts: Sequence[str], contexts: Sequence[str]
    ) -> tuple[list[float | None], list[str]]:
        """Each text's novel numbers against its context (``None``: see the error)."""
        source = _PerContext(lambda text: frozenset(extract_numbers(text)))
        values: list[float | None] = []
        errors: list[str] = []
        for text, context in zip(texts, contexts, strict=True):
            if not context.strip():
                values.append(None)
                errors.append(_NO_CONTEXT)
                continue
            numbers = extract_numbers(text)
            known = source(context)
            novel = sum(x not in known for x in numbers)
            if self.measure == "share":
                values.append(novel / len(numbers) if numbers else 0.0)
            else:
                values.append(float(novel))
            errors.append("")
        return values, errors


def _scores(owner: _Grounding, responses: Sequence[Response], run: RunContext) -> list[Score]:
    """The scores of :meth:`values` on records; an example not given gets its own error."""
    found = [run.examples.get(r.example_id) for r in responses]
    contexts = ["" if e is None else e.context for e in found]
    values, errors = owner.values([r.text for r in responses], contexts)
    out = []
    for response, example, value, error in zip(responses, found, values, errors, strict=True):
        if example is None:
            value, error = None, f"example {response.example_id!r} was not given"
        out.append(owner._score(response, value, error=error))
    return out


def _score_table(owner: _Grounding, batch: ResponseBatch) -> pa.Table:
    """The scores of :meth:`values` on a batch's text and context columns, as one table."""
    from realitycheck.store import score_table

    contexts = [c or "" for c in batch.example_values("context")]
    values, errors = owner.values(batch.column("text").to_pylist(), contexts)
    present = np.array([v is not None for v in values], dtype=bool)
    value = np.asarray(values, dtype=np.float64)  # None reads as NaN
    ids = batch.column("response_id")
    return score_table(owner.key, owner.spec_json, ids, value=value, present=present, error=errors)
