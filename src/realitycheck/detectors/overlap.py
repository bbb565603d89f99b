"""Lexical grounding detectors: words and numbers of the response missing from the source.

Both read the example's ``context`` (the source passages, article or data) and
score what the response says that the source does not: a response copied from
its source scores 0, one full of invented words or numbers scores high.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from realitycheck.detectors._base import Detector, Needs, detector
from realitycheck.params import Interval, OneOf, param
from realitycheck.records import Example, Response, Score
from realitycheck.text import STOPWORDS, extract_numbers, words

__all__ = ["NovelNumbers", "SourceOverlap"]

Measure = Literal["count", "share"]


def _context_of(response: Response, examples: Mapping[str, Example]) -> tuple[str | None, str]:
    example = examples.get(response.example_id)
    if example is None:
        return None, f"example {response.example_id!r} was not given"
    if not example.context.strip():
        return None, "the example has no context"
    return example.context, ""


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


@detector("source_overlap")
@dataclass(frozen=True, kw_only=True)
class SourceOverlap(Detector):
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
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def score(self, responses: Sequence[Response], needs: Needs) -> list[Score]:
        """Return one score per response, in order."""
        source = _PerContext(lambda text: frozenset(_ngrams(text, self.n)))
        out = []
        for response in responses:
            context, error = _context_of(response, needs.examples)
            if context is None:
                out.append(self._score(response, None, error=error))
                continue
            grams = _ngrams(response.text, self.n)
            if not grams:
                what = "content word" if self.n == 1 else f"{self.n}-gram with a content word"
                out.append(self._score(response, None, error=f"the response has no {what}"))
                continue
            known = source(context)
            novel = sum(g not in known for g in grams)
            out.append(self._score(response, novel / len(grams)))
        return out


@detector("novel_numbers")
@dataclass(frozen=True, kw_only=True)
class NovelNumbers(Detector):
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
    needs: ClassVar[frozenset[str]] = frozenset({"context"})

    def score(self, responses: Sequence[Response], needs: Needs) -> list[Score]:
        """Return one score per response, in order."""
        source = _PerContext(lambda text: frozenset(extract_numbers(text)))
        out = []
        for response in responses:
            context, error = _context_of(response, needs.examples)
            if context is None:
                out.append(self._score(response, None, error=error))
                continue
            numbers = extract_numbers(response.text)
            known = source(context)
            novel = sum(x not in known for x in numbers)
            if self.measure == "share":
                out.append(self._score(response, novel / len(numbers) if numbers else 0.0))
            else:
                out.append(self._score(response, float(novel)))
        return out
