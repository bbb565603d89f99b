"""Responses whose generation lacked a feature the plan asked for (Contract C of issue 23).

A backend names, in ``Generation.unsupported``, what a request asked for and
the server did not give back (token log-probs, next-token alternatives, a JSON
Schema reply). The generate stage writes the cause into the response,

    response.meta["unsupported"] = {"logprobs": "<server> (model <m>) returned no 'logprobs'"}

so a detector that lacks the feature names the server instead of the backend.
Such a response is stored (its text is a real answer) but is not final: the
next run of the same generation asks for it again (the call cache never holds
such answers), as it does for generations that failed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow.compute as pc

from realitycheck.backends import Backend, Generation, server_of
from realitycheck.store import RunStore

__all__ = ["UNSUPPORTED", "lacking_responses", "unsupported_meta"]

UNSUPPORTED = "unsupported"
"""The key of ``Response.meta`` that names the features a server did not give back."""


def unsupported_meta(backend: Backend, generations: Sequence[Generation]) -> dict[str, str]:
    """Return ``{feature: cause}`` for what any of a response's generations lacked."""
    features = dict.fromkeys(f for g in generations for f in g.unsupported)
    if not features:
        return {}
    server = server_of(backend)
    return {f: f"{server} returned no {f!r}" for f in features}


def lacking_responses(store: RunStore, generation: str) -> set[str]:
    """Return the ids of the stored responses of ``generation`` that lack an asked feature.

    The rows are chosen with Arrow (the generation's id suffix, a meta that
    mentions the key); only those few have their meta parsed.
    """
    table = store.arrow("responses", columns=["response_id", "meta"])
    if not table.num_rows:
        return set()
    mine = pc.and_(
        pc.ends_with(table.column("response_id"), f"/{generation}"),
        pc.match_substring(table.column("meta").fill_null(""), f'"{UNSUPPORTED}"'),
    )
    candidates = table.filter(mine.fill_null(False))
    out = set()
    for rid, meta in zip(
        candidates.column("response_id").to_pylist(),
        candidates.column("meta").to_pylist(),
        strict=True,
    ):
        value = json.loads(meta) if isinstance(meta, str) else meta
        if isinstance(value, dict) and value.get(UNSUPPORTED):
            out.add(rid)
    return out
