"""Label Studio: the labeling configuration, the tasks to import, and its JSON export.

The configuration shows the question, references, context and response as
plain ``Text`` tags (Label Studio shows them as text, never as HTML) and asks
one ``Choices`` control, ``verdict``, for Hallucinated / Faithful / Can't
tell, with an optional ``note``. It is built with :mod:`xml.etree`, so any
text placed in it (the instructions) is XML-escaped.

A task is ``{"data": {...}}`` with the item's ``item_id``, ``response_id``
and ``round``; Label Studio keeps ``data`` as given and returns it in its
export. Its JSON export (Export → JSON, or ``GET
/api/projects/<id>/export?exportType=JSON``) is a list of tasks, each with
``annotations``: ``completed_by`` (a user id, or an object with ``id`` and
``email``), ``result`` (one entry per control: ``{"from_name": "verdict",
"type": "choices", "value": {"choices": ["Faithful"]}}``), ``was_cancelled``
(a skipped task) and ``updated_at``. Label Studio 1.23 exports
``completed_by`` as the user's id: the annotator is then named ``user<id>``
(an export that gives the e-mail is named by it).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realitycheck.annotation._items import (
    VERDICT_CHOICES,
    Item,
    check_annotator,
    read_verdict,
    safe_json,
)
from realitycheck.errors import InvalidInputError

__all__ = [
    "NOTE",
    "VERDICT",
    "Annotation",
    "label_studio_tasks",
    "labeling_config",
    "read_label_studio",
]

VERDICT = "verdict"
"""The name of the ``Choices`` control (``from_name`` in the export)."""
NOTE = "note"
"""The name of the optional ``TextArea`` (``from_name`` in the export)."""
_FIELDS = (
    ("question", "Question"),
    ("references", "References"),
    ("context", "Context"),
    ("response", "Response"),
)


@dataclass(frozen=True)
class Annotation:
    """One annotator's verdict on one item, as read from a file.

    Attributes:
        item_id: The item's id (empty when the file gave none).
        response_id: The response the item shows.
        round: The export round the item came from (empty when the file gave none).
        annotator: Who gave the verdict.
        hallucinated: True, False, or None (the annotator could not tell).
        verdict: The verdict as written.
        note: The annotator's note.
        where: Where in the file (``line 4``, ``task 2, annotation 1``), for messages.
        line: The line (CSV, JSONL), or None.
    """

    item_id: str
    response_id: str
    round: str
    annotator: str
    hallucinated: bool | None
    verdict: str
    note: str
    where: str
    line: int | None = None


def labeling_config(*, show_verdicts: bool = False, instructions: str = "") -> str:
    """Return the Label Studio labeling configuration (XML) for exported items.

    Args:
        show_verdicts: Also show the automatic verdicts (``$verdicts``).
        instructions: A line of guidance shown above the item (escaped).
    """
    view = ET.Element("View")
    if instructions:
        ET.SubElement(view, "Header", value=instructions, size="5")
    fields = [*_FIELDS, ("verdicts", "Automatic verdicts")] if show_verdicts else _FIELDS
    for name, title in fields:
        ET.SubElement(view, "Header", value=title, size="6")
        ET.SubElement(view, "Text", name=name, value=f"${name}")
    choices = ET.SubElement(
        view,
        "Choices",
        name=VERDICT,
        toName="response",
        choice="single",
        showInline="true",
        required="true",
    )
    for choice in VERDICT_CHOICES:
        ET.SubElement(choices, "Choice", value=choice)
    ET.SubElement(
        view,
        "TextArea",
        name=NOTE,
        toName="response",
        placeholder="Note (optional)",
        maxSubmissions="1",
        editable="true",
    )
    ET.indent(view)
    return ET.tostring(view, encoding="unicode") + "\n"


def label_studio_tasks(items: Sequence[Item], round_id: str, *, show_verdicts: bool) -> str:
    """Return the tasks of ``items`` as Label Studio import JSON (a list of ``{"data": …}``)."""
    tasks = []
    for item in items:
        data = {
            "item_id": item.item_id,
            "response_id": item.response_id,
            "round": round_id,
            "question": item.question,
            "references": "\n".join(item.references),
            "context": item.context,
            "response": item.response,
        }
        if show_verdicts:
            data["verdicts"] = item.verdict_text
        tasks.append({"data": data})
    return safe_json(tasks, indent=1) + "\n"


def _error(path: Path, where: str, message: str) -> InvalidInputError:
    return InvalidInputError(message, path=path, field=where)


def _annotator(value: Any, path: Path, where: str) -> str:
    """The annotator of ``completed_by``: its e-mail, else ``user<id>``."""
    if isinstance(value, dict):
        email = value.get("email")
        if isinstance(email, str) and email:
            return check_annotator(email, path=str(path), line=None, where=where)
        value = value.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        return f"user{value}"
    raise _error(
        path,
        where,
        f"completed_by must be a user id or an object with an id or e-mail. Got {value!r:.80}.",
    )


def _text(result: Sequence[Any], name: str, kind: str, path: Path, where: str) -> list[str]:
    """The values of the ``name`` control in an annotation's ``result`` (``choices`` / ``text``)."""
    out: list[str] = []
    for k, entry in enumerate(result):
        if not isinstance(entry, dict) or entry.get("from_name") != name:
            continue
        value = entry.get("value")
        values = value.get(kind) if isinstance(value, dict) else None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise _error(
                path,
                f"{where}.result[{k}].value.{kind}",
                f"must be a list of strings. Got {values!r:.80} instead.",
            )
        out.extend(values)
    return out


def _task_ids(task: dict[str, Any], path: Path, where: str) -> tuple[str, str, str]:
    data = task.get("data")
    if not isinstance(data, dict):
        raise _error(path, f"{where}.data", "must be an object holding the exported item.")
    response_id = data.get("response_id")
    if not isinstance(response_id, str) or not response_id:
        raise _error(
            path,
            f"{where}.data.response_id",
            "must be the response id written by `realitycheck annotate export`. "
            f"Got {response_id!r:.80} instead.",
        )
    return str(data.get("item_id") or ""), response_id, str(data.get("round") or "")


def read_label_studio(path: str | Path) -> tuple[list[Annotation], Counter[str]]:
    """Read a Label Studio JSON export: one :class:`Annotation` per annotator and task.

    Cancelled (skipped) annotations and annotations without a verdict are
    left out and counted. When one annotator annotated a task twice, the one
    updated last counts (the other is counted as ``replaced``).

    Returns:
        The annotations, and counts of what was left out.

    Raises:
        InvalidInputError: The file is not a Label Studio JSON export; names
            the file, the task (by position) and the field.
    """
    path = Path(path)
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except UnicodeDecodeError:
        raise InvalidInputError("not UTF-8 text.", path=path) from None
    if not isinstance(tasks, list):
        raise InvalidInputError(
            "A Label Studio JSON export is a list of tasks (Export -> JSON). Got a "
            f"{type(tasks).__name__} instead.",
            path=path,
        )
    skipped: Counter[str] = Counter()
    latest: dict[tuple[str, str], tuple[str, Annotation]] = {}
    for t, task in enumerate(tasks):
        where = f"tasks[{t}]"
        if not isinstance(task, dict) or "annotations" not in task:
            raise _error(
                path,
                where,
                "A task of a Label Studio JSON export is an object with 'data' and "
                "'annotations' (a JSON-MIN or CSV export has neither: export as JSON).",
            )
        item, response_id, round_id = _task_ids(task, path, where)
        annotations = task["annotations"]
        if not isinstance(annotations, list):
            raise _error(path, f"{where}.annotations", "must be a list.")
        for a, annotation in enumerate(annotations):
            at = f"{where}.annotations[{a}]"
            if not isinstance(annotation, dict):
                raise _error(path, at, "must be an object.")
            if annotation.get("was_cancelled"):
                skipped["cancelled (skipped by the annotator)"] += 1
                continue
            annotator = _annotator(annotation.get("completed_by"), path, f"{at}.completed_by")
            result = annotation.get("result")
            if not isinstance(result, list):
                raise _error(path, f"{at}.result", "must be a list.")
            choices = _text(result, VERDICT, "choices", path, at)
            if not choices:
                skipped["without a verdict"] += 1
                continue
            if len(choices) > 1:
                raise _error(
                    path, f"{at}.result", f"must hold one verdict. Got {choices!r:.80} instead."
                )
            verdict = read_verdict(choices[0], path=str(path), line=None, where=f"{at}.result")
            found = Annotation(
                item_id=item,
                response_id=response_id,
                round=round_id,
                annotator=annotator,
                hallucinated=verdict,
                verdict=choices[0],
                note="\n".join(_text(result, NOTE, "text", path, at)),
                where=f"task {t}, annotation {a}",
            )
            stamp = str(annotation.get("updated_at") or annotation.get("created_at") or "")
            key = (response_id, annotator)
            if key in latest:
                skipped["replaced by the same annotator's later annotation"] += 1
                if stamp < latest[key][0]:
                    continue
            latest[key] = (stamp, found)
    return [found for _, found in latest.values()], skipped
