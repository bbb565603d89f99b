"""The retriever protocol: a corpus of passages, searched for the passages a prompt quotes.

A retriever is a component (its key names the corpus and every setting); its
one verb is :meth:`Retriever.open`, which reads the corpus and loads (or
builds) the index, and returns a :class:`SearchIndex` whose
:meth:`~SearchIndex.search` answers many queries at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from realitycheck.registry import Component, Registry

__all__ = ["Passage", "Retriever", "SearchIndex", "retriever", "retrievers"]


@dataclass(frozen=True, kw_only=True)
class Passage:
    """One passage of a corpus, as found for a query.

    Attributes:
        passage_id: The corpus line's ``id`` (an integer id is written as text).
        text: The passage.
        title: Its title, ``""`` when the line has none.
        score: The retriever's relevance score for the query (higher = more relevant).
    """

    passage_id: str
    text: str
    title: str = ""
    score: float = 0.0


class SearchIndex(Protocol):
    """An opened retriever: the corpus and its index, ready to answer queries."""

    def search(self, queries: Sequence[str]) -> list[tuple[Passage, ...]]:
        """Return the passages found for each query, most relevant first."""
        ...


@dataclass(frozen=True, kw_only=True)
class Retriever(Component):
    """A search over a corpus of passages. Subclasses implement :meth:`open`."""

    family: ClassVar[str] = "retrievers"

    def open(self) -> SearchIndex:
        """Read the corpus and load or build the index (implemented by each retriever)."""
        raise NotImplementedError


retrievers: Registry[Retriever] = Registry("retrievers", "realitycheck.retrievers")
retriever = retrievers.register
