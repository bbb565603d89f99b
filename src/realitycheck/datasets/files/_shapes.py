"""The shape parameters of the ``files`` dataset: constants, samples and answer columns.

Each is declared once here, with the constraint that checks it, so that
:class:`~realitycheck.datasets.files.Files` stays a list of fields.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from realitycheck.datasets import FORMATS, TOO_DEEP, format_of
from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.params import Constraint, as_tuple, param_error
from realitycheck.records import TASKS

if TYPE_CHECKING:
    from realitycheck.datasets.files import Files

__all__ = [
    "ANSWER_LABELS",
    "CONSTANTS",
    "AnswerEntries",
    "answer_parts",
    "answers_fixed",
    "ConstantEntries",
    "check_shape",
    "pair_entries",
    "sample_texts",
]

CONSTANTS = ("task", "model", "split")
"""What ``constants`` can set for a whole file."""

ANSWER_LABELS = {"hallucinated": True, "faithful": False}
"""The fixed labels an answer column can carry (``right_answer:faithful``)."""


def answer_parts(entry: str) -> tuple[str, str, str]:
    """Split an ``answers`` entry ``column[:label[:model column]]`` into its three parts.

    The label is ``faithful``/``hallucinated`` (fixed) or a tag: the answer is
    hallucinated when the row's label cell lists that tag (``ans1_text:answer1``).
    """
    column, label, model = ([*entry.split(":", 2), "", ""])[:3]
    return column, label, model


def answers_fixed(answers: tuple[str, ...]) -> bool:
    """Return whether the answer columns carry fixed labels (``right_answer:faithful``)."""
    return bool(answers) and all(answer_parts(a)[1] in ANSWER_LABELS for a in answers)


def pair_entries(value: Any) -> Any:
    """Normalise ``key:value`` strings or a table to a tuple of ``key:value`` strings.

    A bare entry (no ``:``) is kept as it is; anything else is left for the
    constraint to refuse.
    """
    if isinstance(value, Mapping):
        return tuple(f"{str(k).strip()}:{str(v).strip()}" for k, v in value.items())
    items = as_tuple(value)
    if not isinstance(items, tuple):
        return value
    return tuple(":".join(p.strip() for p in str(v).split(":", 1)) for v in items)


class ConstantEntries(Constraint):
    """``name:value`` entries, names among :data:`CONSTANTS`, a task among :data:`TASKS`."""

    def accepts(self, value: Any) -> bool:
        """Return whether every entry sets a known constant to an allowed non-empty value."""
        if not isinstance(value, tuple):
            return False
        names = [str(e).split(":", 1)[0] for e in value]
        return len(set(names)) == len(names) and all(self._bad(e) == "" for e in value)

    @staticmethod
    def _bad(entry: Any) -> str:
        if not isinstance(entry, str) or ":" not in entry:
            return f"{entry!r} is not name:value."
        name, given = entry.split(":", 1)
        if name not in CONSTANTS:
            close = difflib.get_close_matches(name, CONSTANTS, n=1)
            return f"{name!r} is not a constant." + (
                f" Did you mean {close[0]!r}?" if close else ""
            )
        if not given:
            return f"The constant {name!r} has an empty value."
        if name == "task" and given not in TASKS:
            hint = did_you_mean(given, TASKS)
            return f"The task {given!r} is not one of {TASKS}.{hint}"
        return ""

    def describe(self) -> str:
        """Return the accepted shape."""
        return (
            f"name:value entries (or a table) setting {CONSTANTS} for the whole file, "
            f"each once; the task one of {TASKS}"
        )

    def hint(self, value: Any) -> str:
        """Return the first entry's problem."""
        if not isinstance(value, tuple):
            return ""
        names = [str(e).split(":", 1)[0] for e in value]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            return f"{repeated} are set twice."
        return next((b for b in map(self._bad, value) if b), "")


class AnswerEntries(Constraint):
    """Answer columns: all ``column:label`` (fixed labels), all ``column:tag``, or all bare.

    A third part names the column holding that answer's model
    (``ans1_text:answer1:ans1_model``).
    """

    def accepts(self, value: Any) -> bool:
        """Return whether the entries are one shape, with known labels and distinct columns."""
        return isinstance(value, tuple) and self.hint(value) == "" and len(value) != 1

    def describe(self) -> str:
        """Return the accepted shape."""
        return (
            "two or more answer columns, each column:label with a label among "
            f"{tuple(ANSWER_LABELS)}, each column:tag (hallucinated when the 'label' cell "
            "lists the tag), or all bare names sharing the 'label' column; a third part "
            "column:label:model_column names the answer's model column"
        )

    def hint(self, value: Any) -> str:
        """Return what is wrong with the first bad entry."""
        if not isinstance(value, tuple):
            return ""
        if len(value) == 1:
            return "One answer column is the 'text' parameter."
        if any(not isinstance(e, str) or not e.split(":", 1)[0] for e in value):
            return "An entry has no column name."
        parts = [answer_parts(e) for e in value]
        labelled = [bool(label) for _, label, _ in parts]
        if any(labelled) and not all(labelled):
            bare = [e for e in value if not answer_parts(e)[1]]
            return f"{bare} have no label; write column:faithful or column:hallucinated for each."
        columns = [column for column, _, _ in parts]
        if len(set(columns)) != len(columns):
            return "A column is named twice."
        fixed = [label in ANSWER_LABELS for _, label, _ in parts if label]
        if any(fixed) and not all(fixed):
            tags = [e for e in value if answer_parts(e)[1] not in ANSWER_LABELS]
            tip = did_you_mean(answer_parts(tags[0])[1], ANSWER_LABELS)
            return (
                f"{tags} mix tags with fixed labels {tuple(ANSWER_LABELS)}: give every answer a "
                f"fixed label, or every answer a tag its row's label cell lists.{tip}"
            )
        return ""


def sample_texts(value: Any, *, path: Path, line: int, column: str) -> tuple[str, ...]:
    """Return the samples of one list cell: a list, JSON list text, or one sample per line.

    An empty cell is no samples.

    Raises:
        InvalidInputError: When the cell is neither, or an item is not text.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return ()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(
                    f"The samples cell starts with '[' but is not a JSON list ({exc.msg}); "
                    "write a JSON list of strings or one sample per line.",
                    path=path,
                    line=line,
                    field=column,
                ) from None
            except RecursionError:
                raise InvalidInputError(TOO_DEEP, path=path, line=line, field=column) from None
        else:
            return tuple(s.strip() for s in text.splitlines() if s.strip())
    if not isinstance(value, list | tuple):
        raise InvalidInputError(
            "The samples cell must be a list of strings (a list, JSON list text, or one "
            f"sample per line). Got {type(value).__name__} instead.",
            path=path,
            line=line,
            field=column,
        )
    bad = [i for i, s in enumerate(value) if not isinstance(s, str) or not s.strip()]
    if bad:
        raise InvalidInputError(
            f"Every sample must be non-empty text. Item {bad[0]} is {value[bad[0]]!r}.",
            path=path,
            line=line,
            field=column,
        )
    return tuple(value)


def check_shape(files: Files) -> None:
    """Refuse shape parameters of ``files`` that contradict each other or the file's format.

    Raises:
        InvalidInputError: In the one parameter-error shape, naming the parameter.
    """
    paths = [Path(str(p)) for p in as_tuple(files.path)]
    suffixes = {p.suffix.lower() for p in paths}
    if not files.format and (len(suffixes) > 1 or not suffixes <= set(FORMATS)):
        raise param_error(
            "path",
            files.name,
            f"a path ending in one of {FORMATS} (several paths: all with one of them), "
            "or 'format' set",
            files.path,
        )
    kind = format_of(paths[0], files.format)
    fixed = answers_fixed(files.answers)
    mapped = {c.split(":", 1)[0] for c in files.columns} & set(CONSTANTS)
    set_twice = mapped & {c.split(":", 1)[0] for c in files.constants}
    problems = [
        ("records", bool(files.records) and kind != "json", "empty unless the format is json"),
        ("delimiter", bool(files.delimiter) and kind not in ("csv", "tsv"), "empty unless csv/tsv"),
        (
            "answers",
            bool(files.answers and files.text),
            "empty when 'text' names the answer column",
        ),
        ("label", fixed and bool(files.label), "empty when 'answers' fix the labels"),
        ("constants", bool(set_twice), "fields that 'columns' does not map too"),
    ]
    for name, bad, expected in problems:
        if bad:
            raise param_error(name, files.name, expected, getattr(files, name))
