"""Retrieval shared by the generate and choose stages: passages per question.

The retriever is opened once (its corpus read and checked, its index loaded
or built) and searched with every question at once; the question is the query.
Each response answered with retrieval stores ``meta["passages"]`` (the
passages' ids, best first) and ``meta["retriever"]`` (the retriever's key);
a response answered without retrieval has neither key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from realitycheck.records import Example
from realitycheck.retrievers import Passage, Retriever

__all__ = ["retrieval_meta", "retrieve"]


def retrieve(
    retriever: Retriever | None, examples: Sequence[Example]
) -> dict[str, tuple[Passage, ...]]:
    """Return each example's passages (by example id), best first; ``{}`` without a retriever.

    Raises:
        InvalidInputError: The corpus is missing, empty or has a bad line (file, line, field).
    """
    if retriever is None or not examples:
        return {}
    found = retriever.open().search([e.question for e in examples])
    return {e.example_id: passages for e, passages in zip(examples, found, strict=True)}


def retrieval_meta(retriever: Retriever | None, passage_ids: Sequence[str]) -> dict[str, Any]:
    """Return the meta keys of a response: ``passages`` and ``retriever``, or none without one."""
    if retriever is None:
        return {}
    return {"passages": list(passage_ids), "retriever": retriever.key}
