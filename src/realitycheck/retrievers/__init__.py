"""Retrievers: search a user's corpus for passages to prepend to a prompt.

Each module registers its retriever with the :func:`retriever` decorator
(``bm25``). A sampling plan holds a retriever (``retriever=bm25[corpus=...]``)
to answer with retrieved passages in the prompt (see
:mod:`realitycheck.generation`); :func:`prepend_passages` writes them as
in-context retrieval augmentation does.
"""

from realitycheck.retrievers._base import Passage, Retriever, SearchIndex, retriever, retrievers
from realitycheck.retrievers._corpus import Corpus, read_corpus
from realitycheck.retrievers._prompt import PASSAGES_TEMPLATE, format_passages, prepend_passages

__all__ = [
    "PASSAGES_TEMPLATE",
    "Corpus",
    "Passage",
    "Retriever",
    "SearchIndex",
    "format_passages",
    "prepend_passages",
    "read_corpus",
    "retriever",
    "retrievers",
]
