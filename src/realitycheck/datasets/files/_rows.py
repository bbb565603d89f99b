"""Rows of a user's file turned into records, for the ``files`` dataset."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from realitycheck.datasets import IdMaker, cell_text, spec_json
from realitycheck.datasets.files._cells import CellReader, item_path
from realitycheck.datasets.files._judges import JudgeReader
from realitycheck.datasets.files._label_reader import LabelReader
from realitycheck.datasets.files._label_rules import rules_of
from realitycheck.datasets.files._shapes import ANSWER_LABELS, answer_parts, sample_texts
from realitycheck.errors import InvalidInputError
from realitycheck.raters import dawid_skene
from realitycheck.records import TASKS, Example, Label, Response, Score

if TYPE_CHECKING:
    from realitycheck.datasets import Bundle
    from realitycheck.datasets.files import Files

__all__ = ["RowReader"]

logger = logging.getLogger(__name__)

_NUMBER_LIST = re.compile(r"\[?\s*-?\d+(?:\.\d+)?(?:\s*[,\s]\s*-?\d+(?:\.\d+)?)+\s*\]?")
"""Text that is only numbers in a list, such as token ids ``[101, 2023, 1996]``."""
_NUMBER = re.compile(r"[-+]?\d[\d.,]*")
"""Text that is one number or an all-digit id."""
_TEXT_FIELDS = ("question", "context", "text", "references")
"""Fields read as prose, checked for values that look like numbers or ids."""


def looks_like_ids(value: str, *, answer: bool) -> bool:
    """Return whether ``value`` looks like numbers or ids rather than text.

    A list of numbers (token ids) always does; one number or an all-digit id
    does only where it cannot be an answer (``answer`` false: a question or
    a context), since "1969" is a fair response or reference.
    """
    text = value.strip()
    if _NUMBER_LIST.fullmatch(text):
        return True
    return not answer and bool(_NUMBER.fullmatch(text))


def _shown(raw: Any) -> str:
    """Return a label's source cell(s) as text: empty for no value, JSON for lists and tables."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return ""
    if isinstance(raw, dict | list | tuple):
        return json.dumps(raw, ensure_ascii=False, default=str)
    return str(raw)


def _content_id(*texts: str) -> str:
    """Return a short stable id made from texts (12 hex digits of their SHA-256)."""
    return hashlib.sha256(json.dumps(texts).encode("utf-8")).hexdigest()[:12]


class RowReader(CellReader):
    """Turns rows into records, remembering ids already seen."""

    def __init__(self, owner: Files, mapping: dict[str, str], path: Path) -> None:
        self.owner = owner
        self.mapping = mapping
        self.path = path
        self.shown = path.name
        self.file_model = ""
        self.examples: dict[str, tuple[str, Example]] = {}
        self.groups: dict[tuple[str, str], str] = {}
        self.response_lines: dict[str, str] = {}
        self.ids = IdMaker()
        self.example_ids = IdMaker()
        self.name = owner.run_name
        self.spec = owner.spec_json
        self.rules = LabelReader(rules_of(owner), path)
        self.judges = JudgeReader(owner, path) if owner.judges else None
        self.columns = self._label_columns()
        self.verdicts: list[bool | None] = []
        self.nan_scores: dict[str, int] = {}
        self.id_like: dict[str, list[Any]] = {}  # field -> [id-like, non-empty, example, column]
        self.pending: list[tuple[str, list[bool | None], str]] = []
        self.constants = dict(c.split(":", 1) for c in owner.constants)
        parts = [answer_parts(a) for a in owner.answers]
        self.answers: list[tuple[str, bool | None, str]] = [
            (
                f"answer:{column}",
                ANSWER_LABELS.get(label),
                label if label not in ANSWER_LABELS else "",
            )
            for column, label, _ in parts
        ] or [("text", None, "")]

    def _label_columns(self) -> dict[str, list[str]]:
        return {
            kind: [c for f, c in self.mapping.items() if f == kind or f.startswith(f"{kind}:")]
            for kind in ("label", "sentences", "human")
        }

    def next_file(self, path: Path, mapping: dict[str, str], model: str, shown: str = "") -> None:
        """Read the following rows from another file of the same dataset.

        Ids seen so far stay seen, so an example shared by two files (one file
        per model) is one example; ``model`` is the model of rows that name none;
        ``shown`` names the file in notes and meta (default: its name).
        """
        self.path = self.rules.path = path
        self.shown = shown or path.name
        if self.judges is not None:
            self.judges.next_file(path)
        self.mapping = mapping
        self.columns = self._label_columns()
        self.file_model = model

    def _where(self, line: int) -> str:
        return f"line {line} of {self.shown}"

    def read(self, line: int, row: dict[str, Any], out: Bundle) -> None:
        texts = []
        for field, _, _ in self.answers:
            raw = self.cell(row, field, line)
            if isinstance(raw, bool | int | float) and not (
                isinstance(raw, float) and math.isnan(raw)
            ):
                raise InvalidInputError(
                    f"The response text must be a string. Got {type(raw).__name__} {raw!r} "
                    "instead; quote it in the file if the response really is that text.",
                    path=self.path,
                    line=line,
                    field=self.mapping[field],
                )
            text = self.text_cell(row, field, line)
            if not text.strip():
                raise InvalidInputError(
                    "The response text is empty.",
                    path=self.path,
                    line=line,
                    field=self.mapping[field],
                )
            texts.append(text)
            self._observe("text", text, self.mapping[field])
        example_id = self.example(line, row, out, texts[0])
        model = (
            self.constants.get("model")
            or self.text_cell(row, "model", line)
            or self.file_model
            or "unknown"
        )
        given = self.text_cell(row, "response_id", line)
        if "response_id" in self.mapping:
            if not given:
                raise InvalidInputError(
                    "The response id is empty.",
                    path=self.path,
                    line=line,
                    field=self.mapping["response_id"],
                )
            if given in self.response_lines:
                raise InvalidInputError(
                    f"The response id {given!r} repeats the one on {self.response_lines[given]}.",
                    path=self.path,
                    line=line,
                    field=self.mapping["response_id"],
                )
        if given:
            self.response_lines[given] = self._where(line)
        samples = self.samples(row, line)
        meta = self.response_meta(row, line)
        for (field, fixed, tag), text in zip(self.answers, texts, strict=True):
            suffix = "" if field == "text" else f"/{self.mapping[field]}"
            own_model = self.text_cell(row, f"answer_model:{field[7:]}", line) or model
            response_id = (
                f"{self.name}/{given}{suffix}"
                if given
                else self.ids.make(f"{example_id}/{own_model}{suffix}")
            )
            out.responses.append(
                Response(
                    response_id=response_id,
                    example_id=example_id,
                    model=own_model,
                    text=text,
                    samples=samples,
                    meta={**meta, "answer_column": self.mapping[field]} if suffix else meta,
                )
            )
            if fixed is not None:
                out.labels.append(self.fixed_label(fixed, field, response_id))
            elif any(self.columns.values()):
                out.labels.extend(self.labels(row, line, response_id, tag))
            if self.judges is not None:
                out.labels.extend(self.judges.labels(row, line, response_id))
            for column in self.owner.scores:
                out.scores.append(self.score(row[column], column, line, response_id))

    def samples(self, row: dict[str, Any], line: int) -> tuple[str, ...]:
        """Return the row's samples: one list cell, or one text cell per sample column."""
        columns = self.owner.samples
        if len(columns) == 1:
            return sample_texts(row.get(columns[0]), path=self.path, line=line, column=columns[0])
        out = []
        for column in columns:
            text = self.text_cell(row, f"sample:{column}", line)
            if text.strip():
                out.append(text)
        return tuple(out)

    def response_meta(self, row: dict[str, Any], line: int) -> dict[str, Any]:
        """Return a response's meta: its line, unused columns, slice columns and split."""
        used = {item_path(column, row)[0] for column in self.mapping.values()}
        meta: dict[str, Any] = {
            "line": line,
            "extra": {k: v for k, v in row.items() if k not in used},
        }
        if self.owner.meta:
            meta["slice"] = {
                c: self.text_cell(row, f"meta:{c}", line).strip() or None for c in self.owner.meta
            }
        if "split" in self.constants:
            meta["split"] = self.constants["split"]
        return meta

    def fixed_label(self, hallucinated: bool, field: str, response_id: str) -> Label:
        """Return the ``human`` label an answer column carries (``right_answer:faithful``)."""
        return Label(
            response_id=response_id,
            labeler="human",
            hallucinated=hallucinated,
            raw=f"{self.mapping[field]}:{'hallucinated' if hallucinated else 'faithful'}",
            spec=self.spec,
        )

    def example(self, line: int, row: dict[str, Any], out: Bundle, text: str) -> str:
        question = self.text_cell(row, "question", line)
        context = self.text_cell(row, "context", line)
        example_id = self.text_cell(row, "example_id", line)
        if "example_id" in self.mapping and not example_id:
            raise InvalidInputError(
                "The example id is empty.",
                path=self.path,
                line=line,
                field=self.mapping["example_id"],
            )
        if example_id:
            example_id = f"{self.name}/{example_id}"
        elif {"question", "context"} & set(self.mapping):
            key = (question, context)
            example_id = self.groups.setdefault(key, f"{self.name}/{_content_id(*key)}")
        else:
            example_id = self.example_ids.make(f"{self.name}/{_content_id(text)}")
        if example_id in self.examples:
            first, seen = self.examples[example_id]
            if (seen.question, seen.context) != (question, context):
                raise InvalidInputError(
                    f"The example {example_id!r} has another question or context on {first}.",
                    path=self.path,
                    line=line,
                    field=self.mapping.get("example_id"),
                )
            return example_id
        task = self.constants.get("task") or self.text_cell(row, "task", line) or "open"
        if task not in TASKS:
            raise InvalidInputError(
                f"The task must be one of {TASKS}. Got {task!r} instead.",
                path=self.path,
                line=line,
                field=self.mapping.get("task"),
            )
        for field, value in (("question", question), ("context", context)):
            self._observe(field, value, self.mapping.get(field, field))
        example = Example(
            example_id=example_id,
            dataset=self.name,
            task=task,
            question=question,
            context=context,
            references=self.references(row, line),
            meta={"file": self.shown, "line": line}
            | ({"split": self.constants["split"]} if "split" in self.constants else {}),
        )
        self.examples[example_id] = (self._where(line), example)
        out.examples.append(example)
        return example_id

    def references(self, row: dict[str, Any], line: int) -> tuple[str, ...]:
        value = self.cell(row, "references", line)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ()
        if isinstance(value, str):
            out = tuple(p.strip() for p in value.split(";") if p.strip())
        elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            out = tuple(value)
        else:
            out = None
        if out is not None:
            for reference in out:
                self._observe("references", reference, self.mapping["references"])
            return out
        raise InvalidInputError(
            f"The references must be a list of strings or a ';'-separated string. "
            f"Got {type(value).__name__} instead.",
            path=self.path,
            line=line,
            field=self.mapping["references"],
        )

    def labels(
        self, row: dict[str, Any], line: int, response_id: str, tag: str = ""
    ) -> list[Label]:
        """Return the row's ``human:<annotator>`` labels and its ``human`` label.

        ``human`` comes from the label (and sentence) columns when there are
        any, combined by ``combine``; otherwise from the annotators by
        ``aggregate``. With a ``tag`` (an answer column's), a label cell says
        hallucinated when it lists the tag.
        """
        out, votes = [], []
        for column in self.columns["human"]:
            raw = self._raw(row, column, line)
            vote = self.rules.cell(raw, column, line, tag=tag)
            votes.append(vote)
            out.append(
                self._label(f"human:{column}", response_id, vote, _shown(raw), "empty label cell")
            )
        verdicts, raws = [], {}
        for kind in ("label", "sentences"):
            for entry in self.columns[kind]:
                column, key = item_path(entry, row)
                raw = self._raw(row, column, line)
                raws[column] = raw
                sentences = kind == "sentences"
                verdicts.append(
                    self.rules.cell(
                        raw,
                        column,
                        line,
                        sentences=sentences,
                        key=key,
                        tag="" if sentences else tag,
                    )
                )
        if verdicts:
            verdict = verdicts[0] if len(verdicts) == 1 else self.rules.combine(verdicts)
            shown = _shown(next(iter(raws.values()))) if len(raws) == 1 else _shown(raws)
            why = "empty label cell" if len(raws) == 1 else f"no verdict by {self.owner.combine}"
        else:
            shown = _shown(dict(zip(self.columns["human"], votes, strict=True)))
            if self.owner.aggregate == "dawid_skene":
                self.pending.append((response_id, votes, shown))
                return out
            verdict = self.rules.vote(votes)
            why = "no annotator verdict"
        self.verdicts.append(verdict)
        out.append(self._label("human", response_id, verdict, shown, why))
        return out

    def finish(self, out: Bundle) -> list[str]:
        """Add the ``human`` labels that need every row (Dawid–Skene); return notes on them.

        Each label's ``score`` is P(hallucinated | votes); it is hallucinated at
        0.5 or above (a tie is hallucinated, as with ``majority``).
        """
        if not self.pending:
            return []
        matrix = np.array(
            [[np.nan if v is None else float(v) for v in votes] for _, votes, _ in self.pending]
        )
        fit = dawid_skene(matrix)
        for (response_id, _, shown), posterior in zip(self.pending, fit.posterior, strict=True):
            given = not math.isnan(posterior)
            verdict = bool(posterior >= 0.5) if given else None
            self.verdicts.append(verdict)
            label = self._label("human", response_id, verdict, shown, "no annotator verdict")
            out.labels.append(replace(label, score=float(posterior) if given else None))
        reliability = ", ".join(
            f"{c} {sens:.2f}/{spec:.2f}"
            for c, sens, spec in zip(
                self.columns["human"], fit.sensitivity, fit.specificity, strict=True
            )
        )
        return [
            f"human = Dawid-Skene over {len(self.columns['human'])} annotators: prior "
            f"{fit.prior:.2f}; sensitivity/specificity {reliability}."
        ]

    def judge_notes(self, source: str) -> list[str]:
        """Return the notes on the recorded judges' verdicts (none without judges)."""
        return [] if self.judges is None else self.judges.notes(source)

    def _observe(self, field: str, value: str, column: str) -> None:
        """Count a non-empty value of a prose field, and whether it looks like numbers or ids."""
        if not value.strip():
            return
        seen = self.id_like.setdefault(field, [0, 0, "", column])
        seen[1] += 1
        if looks_like_ids(value, answer=field in ("text", "references")):
            seen[0] += 1
            seen[2] = seen[2] or value

    def warnings(self, source: str) -> list[str]:
        """Return (and log) the warnings on what was read: NaN scores, id-like prose fields.

        A prose field warns when more than half of its values look like numbers
        or ids: DelucionQA's context column holds token ids, and a detector
        that compares the response with its context then measures nothing.
        """
        out = [
            f"Warning: {n} cells of the score column {column!r} of {source} are NaN; they are "
            "stored as missing scores (no value, error 'NaN score cell'), never as a number."
            for column, n in self.nan_scores.items()
        ]
        for field in _TEXT_FIELDS:
            count, total, example, column = self.id_like.get(field, [0, 0, "", ""])
            if not total or 2 * count <= total:
                continue
            shown = example if len(example) <= 60 else f"{example[:57]}…"
            out.append(
                f"Warning: the {field} field (column {column!r}) of {source} looks like "
                f"numbers or ids, not text: {count} of {total} values, such as {shown!r}. "
                f"Detectors read it as prose; map the column that holds the {field} as text."
            )
        for warning in out:
            logger.warning(warning)
        return out

    def _label(
        self, labeler: str, response_id: str, verdict: bool | None, raw: str, why: str
    ) -> Label:
        """Return one label; a missing verdict says ``why``."""
        error = "" if verdict is not None else why
        return Label(
            response_id=response_id,
            labeler=labeler,
            hallucinated=verdict,
            raw=raw,
            error=error,
            spec=self.spec,
        )

    def score(self, raw: Any, column: str, line: int, response_id: str) -> Score:
        spec = spec_json("recorded", {"source": column}, source=self.owner.spec)
        detector = f"recorded:{column}"
        nan = (isinstance(raw, float) and math.isnan(raw)) or (
            isinstance(raw, str) and raw.strip().lower() == "nan"
        )
        if nan or cell_text(raw) is None:
            if nan:
                self.nan_scores[column] = self.nan_scores.get(column, 0) + 1
            return Score(
                response_id=response_id,
                detector=detector,
                value=None,
                error="NaN score cell" if nan else "empty score cell",
                spec=spec,
            )
        try:
            value = float(raw)
        except (TypeError, ValueError):
            value = math.nan
        if isinstance(raw, bool) or not math.isfinite(value):
            raise InvalidInputError(
                f"The score must be a finite number. Got {raw!r} instead.",
                path=self.path,
                line=line,
                field=column,
            )
        if column in self.owner.flip:
            value = 1.0 - value
        return Score(response_id=response_id, detector=detector, value=value, spec=spec)
