"""A user's own multiple-choice set from a table file (CSV, TSV, JSON, JSON lines, Parquet).

One row per question. Three columns are read, their names set by parameters:

* ``question``: the prompt the options continue;
* ``choices``: the options, a list (JSON, Parquet) or one string split at
  ``;`` (CSV), at least two, none empty;
* ``gold``: the correct option, by 0-based index or by its text (several,
  separated by ``;`` or as a list, for sets with more than one true option).
  A gold item made of digits is read as an index, never as an option's text.

An ``id`` column names the questions (default: the row's line). Errors name
the file, the line and the column. Examples are ``mcq`` as in
:mod:`realitycheck.datasets.mcq`; the other columns are kept in the meta.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from realitycheck.datasets._base import Dataset, dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._io import IdMaker
from realitycheck.datasets._tables import read_rows
from realitycheck.datasets.mcq import mcq_example
from realitycheck.errors import InvalidInputError
from realitycheck.params import InstanceOf, NonEmptyStr, PathLike, param, required

__all__ = ["McqFile"]


def _items(value: Any) -> list[str]:
    """Return a cell as a list of strings: a list as is, a string split at ``;``."""
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value]
    if isinstance(value, str):
        return [part.strip() for part in value.split(";")]
    if isinstance(value, int) and not isinstance(value, bool):
        return [str(value)]
    return []


def _gold(cell: Any, choices: list[str], where: dict[str, Any]) -> list[int]:
    """Return the gold indices of a cell: 0-based indices or option texts."""
    gold = []
    for item in _items(cell):
        if item.isdigit():
            gold.append(int(item))
        elif item in choices:
            gold.append(choices.index(item))
        else:
            raise InvalidInputError(
                f"The gold answer {item!r} is neither an option index nor an option's text.",
                **where,
            )
    return gold


@dataset("mcq_file")
@dataclass(frozen=True, kw_only=True)
class McqFile(Dataset):
    """Your own multiple-choice questions from a table file (see the module docstring).

    Args:
        path: The file.
        question: The column of the prompt.
        choices: The column of the options (a list, or ``;``-separated text).
        gold: The column of the correct option(s), by index or text.
        id: The column of the question ids ("" = the row's line).
        name_as: The dataset name in the run (default: the file's stem).
    """

    path: str = required(PathLike(), convert=os.fspath)
    question: str = param("question", NonEmptyStr())
    choices: str = param("choices", NonEmptyStr())
    gold: str = param("gold", NonEmptyStr())
    id: str = param("id", InstanceOf(str))
    name_as: str = param("", InstanceOf(str))

    description: ClassVar[str] = "Your own MCQ set: question, choices and gold columns of a file."

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read every row into an ``mcq`` example (ids ``<name>/<id or line>``)."""
        path = Path(self.path)
        if not path.is_file():
            raise InvalidInputError("The MCQ file does not exist.", path=path)
        name = self.name_as or path.stem
        columns, rows = read_rows(path)
        missing = [c for c in (self.question, self.choices, self.gold) if c not in columns]
        if missing:
            raise InvalidInputError(
                f"The file lacks the column {missing[0]!r} (columns: {', '.join(columns)}); "
                "name it with the question=, choices= or gold= parameter.",
                path=path,
                field=missing[0],
            )
        examples, ids = [], IdMaker()
        used = {self.question, self.choices, self.gold, self.id}
        for line, row in rows:
            question = row.get(self.question)
            if not isinstance(question, str) or not question.strip():
                raise InvalidInputError(
                    "The question is empty.", path=path, line=line, field=self.question
                )
            choices = _items(row.get(self.choices))
            where = {"path": path, "line": line, "field": self.gold}
            gold = _gold(row.get(self.gold), choices, where)
            raw_id = row.get(self.id) if self.id else None
            base = str(raw_id) if raw_id not in (None, "") else str(line)
            examples.append(
                mcq_example(
                    ids.make(f"{name}/{base}"),
                    name,
                    question,
                    choices,
                    gold,
                    path=path,
                    line=line,
                    meta={k: v for k, v in row.items() if k not in used and _plain(v)},
                )
            )
        if progress is not None:
            progress(len(examples))
        notes = [f"{len(examples)} questions from {path.name}; input only."]
        return Bundle(examples=examples, notes=notes)

    @property
    def run_name(self) -> str:
        """The dataset's name in a run: ``name_as`` or the file's stem."""
        return self.name_as or Path(self.path).stem

    def sources(self) -> list[Path]:
        """Return the file this dataset reads (its bytes make the fingerprint)."""
        return [Path(self.path)]


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None
