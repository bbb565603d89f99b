"""Reading annotation files and pairing each verdict with a response of the run.

A file's format is its suffix: ``.json`` a Label Studio JSON export
(:mod:`._label_studio`), ``.csv`` / ``.jsonl`` a filled sheet (:mod:`._plain`).
An item belongs to the run when its response is one of the run's, its round
(if the file names one) was exported from this run with that response in it,
and its item id (if given) is that of its response.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from realitycheck.annotation._export import recorded_rounds
from realitycheck.annotation._items import item_id
from realitycheck.annotation._label_studio import Annotation, read_label_studio
from realitycheck.annotation._plain import read_plain
from realitycheck.errors import InvalidInputError
from realitycheck.store import RunStore

__all__ = ["FileRead", "read_source", "resolve"]

_FORMATS = {".json": "label-studio", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True)
class FileRead:
    """One imported file: its format, SHA-256, annotations read and what was left out."""

    path: Path
    format: str
    sha256: str
    annotations: int
    skipped: dict[str, int]


def read_source(path: Path) -> tuple[str, str, list[Annotation], Counter[str]]:
    """Return a file's format, SHA-256, annotations and counts of what was left out.

    Raises:
        InvalidInputError: An unknown suffix, a missing file, or a malformed one.
    """
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InvalidInputError(
            "An annotation file must be a Label Studio JSON export (.json), or a CSV (.csv) or "
            f"JSONL (.jsonl) file written by `annotate export`. Got {path.suffix or 'no suffix'}.",
            path=path,
        )
    if not path.is_file():
        raise InvalidInputError("There is no such file.", path=path)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    found, skipped = read_label_studio(path) if fmt == "label-studio" else read_plain(path)
    return fmt, sha, found, skipped


def resolve(
    store: RunStore, path: Path, found: list[Annotation]
) -> tuple[list[tuple[str, Annotation]], list[str]]:
    """Pair each annotation with its response id; say (file, where, why) for the others."""
    responses = set(store.arrow("responses", columns=["response_id"]).column(0).to_pylist())
    rounds = recorded_rounds(store)
    members = {r: set(v.get("response_ids") or []) for r, v in rounds.items()}
    by_item = {item_id(rid): rid for ids in members.values() for rid in ids}
    ok, foreign = [], []
    for a in found:
        rid = a.response_id or by_item.get(a.item_id, "")
        if a.item_id and rid and item_id(rid) != a.item_id:
            raise InvalidInputError(
                f"The item id {a.item_id!r} is not that of the response {rid!r} (expected "
                f"{item_id(rid)!r}): the row was changed after export.",
                path=path,
                line=a.line,
                field=a.where if a.line is None else "item_id",
            )
        if not rid or rid not in responses:
            why = f"response {rid or a.item_id!r} is not in this run"
        elif a.round and a.round not in rounds:
            why = f"round {a.round!r} was not exported from this run"
        elif a.round and rid not in members[a.round]:
            why = f"response {rid!r} is not an item of round {a.round!r}"
        else:
            ok.append((rid, a))
            continue
        foreign.append(f"{path.name}, {a.where}: {why}")
    return ok, foreign
