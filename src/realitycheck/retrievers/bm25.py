r"""BM25 over a JSONL corpus, with ``bm25s``, the index cached on disk.

Scoring is Okapi BM25 (Robertson & Zaragoza, 2009, *The Probabilistic
Relevance Framework: BM25 and Beyond*) as ``bm25s`` computes it; with the
default ``method="lucene"`` a passage ``d`` scores, for the query terms ``t``::

    sum_t  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

Text is lower-cased and split into words of two or more word characters
(``\b\w\w+\b``); English stop words are dropped unless ``stopwords=False``;
no stemming. The index is saved under the cache folder in a sub-folder named
after the SHA-256 of the corpus bytes and the scoring settings, so a second
run loads it and a changed corpus (or setting) builds a new one. Arrays are
saved without pickle.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from realitycheck.errors import MissingDependencyError
from realitycheck.params import InstanceOf, Interval, OneOf, OrNone, PathLike, param, required
from realitycheck.retrievers._base import Passage, Retriever, retriever
from realitycheck.retrievers._corpus import Corpus, read_corpus

__all__ = ["BM25", "BM25Index", "default_index_dir"]

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
_SETTINGS_FILE = "realitycheck.json"


def default_index_dir() -> Path:
    """Return ``$REALITYCHECK_CACHE_DIR/bm25`` or ``~/.cache/realitycheck/bm25``.

    The same root as the call cache (``realitycheck.backends.default_cache_path``).
    """
    folder = os.environ.get("REALITYCHECK_CACHE_DIR")
    root = Path(folder) if folder else Path.home() / ".cache" / "realitycheck"
    return root / "bm25"


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError:
        raise MissingDependencyError("bm25s", extra="retrieval", purpose="BM25 retrieval") from None
    return bm25s


def _fspath_or_none(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


@retriever("bm25")
@dataclass(frozen=True, kw_only=True)
class BM25(Retriever):
    """BM25 search over a JSONL corpus of passages (``bm25s``), the index cached on disk.

    Each query (an example's question) gets its ``k`` best-scoring passages
    that share at least one term with it, best first; ties go to the passage
    earlier in the corpus. A query whose terms occur in no passage gets none.

    Args:
        corpus: The JSONL corpus: ``{"id": ..., "text": ..., "title": ...}`` per line.
        k: Passages per query.
        k1: BM25's term-frequency saturation (>= 0).
        b: BM25's length normalisation, in [0, 1].
        method: The BM25 variant of ``bm25s``: lucene, robertson, atire, bm25l or bm25+.
        stopwords: Drop English stop words from passages and queries.
        query_words: Search with the last N words of the query only (``None`` =
            all), as in-context retrieval augmentation queries with the end of a prefix.
        cache_dir: Folder of the saved indexes (``None`` = :func:`default_index_dir`).
    """

    corpus: str = required(PathLike(), convert=os.fspath)
    k: int = param(3, Interval(int, 1))
    k1: float = param(1.5, Interval(float, 0))
    b: float = param(0.75, Interval(float, 0, 1))
    method: str = param("lucene", OneOf(METHODS))
    stopwords: bool = param(True, InstanceOf(bool))
    query_words: int | None = param(None, OrNone(Interval(int, 1)))
    cache_dir: str | None = param(None, OrNone(PathLike()), convert=_fspath_or_none, in_key=False)
    version: ClassVar[str] = "1"

    def settings(self) -> dict[str, Any]:
        """Return what the index depends on besides the corpus bytes (part of its folder name)."""
        return {
            "k1": float(self.k1),
            "b": float(self.b),
            "method": self.method,
            "stopwords": "en" if self.stopwords else None,
            "bm25s": _bm25s().__version__,
            "format": self.version,
        }

    def index_folder(self, corpus: Corpus) -> Path:
        """Return the folder of the index of ``corpus`` under these settings."""
        text = json.dumps(self.settings(), sort_keys=True)
        tag = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        root = Path(self.cache_dir) if self.cache_dir is not None else default_index_dir()
        return root / f"{corpus.sha256[:24]}-{tag}"

    def open(self) -> BM25Index:
        """Read the corpus, then load its saved index or build and save one.

        Raises:
            InvalidInputError: The corpus is missing, empty or has a bad line (file, line, field).
            MissingDependencyError: ``bm25s`` is not installed (extra ``retrieval``).
        """
        corpus = read_corpus(self.corpus)
        folder = self.index_folder(corpus)
        expected = {"corpus_sha256": corpus.sha256, "passages": len(corpus.passages)}
        expected |= {"settings": self.settings()}
        model = _load(folder, expected)
        built = model is None
        if model is None:
            model = self._build(corpus, folder, expected)
        return BM25Index(
            passages=corpus.passages,
            model=model,
            k=self.k,
            stopwords=self.stopwords,
            query_words=self.query_words,
            folder=folder,
            built=built,
        )

    def _build(self, corpus: Corpus, folder: Path, expected: dict[str, Any]) -> Any:
        from realitycheck.store import atomic_folder  # the store loads pyarrow

        bm25s = _bm25s()
        tokens = bm25s.tokenize(
            [p.text for p in corpus.passages],
            stopwords="en" if self.stopwords else None,
            show_progress=False,
        )
        model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        model.index(tokens, show_progress=False)
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:  # a stale or damaged index is replaced whole by the new one
            with atomic_folder(folder) as staging:
                model.save(str(staging), show_progress=False)
                (staging / _SETTINGS_FILE).write_text(json.dumps(expected, sort_keys=True), "utf-8")
        except OSError:
            if not _holds(folder, expected):
                raise
            # else another process saved the same index first: keep that one
        return model


def _holds(folder: Path, expected: dict[str, Any]) -> bool:
    """Whether ``folder`` holds an index saved with the settings ``expected``."""
    try:
        saved = json.loads((folder / _SETTINGS_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return bool(saved == json.loads(json.dumps(expected, sort_keys=True)))


def _load(folder: Path, expected: dict[str, Any]) -> Any | None:
    """Return the saved index in ``folder`` when it matches ``expected``, else None."""
    if not _holds(folder, expected):
        return None
    try:
        return _bm25s().BM25.load(str(folder), show_progress=False)
    except (OSError, ValueError, KeyError):
        return None


@dataclass(frozen=True, kw_only=True, eq=False)
class BM25Index:
    """An opened BM25 retriever: the passages and their index.

    Attributes:
        passages: The corpus, in file order.
        model: The ``bm25s.BM25`` index.
        k: Passages per query.
        stopwords: Whether English stop words are dropped from queries.
        query_words: Search with the last N words of each query (None = all).
        folder: Where the index is saved.
        built: Whether it was built now (False: loaded from ``folder``).
    """

    passages: tuple[Passage, ...]
    model: Any
    k: int
    stopwords: bool
    query_words: int | None
    folder: Path
    built: bool

    def scores(self, query: str) -> np.ndarray:
        """Return the BM25 score of every passage for ``query`` (corpus order)."""
        words = query.split()
        if self.query_words is not None:
            words = words[-self.query_words :]
        tokens = _bm25s().tokenize(
            [" ".join(words)],
            stopwords="en" if self.stopwords else None,
            return_ids=False,
            show_progress=False,
        )[0]
        if not tokens:
            return np.zeros(len(self.passages), dtype=float)
        return np.asarray(self.model.get_scores(tokens), dtype=float)

    def search(self, queries: Sequence[str]) -> list[tuple[Passage, ...]]:
        """Return, per query, its ``k`` best passages with a positive score, best first."""
        out = []
        for query in queries:
            scores = self.scores(query)
            ranked = _top(scores, self.k)
            out.append(
                tuple(
                    Passage(
                        passage_id=self.passages[i].passage_id,
                        text=self.passages[i].text,
                        title=self.passages[i].title,
                        score=float(scores[i]),
                    )
                    for i in ranked
                )
            )
        return out


def _top(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` highest positive scores, ties broken by corpus order (O(N))."""
    positive = np.flatnonzero(scores > 0)
    if positive.size > k:
        kth = np.partition(scores[positive], positive.size - k)[positive.size - k]
        above = positive[scores[positive] > kth]
        tied = positive[scores[positive] == kth][: k - above.size]
        positive = np.concatenate([above, tied])
    order = np.lexsort((positive, -scores[positive]))
    return [int(i) for i in positive[order]]
