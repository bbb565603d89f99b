"""Plain files for spreadsheets and scripts: CSV and JSONL, one row per item and annotator slot.

Columns: ``item_id, response_id, round, slot, question, references, context,
response`` (``verdicts`` too when shown), then the empty ``annotator, verdict,
note`` that people fill in. With K annotators per item the file holds K rows
per item (``slot`` 1..K), slot after slot, so it can be cut into one sheet per
person. Every CSV cell goes through :func:`realitycheck.text.csv_cell`: a
cell starting like a formula gets a leading ``'`` and control characters are
shown as ``[U+XXXX]``. Reading a file back undoes that ``'`` on the id
columns only (an id is compared with the run's).
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from realitycheck.annotation._items import Item, check_annotator, read_verdict, safe_json
from realitycheck.annotation._label_studio import Annotation
from realitycheck.errors import InvalidInputError
from realitycheck.text import csv_cell

__all__ = ["PLAIN_COLUMNS", "plain_rows", "read_plain", "write_csv", "write_jsonl"]

PLAIN_COLUMNS = (
    "item_id",
    "response_id",
    "round",
    "slot",
    "question",
    "references",
    "context",
    "response",
    "annotator",
    "verdict",
    "note",
)
"""The columns of the plain files (``verdicts`` goes before ``annotator`` when shown)."""
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def plain_rows(
    items: Sequence[Item], round_id: str, *, annotators: int, show_verdicts: bool
) -> Iterator[dict[str, Any]]:
    """Yield one row per annotator slot and item (slot 1 for every item, then slot 2 …)."""
    for slot in range(1, annotators + 1):
        for item in items:
            row: dict[str, Any] = {
                "item_id": item.item_id,
                "response_id": item.response_id,
                "round": round_id,
                "slot": slot,
                "question": item.question,
                "references": list(item.references),
                "context": item.context,
                "response": item.response,
            }
            if show_verdicts:
                row["verdicts"] = item.verdict_text
            yield row | {"annotator": "", "verdict": "", "note": ""}


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write rows as CSV (references one per line in their cell), every cell made safe."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else list(PLAIN_COLUMNS))
    writer.writeheader()
    for row in rows:
        flat = {k: "\n".join(v) if isinstance(v, list) else v for k, v in row.items()}
        writer.writerow({k: csv_cell(v) for k, v in flat.items()})
    path.write_text(buffer.getvalue(), encoding="utf-8")


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write rows as JSON lines (references a list); see :func:`safe_json`."""
    path.write_text("".join(safe_json(row) + "\n" for row in rows), encoding="utf-8")


def _unprefixed(value: str) -> str:
    """An id cell without the ``'`` that :func:`csv_cell` put before a formula-like start."""
    if value.startswith("'") and value[1:].startswith(_FORMULA):
        return value[1:]
    return value


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (first line, row) of a CSV or JSONL file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInputError("not UTF-8 text.", path=path) from None
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(
                    f"not valid JSON: {exc.msg}", path=path, line=number
                ) from None
            if not isinstance(row, dict):
                raise InvalidInputError(
                    f"Each line must be a JSON object. Got {type(row).__name__}.",
                    path=path,
                    line=number,
                )
            yield number, row
        return
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in ("annotator", "verdict") if c not in header]
    if "response_id" not in header and "item_id" not in header:
        missing.insert(0, "response_id")
    if missing:
        raise InvalidInputError(
            f"The file lacks the column(s) {missing}; it must have those written by "
            f"`realitycheck annotate export` ({', '.join(PLAIN_COLUMNS)}). Got {header}.",
            path=path,
            line=1,
        )
    start = reader.line_num + 1
    try:
        for row in reader:
            yield start, row
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InvalidInputError(f"not valid CSV: {exc}", path=path, line=start) from None


def _cell(row: dict[str, Any], name: str, path: Path, line: int) -> str:
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str | int | float):
        raise InvalidInputError(
            f"must be text. Got {type(value).__name__} instead.", path=path, line=line, field=name
        )
    return str(value).strip()


def read_plain(path: str | Path) -> tuple[list[Annotation], Counter[str]]:
    """Read a filled CSV or JSONL file: one :class:`Annotation` per row with a verdict.

    A row with neither annotator nor verdict is an unused slot; a row whose
    annotator gave no verdict is counted as such. The same annotator twice on
    one item must say the same.

    Raises:
        InvalidInputError: A missing column, a verdict without an annotator,
            an unknown verdict, a bad name or contradicting rows; names the
            file, the line and the field.
    """
    path = Path(path)
    out: dict[tuple[str, str], Annotation] = {}
    skipped: Counter[str] = Counter()
    for line, row in _records(path):
        annotator = _cell(row, "annotator", path, line)
        verdict = _cell(row, "verdict", path, line)
        if not verdict:
            skipped["empty slot" if not annotator else "annotator gave no verdict"] += 1
            continue
        if not annotator:
            raise InvalidInputError(
                f"The row has the verdict {verdict!r:.40} but no annotator: fill in who gave it.",
                path=path,
                line=line,
                field="annotator",
            )
        check_annotator(annotator, path=str(path), line=line, where="annotator")
        response_id = _unprefixed(_cell(row, "response_id", path, line))
        item = _unprefixed(_cell(row, "item_id", path, line))
        if not response_id and not item:
            raise InvalidInputError(
                "The row names no item: response_id and item_id are empty.",
                path=path,
                line=line,
                field="response_id",
            )
        found = Annotation(
            item_id=item,
            response_id=response_id,
            round=_unprefixed(_cell(row, "round", path, line)),
            annotator=annotator,
            hallucinated=read_verdict(verdict, path=str(path), line=line, where="verdict"),
            verdict=verdict,
            note=_cell(row, "note", path, line),
            where=f"line {line}",
            line=line,
        )
        key = (response_id or item, annotator)
        before = out.get(key)
        if before is not None and before.hallucinated != found.hallucinated:
            raise InvalidInputError(
                f"{annotator!r} gives this item the verdict {verdict!r} here and "
                f"{before.verdict!r} at {before.where}; keep one.",
                path=path,
                line=line,
                field="verdict",
            )
        out[key] = found
    return list(out.values()), skipped
