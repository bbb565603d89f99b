"""Ambiguity over retrieved documents: does a question retrieve other passages under another prompt?

Ganesh et al. (*Rethinking Hallucinations: Correctness, Consistency, and
Prompt Multiplicity*, section 5.2) call the share of questions that retrieve
a different document depending on the prompt *ambiguity over retrieved
documents*. Here a response's retrieved passages are the ``passages`` ids its
generation stored in its meta (see :func:`realitycheck.pipeline.generate`); two
variants of a question retrieve "the same" when the *sets* of ids are equal
(rank order aside). A response without retrieval takes no part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["retrieval_ambiguity", "retrieval_changes", "retrieved_ids"]


def retrieved_ids(meta: Any) -> frozenset[str] | None:
    """Return the ids of the passages a response's meta records, or None without retrieval."""
    if isinstance(meta, str):
        try:
            meta = json.loads(meta) if meta else {}
        except json.JSONDecodeError:
            return None
    found = meta.get("passages") if isinstance(meta, dict) else None
    if not isinstance(found, list):
        return None
    return frozenset(str(p) for p in found)


def retrieval_changes(frame: pd.DataFrame, *, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """One row per question (and ``by`` group) answered with retrieval under two or more variants.

    Args:
        frame: Responses with ``example_id``, ``prompt_variant``, ``meta`` and the ``by`` columns
            (:meth:`realitycheck.store.RunData.frame`).
        by: Columns that split the questions (default: each model on its own).

    Returns:
        ``*by, example_id, n_variants, n_distinct, changed``: how many variants
        retrieved, how many distinct passage sets they got, and whether more than one.
    """
    import pandas as pd

    ids = frame["meta"].map(retrieved_ids)
    part = frame.assign(_ids=ids)[ids.notna()]
    keys = [*by, "example_id"]
    columns = [*keys, "n_variants", "n_distinct", "changed"]
    if part.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, group in part.groupby(keys, sort=True):
        per_variant: dict[str, frozenset[str]] = {}
        for variant, found in zip(group["prompt_variant"], group["_ids"], strict=True):
            per_variant[variant] = per_variant.get(variant, frozenset()) | found
        if len(per_variant) < 2:
            continue
        distinct = len(set(per_variant.values()))
        rows.append([*key, len(per_variant), distinct, distinct > 1])
    return pd.DataFrame(rows, columns=columns)


def retrieval_ambiguity(frame: pd.DataFrame, *, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Share of questions whose retrieved passages change across prompt variants, per ``by`` group.

    Returns:
        ``*by, n_questions, n_changed, ambiguity`` (in [0, 1]), over the questions
        of :func:`retrieval_changes`.
    """
    changes = retrieval_changes(frame, by=by)
    out = changes.groupby(list(by), sort=True).agg(
        n_questions=("changed", "size"), n_changed=("changed", "sum")
    )
    out["n_changed"] = out["n_changed"].astype(int)
    out["ambiguity"] = out["n_changed"] / out["n_questions"]
    return out.reset_index()
