"""Reading a corpus: one JSON object per line, ``{"id": ..., "text": ..., "title": ...}``.

``id`` is a string or an integer (kept as text), unique in the file; ``text``
is a non-empty string; ``title`` is optional (a string). Blank lines are
skipped. Every mistake names the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from realitycheck.errors import InvalidInputError
from realitycheck.retrievers._base import Passage

__all__ = ["Corpus", "read_corpus"]

_FIELDS = ("id", "text", "title")


@dataclass(frozen=True)
class Corpus:
    """The passages of a corpus file and the SHA-256 of its bytes (the index cache key)."""

    path: Path
    sha256: str
    passages: tuple[Passage, ...]


def _passage(item: object, path: Path, line: int, seen: dict[str, int]) -> Passage:
    if not isinstance(item, dict):
        raise InvalidInputError(
            f"Each corpus line must be a JSON object. Got {type(item).__name__} instead.",
            path=path,
            line=line,
        )
    unknown = sorted(set(item) - set(_FIELDS))
    if unknown:
        raise InvalidInputError(
            f"Unknown key {unknown[0]!r}; a corpus line holds {', '.join(_FIELDS)}.",
            path=path,
            line=line,
            field=unknown[0],
        )
    raw_id = item.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or str(raw_id) == "":
        raise InvalidInputError(
            f"Each passage needs an id (a non-empty string or an integer). Got {raw_id!r} instead.",
            path=path,
            line=line,
            field="id",
        )
    passage_id = str(raw_id)
    if passage_id in seen:
        raise InvalidInputError(
            f"The passage id {passage_id!r} is already used on line {seen[passage_id]}.",
            path=path,
            line=line,
            field="id",
        )
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        got = "nothing" if text is None else repr(text)
        raise InvalidInputError(
            f"Each passage needs a text (a non-empty string). Got {got} instead.",
            path=path,
            line=line,
            field="text",
        )
    title = item.get("title", "")
    if not isinstance(title, str):
        raise InvalidInputError(
            f"A passage title must be a string. Got {title!r} instead.",
            path=path,
            line=line,
            field="title",
        )
    seen[passage_id] = line
    return Passage(passage_id=passage_id, text=text, title=title)


def read_corpus(path: str | Path) -> Corpus:
    """Read and check a JSONL corpus.

    Raises:
        InvalidInputError: The file is missing, not UTF-8, empty, or a line is not a
            JSON object with a unique ``id`` and a non-empty ``text`` (file, line, field).
    """
    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise InvalidInputError("The corpus file does not exist.", path=file) from None
    except OSError as exc:
        raise InvalidInputError(f"The corpus file cannot be read: {exc}", path=file) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInputError("The corpus must be UTF-8 text.", path=file, line=line) from None
    passages: list[Passage] = []
    seen: dict[str, int] = {}
    for number, row in enumerate(text.splitlines(), start=1):
        if not row.strip():
            continue
        try:
            item = json.loads(row)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"The line is not valid JSON: {exc.msg} (column {exc.colno}).",
                path=file,
                line=number,
            ) from None
        passages.append(_passage(item, file, number, seen))
    if not passages:
        raise InvalidInputError(
            "The corpus holds no passage; it needs at least one JSON line "
            '{"id": ..., "text": ...}.',
            path=file,
        )
    return Corpus(file, hashlib.sha256(data).hexdigest(), tuple(passages))
