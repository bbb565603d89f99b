"""Which column of a user's file holds each field of the ``files`` dataset.

Each field (``question``, ``model``, ...) reads the column ``columns`` maps it
to, else the column of the same name when the file has one; a column a path
placeholder or a side file adds is a column like any other here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from realitycheck.datasets import cell_text, delimiter_hint
from realitycheck.datasets.files._judges import judge_parts
from realitycheck.datasets.files._shapes import answer_parts, answers_fixed
from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.params import Constraint, as_tuple

if TYPE_CHECKING:
    from realitycheck.datasets.files import Files

__all__ = [
    "FIELDS",
    "ColumnEntries",
    "column_entries",
    "column_mapping",
    "constant_fields",
    "label_values",
    "texts",
]

FIELDS = ("example_id", "response_id", "question", "context", "references", "model", "task")
"""Fields that ``columns`` can map; each defaults to the column of the same name, if any."""


def texts(value: Any) -> Any:
    """Normalise column names: one name or a list, each as text."""
    items = as_tuple(value)
    return tuple(str(v) for v in items) if isinstance(items, tuple) else value


def label_values(value: Any) -> Any:
    """Normalise label values as cells compare (lower-cased text, ``1`` for ``1.0``)."""
    items = as_tuple(value)
    return tuple(cell_text(v) or "" for v in items) if isinstance(items, tuple) else value


def column_entries(value: Any) -> Any:
    """Normalise a field-to-column mapping to ``field:column`` entries, in FIELDS order.

    A table (mapping) or ``field:column`` strings; anything else is left for
    the constraint to refuse. Unknown fields are kept, last, for the same reason.
    """
    if isinstance(value, Mapping):
        pairs = [(str(k), str(v)) for k, v in value.items()]
    else:
        items = texts(value)
        if not isinstance(items, tuple) or any(":" not in item for item in items):
            return value
        pairs = [(k, v) for k, v in (item.split(":", 1) for item in items)]
    mapping = {k.strip(): v.strip() for k, v in pairs}
    known = [f"{k}:{mapping[k]}" for k in FIELDS if k in mapping]
    return (*known, *(f"{k}:{v}" for k, v in mapping.items() if k not in FIELDS))


class ColumnEntries(Constraint):
    """``field:column`` entries whose fields are among :data:`FIELDS`."""

    def accepts(self, value: Any) -> bool:
        """Return whether every entry maps a known field."""
        return isinstance(value, tuple) and all(
            isinstance(e, str) and e.split(":", 1)[0] in FIELDS and ":" in e for e in value
        )

    def describe(self) -> str:
        """Return the accepted shape and fields."""
        return (
            f"field:column entries or a table mapping fields among {FIELDS} to columns "
            "(text and label have their own parameters)"
        )

    def hint(self, value: Any) -> str:
        """Return "Did you mean ...?" for the first unknown field."""
        entries = column_entries(value)
        if not isinstance(entries, tuple):
            return ""
        for entry in entries:
            key = str(entry).split(":", 1)[0]
            if key in ("text", "label"):
                return f"Name the {key} column with the {key!r} parameter."
            if key not in FIELDS:
                close = difflib.get_close_matches(key, FIELDS, n=1)
                return f"Did you mean {close[0]!r} for {key!r}?" if close else ""
        return ""


_DOTTED = ("label", "sentences", "text", "question", "context", "references")
"""Fields whose column may be dotted (``claims.label``): one key of each object in a list."""


def constant_fields(owner: Files) -> set[str]:
    """Return the fields that ``constants`` sets for every row."""
    return {c.split(":", 1)[0] for c in owner.constants}


def column_mapping(owner: Files, available: list[str], path: Path) -> dict[str, str]:
    """Return field -> column for every field that ``owner`` reads, checking the columns exist.

    A dotted column (``sentences.sentence``) of a prose or label field reads one
    key of each object in a list cell; it needs only its first part in the file.

    Raises:
        InvalidInputError: A named column is not in the file (with a close match),
            or no column holds the response text.
    """
    explicit = {"text": owner.text}
    fixed = answers_fixed(owner.answers)  # answers carry their labels
    label = owner.label
    unlabelled = not (label or owner.sentences or owner.annotators or fixed)
    if unlabelled and "label" in available and "label" not in constant_fields(owner):
        label = ("label",)
    if len(label) == 1:
        explicit["label"] = label[0]
    else:
        explicit.update({f"label:{c}": c for c in label})
    explicit.update({f"sentences:{c}": c for c in owner.sentences})
    explicit.update({f"human:{c}": c for c in owner.annotators})
    explicit.update(dict(c.split(":", 1) for c in owner.columns))
    explicit.update({f"score:{c}": c for c in owner.scores})
    explicit.update({f"judge:{n}": c for n, c in map(judge_parts, owner.judges)})
    explicit.update({f"sample:{c}": c for c in owner.samples})
    explicit.update({f"meta:{c}": c for c in owner.meta})
    for column, _, model in map(answer_parts, owner.answers):
        explicit[f"answer:{column}"] = column
        explicit[f"answer_model:{column}"] = model
    mapping = {}
    for field, column in explicit.items():
        if not column:
            continue
        listed = field.split(":", 1)[0] in _DOTTED and "." in column
        if column not in available and not (listed and column.split(".")[0] in available):
            hint = did_you_mean(column, available)
            hint = delimiter_hint(available) or hint
            raise InvalidInputError(
                f"The column {column!r} (for {field}) is not in the file.{hint} "
                f"Available: {', '.join(available) or 'none'}.",
                path=path,
                field=column,
            )
        mapping[field] = column
    constant = constant_fields(owner)
    for field in ("text", *FIELDS):
        if field not in mapping and field in available and field not in constant:
            mapping[field] = field
    if owner.answers:
        mapping.pop("text", None)
        labelled = any(f.split(":")[0] in ("label", "human", "sentences") for f in mapping)
        if not fixed and not labelled:
            raise InvalidInputError(
                "The answers have no label: write column:faithful or column:hallucinated "
                "for each, or name a label column shared by them with 'label' (with "
                "column:tag entries, the cell that lists the tags of the wrong answers).",
                path=path,
                field="answers",
            )
    elif "text" in mapping:
        mapping = {"text": mapping.pop("text"), **mapping}
    else:
        raise InvalidInputError(
            "The file has no 'text' column; name the response column with the 'text' "
            f"parameter.{delimiter_hint(available)} "
            f"Available: {', '.join(available) or 'none'}.",
            path=path,
            field="text",
        )
    return mapping
