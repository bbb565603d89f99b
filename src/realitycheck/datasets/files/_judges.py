"""Recorded judges of the ``files`` dataset: a verdict column read into ``recorded:<name>`` labels.

A leaderboard ships its judge's verdict on each response, such as the
``Consistent`` / ``Inconsistent`` / ``Invalid`` classes of the FaithJudge
leaderboard (Tamber et al., 2025, "Benchmarking LLM Faithfulness in RAG with
Evolving Leaderboards"). ``judges=NAME:COLUMN`` reads such a column into
labels of the labeler ``recorded:NAME``: a judge's verdicts, not human labels,
so they can be the reference of ``evaluate`` and be ranked by the leaderboard
study against the human labels.

A verdict cell is read by the dataset's value lists (``positive`` and
``negative``) plus the judge words :data:`JUDGE_HALLUCINATED` and
:data:`JUDGE_FAITHFUL`; the values in ``invalid`` (default ``invalid``) mean
the judge found the response invalid (it does not answer or summarise at all),
counted as ``invalid_as`` says. Any other value is an error naming the file,
the line and the column: a verdict is never guessed.
"""

from __future__ import annotations

import difflib
import logging
import math
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from realitycheck.datasets import cell_text, spec_json
from realitycheck.datasets.files._label_reader import LabelReader
from realitycheck.datasets.files._label_rules import DEFAULT_NEGATIVE, DEFAULT_POSITIVE, LabelRules
from realitycheck.errors import InvalidInputError
from realitycheck.params import Constraint, as_tuple, param_error
from realitycheck.records import Label
from realitycheck.records.keys import recorded_key

if TYPE_CHECKING:
    from realitycheck.datasets.files import Files

__all__ = [
    "DEFAULT_INVALID",
    "INVALID_AS",
    "JUDGE_FAITHFUL",
    "JUDGE_HALLUCINATED",
    "JudgeEntries",
    "JudgeReader",
    "check_judge_params",
    "judge_entries",
    "judge_parts",
    "judge_rules",
    "judges_note",
]

JUDGE_HALLUCINATED = ("inconsistent", "unfaithful")
"""Verdict words read as hallucinated in a judge column (besides ``positive``)."""
JUDGE_FAITHFUL = ("consistent",)
"""Verdict words read as faithful in a judge column (besides ``negative``)."""
INVALID_AS = ("hallucinated", "faithful", "excluded")
"""What an invalid verdict counts as; ``hallucinated`` first, the default (paper 003's rule)."""
DEFAULT_INVALID = ("invalid",)
"""Verdict values that mean the judge found the response invalid."""
logger = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*")
"""A judge's name: it goes into the key ``recorded:<name>``, so no brackets, commas or ``+``."""


def judge_entries(value: Any) -> Any:
    """Normalise ``judges`` to ``name:column`` entries: a table, or strings (bare = both).

    ``{gpt = "classification"}`` and ``"gpt:classification"`` give
    ``("gpt:classification",)``; a bare ``"gpt_4o"`` reads the column of that
    name as the judge ``gpt_4o``. Anything else is left for the constraint.
    """
    if isinstance(value, Mapping):
        pairs = [(str(k), v if isinstance(v, str) else None) for k, v in value.items()]
        if any(v is None for _, v in pairs):
            return value
        return tuple(f"{k.strip()}:{str(v).strip()}" for k, v in pairs)
    items = as_tuple(value)
    if not isinstance(items, tuple) or not all(isinstance(v, str) for v in items):
        return value
    out = []
    for item in items:
        name, _, column = item.partition(":")
        out.append(f"{name.strip()}:{(column if ':' in item else name).strip()}")
    return tuple(out)


def judge_parts(entry: str) -> tuple[str, str]:
    """Split a ``name:column`` entry into the judge's name and its column."""
    name, _, column = entry.partition(":")
    return name, column


class JudgeEntries(Constraint):
    """``name:column`` entries: each name a plain word used once, each column once."""

    def accepts(self, value: Any) -> bool:
        """Return whether every entry names a judge and a column, none twice."""
        return isinstance(value, tuple) and not self._problem(value)

    @staticmethod
    def _problem(value: tuple[Any, ...]) -> str:
        names: list[str] = []
        columns: list[str] = []
        for entry in value:
            if not isinstance(entry, str) or ":" not in entry:
                return f"{entry!r} is not name:column."
            name, column = judge_parts(entry)
            if not _NAME.fullmatch(name):
                return (
                    f"The judge name {name!r} must start with a letter or digit and hold only "
                    "letters, digits and _ . - / (it becomes the key recorded:<name>)."
                )
            if not column:
                return f"The judge {name!r} names no column."
            if name in names:
                return f"The judge {name!r} is named twice."
            if column in columns:
                return f"The column {column!r} is read by two judges."
            names.append(name)
            columns.append(column)
        return ""

    def describe(self) -> str:
        """Return the accepted shape."""
        return (
            "name:column entries (or a table {name = column}; a bare column names a judge "
            "after itself), each name and column once"
        )

    def hint(self, value: Any) -> str:
        """Return the first entry's problem."""
        return self._problem(value) if isinstance(value, tuple) else ""


def judge_rules(files: Files) -> LabelRules:
    """Return the rules a judge column is read by: the value lists plus the judge words.

    A judge word that the user put on the other side stays there (the
    user's lists win). No threshold and no list rule: a verdict is one value;
    an empty cell is no verdict.
    """
    positive = (*files.positive, *(w for w in JUDGE_HALLUCINATED if w not in files.negative))
    negative = (*files.negative, *(w for w in JUDGE_FAITHFUL if w not in files.positive))
    return LabelRules(
        positive=tuple(dict.fromkeys(positive)),
        negative=tuple(dict.fromkeys(negative)),
        confirmed=files.polarity == "confirmed",
        default_values=(files.positive, files.negative) == (DEFAULT_POSITIVE, DEFAULT_NEGATIVE),
    )


def check_judge_params(files: Files) -> None:
    """Refuse judge parameters that contradict the others (before any file is read)."""
    if not files.judges:
        return
    rules = judge_rules(files)
    both = sorted(set(files.invalid) & {*rules.positive, *rules.negative})
    if both:
        raise param_error(
            "invalid",
            files.name,
            "values other than the hallucinated and faithful ones",
            files.invalid,
            hint=f"{both} also map to a verdict; say what an invalid verdict counts as "
            "with invalid_as instead.",
        )
    clash = [n for n, _ in map(judge_parts, files.judges) if n in files.scores]
    if clash:
        raise param_error(
            "judges",
            files.name,
            "names other than the 'scores' columns",
            files.judges,
            hint=f"recorded:{clash[0]} would name both a detector score and a judge's labels; "
            f"name the judge otherwise ({clash[0]}_judge:<column>).",
        )
    if files.answers:
        raise param_error(
            "judges",
            files.name,
            "left out when 'answers' is set",
            files.judges,
            hint="A row with several answer columns yields several responses; one verdict "
            "column cannot say which of them it judged.",
        )


def judges_note(files: Files) -> str:
    """Return how the judge columns are read, in one sentence."""
    rules = judge_rules(files)
    names = ", ".join(f"{recorded_key(n)} <- {c!r}" for n, c in map(judge_parts, files.judges))
    return (
        f"Recorded judges ({names}): verdicts {'/'.join(rules.positive)} -> hallucinated, "
        f"{'/'.join(rules.negative)} -> faithful, {'/'.join(files.invalid)} -> invalid, counted "
        f"as {files.invalid_as} (invalid_as; Tamber et al. 2025 count invalid responses as "
        "hallucinated); the category is the verdict lower-cased; an empty cell -> no verdict; "
        "any other value is an error."
    )


class JudgeReader:
    """Reads each judge column of a row into a ``recorded:<name>`` label, counting every mapping.

    Args:
        owner: The dataset, whose ``judges``, value lists, ``invalid`` and
            ``invalid_as`` say how.
        path: The first file, named in every error.
    """

    def __init__(self, owner: Files, path: Path) -> None:
        self.owner = owner
        self.rules = judge_rules(owner)
        self.judges = [judge_parts(e) for e in owner.judges]
        self.readers = {name: LabelReader(self.rules, path) for name, _ in self.judges}
        self.invalid = set(owner.invalid)
        self.verdict = {"hallucinated": True, "faithful": False, "excluded": None}[owner.invalid_as]
        self.counts: dict[str, Counter[str]] = {name: Counter() for name, _ in self.judges}
        self.specs = {
            name: spec_json(
                "recorded",
                {"source": column, "invalid": list(owner.invalid), "invalid_as": owner.invalid_as},
                source=owner.spec,
            )
            for name, column in self.judges
        }
        self.path = path

    def next_file(self, path: Path) -> None:
        """Name ``path`` in the errors from now on."""
        self.path = path
        for reader in self.readers.values():
            reader.path = path

    def labels(self, row: dict[str, Any], line: int, response_id: str) -> list[Label]:
        """Return the row's label of each judge (an uncovered value is an error)."""
        return [self._label(name, column, row, line, response_id) for name, column in self.judges]

    def _error(self, message: str, line: int, column: str) -> InvalidInputError:
        return InvalidInputError(message, path=self.path, line=line, field=column)

    def _label(
        self, name: str, column: str, row: dict[str, Any], line: int, response_id: str
    ) -> Label:
        if column not in row:
            raise self._error("The row has no such column.", line, column)
        raw = row[column]
        reader = self.readers[name]
        if isinstance(raw, dict | list | tuple):
            raise self._error(
                f"The verdict of judge {name!r} must be one value. Got a "
                f"{type(raw).__name__} ({raw!r:.80}).",
                line,
                column,
            )
        value = cell_text(raw)
        category = value or ""
        error = ""
        if value is None:
            verdict: bool | None = None
            error = "empty verdict cell"
            reader.count(column, "empty", None)
            self.counts[name]["empty"] += 1
        elif value in self.invalid:
            verdict = self.verdict
            if verdict is None:
                error = "invalid verdict; excluded by invalid_as='excluded'"
            reader.count(column, f"{value!r} (invalid)", verdict)
            self.counts[name]["invalid"] += 1
        elif value in self.rules.positive or value in self.rules.negative:
            verdict = reader.scalar(raw, column, line)
        else:
            close = difflib.get_close_matches(
                value, [*self.rules.positive, *self.rules.negative, *self.invalid], n=1
            )
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise self._error(
                f"The verdict {raw!r} of judge {name!r} is none of the known classes: "
                f"hallucinated {self.rules.positive}, faithful {self.rules.negative}, invalid "
                f"{tuple(self.owner.invalid)}.{hint} Add it to 'positive', 'negative' or "
                "'invalid' (case-insensitive).",
                line,
                column,
            )
        if verdict is not None:
            self.counts[name]["hallucinated" if verdict else "faithful"] += 1
        return Label(
            response_id=response_id,
            labeler=recorded_key(name),
            hallucinated=verdict,
            category=category,
            raw="" if raw is None or (isinstance(raw, float) and math.isnan(raw)) else str(raw),
            error=error,
            spec=self.specs[name],
        )

    def notes(self, source: str) -> list[str]:
        """Return each judge's mapping counts and totals, and a polarity warning where due.

        ``source`` names the files in the warning. The warning is the label
        rules' own: a judge column of only ``1``/``0`` (or ``true``/``false``,
        ``yes``/``no``) read by the default value lists, whose polarity is a guess.
        """
        out = []
        for name, column in self.judges:
            reader, counts = self.readers[name], self.counts[name]
            out += reader.mapping_notes(f"Verdict mapping of {recorded_key(name)} ({{column!r}})")
            given = counts["hallucinated"] + counts["faithful"]
            if not given:
                out.append(f"{recorded_key(name)}: no verdict in the column {column!r}.")
                continue
            rate = counts["hallucinated"] / given
            parts = [
                f"{counts['hallucinated']} hallucinated",
                f"{counts['faithful']} faithful",
                f"{counts['empty']} empty (no verdict)",
            ]
            if counts["invalid"]:
                where = {
                    "hallucinated": "counted among the hallucinated",
                    "faithful": "counted among the faithful",
                    "excluded": "excluded, no verdict",
                }[self.owner.invalid_as]
                parts.append(f"{counts['invalid']} invalid ({where}: invalid_as)")
            out.append(
                f"{recorded_key(name)}: {', '.join(parts)}; {rate:.0%} of the {given} "
                "verdicts hallucinated."
            )
            if not self.rules.confirmed:
                for warning in reader.boolean_guesses(source, rate, kind="judge"):
                    logger.warning(warning)
                    out.append(warning)
        return out
