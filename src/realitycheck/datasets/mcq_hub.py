"""Multiple-choice sets from the Hugging Face Hub: CommonsenseQA, FEVER, TrueFalse, Med-HALT FCT.

Each loads through ``datasets.load_dataset`` (extra ``generation``) or, with
``path``, from local files of the Hub dataset (Parquet, JSON lines or a JSON
array; see :mod:`realitycheck.datasets._hub`). Every question becomes an
``mcq`` example as in :mod:`realitycheck.datasets.mcq`: ``choices`` in the
source's order and ``meta["gold"]`` the index of the correct one; errors name
the file (or ``hf://`` address), the row and the field. The row schemas read:

* CommonsenseQA (``tau/commonsense_qa``): ``id``, ``question``, ``choices``
  (``{"label": ["A", ...], "text": [...]}``) and ``answerKey`` (a label).
* FEVER (``fever/fever``, config ``v1.0``): ``id``, ``claim``, ``label``
  (``SUPPORTS`` / ``REFUTES`` / ``NOT ENOUGH INFO``), one row per evidence
  sentence. A claim is asked once (the first row of its id); ``NOT ENOUGH
  INFO`` claims are left out. The options are ``true`` and ``false``.
* TrueFalse (Azaria & Mitchell, 2023; ``notrichardren/azaria-mitchell``):
  ``claim`` (or ``statement``) and ``label`` (1 true, 0 false); options
  ``true`` and ``false``; the topic (``dataset``) is kept in the meta.
* Med-HALT reasoning FCT (``openlifescienceai/Med-HALT``, config
  ``reasoning_FCT``): ``id``, ``question``, ``options`` (an object, or its
  text, mapping ``"0"``, ``"1"``… to option texts; other keys are ignored) and
  ``correct_index``. The student's answer of the false-confidence test is kept
  in the meta (``student_answer``) but not shown.

A true/false claim is asked as ``Claim: <claim>`` / ``This claim is`` and the
options continue it.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.datasets._base import dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._hub import HubDataset
from realitycheck.datasets._io import IdMaker, field_of
from realitycheck.datasets.mcq import mcq_example
from realitycheck.errors import InvalidInputError
from realitycheck.params import with_default
from realitycheck.records import Example

__all__ = ["CommonsenseQA", "Fever", "MedHaltFCT", "TrueFalse", "claim_prompt"]

TRUE_FALSE = ("true", "false")


def claim_prompt(claim: str) -> str:
    """Return the prompt of a true/false claim; the options ``true`` / ``false`` follow it."""
    return f"Claim: {claim.strip()}\nThis claim is"


@dataclass(frozen=True, kw_only=True)
class _HubMcq(HubDataset):
    """A Hub MCQ set: subclasses turn one row into an example (or ``None`` to leave it out)."""

    note: ClassVar[str] = ""
    once_per_id: ClassVar[bool] = False

    def example(self, row: dict[str, Any], where: dict[str, Any]) -> Example | None:
        """Return the row's example (id ``<name>/<row id>``), or ``None`` to leave it out."""
        raise NotImplementedError

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the split's rows into ``mcq`` examples (ids ``<name>/<row id>``)."""
        examples, ids, left_out, seen = [], IdMaker(), 0, set()
        for path, row_number, row in self._rows():
            made = self.example(row, {"path": path, "line": row_number})
            if made is None or (self.once_per_id and made.example_id in seen):
                left_out += 1
                continue
            seen.add(made.example_id)
            examples.append(dataclasses.replace(made, example_id=ids.make(made.example_id)))
        if progress is not None:
            progress(len(examples))
        notes = [f"{self.name}: {len(examples)} questions; input only.", self.note]
        if left_out:
            notes.append(f"{left_out} row(s) left out (see the dataset's description).")
        return Bundle(examples=examples, notes=[n for n in notes if n])


def _row_id(row: dict[str, Any], where: dict[str, Any]) -> str:
    value = row.get("id", where["line"])
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInputError(f"The id must be text or a number. Got {value!r}.", **where)
    return str(value)


@dataset("commonsense_qa")
@dataclass(frozen=True, kw_only=True)
class CommonsenseQA(_HubMcq):
    """CommonsenseQA: five-option commonsense questions (gold = ``answerKey``)."""

    config: str = with_default(HubDataset, "config", "default")
    hub_id: str = with_default(HubDataset, "hub_id", "tau/commonsense_qa")
    description: ClassVar[str] = "CommonsenseQA (5 options per question) from the Hub or files."

    def example(self, row: dict[str, Any], where: dict[str, Any]) -> Example:
        """Return the question with its labelled options."""
        question = field_of(row, "question", str, **where)
        options = field_of(row, "choices", dict, **where)
        labels = field_of(options, "label", list, **where, prefix="choices.")
        texts = field_of(options, "text", list, **where, prefix="choices.")
        key = field_of(row, "answerKey", str, **where)
        if len(labels) != len(texts) or key not in labels:
            raise InvalidInputError(
                f"answerKey {key!r} must be one of the option labels {labels!r}, one per text.",
                **where,
                field="answerKey",
            )
        return mcq_example(
            f"{self.name}/{_row_id(row, where)}",
            self.name,
            question,
            [str(t) for t in texts],
            [labels.index(key)],
            **where,
            meta={"labels": [str(label) for label in labels]},
        )


@dataset("fever_mc")
@dataclass(frozen=True, kw_only=True)
class Fever(_HubMcq):
    """FEVER claims as true/false questions; ``NOT ENOUGH INFO`` claims are left out."""

    split: str = with_default(HubDataset, "split", "labelled_dev")
    config: str = with_default(HubDataset, "config", "v1.0")
    hub_id: str = with_default(HubDataset, "hub_id", "fever/fever")
    description: ClassVar[str] = "FEVER claims, true (SUPPORTS) or false (REFUTES), as MCQ."
    note: ClassVar[str] = "One question per claim id; NOT ENOUGH INFO claims are left out."
    once_per_id: ClassVar[bool] = True
    labels: ClassVar[dict[str, int | None]] = {
        "SUPPORTS": 0,
        "REFUTES": 1,
        "NOT ENOUGH INFO": None,
    }

    def example(self, row: dict[str, Any], where: dict[str, Any]) -> Example | None:
        """Return the claim's question, or ``None`` for an unverifiable or repeated claim."""
        claim = field_of(row, "claim", str, **where)
        label = field_of(row, "label", str, **where)
        if label not in self.labels:
            raise InvalidInputError(
                f"The label must be one of {sorted(self.labels)}. Got {label!r}.",
                **where,
                field="label",
            )
        gold, example_id = self.labels[label], f"{self.name}/{_row_id(row, where)}"
        if gold is None:
            return None
        return mcq_example(example_id, self.name, claim_prompt(claim), TRUE_FALSE, [gold], **where)


@dataset("true_false")
@dataclass(frozen=True, kw_only=True)
class TrueFalse(_HubMcq):
    """TrueFalse statements (Azaria & Mitchell, 2023), true or false."""

    split: str = with_default(HubDataset, "split", "train")
    hub_id: str = with_default(HubDataset, "hub_id", "notrichardren/azaria-mitchell")
    description: ClassVar[str] = "TrueFalse statements (label 1 true, 0 false) as MCQ."

    def example(self, row: dict[str, Any], where: dict[str, Any]) -> Example:
        """Return the statement's true/false question."""
        name = "claim" if "claim" in row else "statement"
        claim = field_of(row, name, str, **where)
        label = row.get("label")
        if label not in (0, 1) or isinstance(label, bool | float):
            raise InvalidInputError(
                f"The label must be 0 or 1. Got {label!r}.", **where, field="label"
            )
        topic = row.get("dataset")
        return mcq_example(
            f"{self.name}/{_row_id(row, where)}",
            self.name,
            claim_prompt(claim),
            TRUE_FALSE,
            [0 if label == 1 else 1],
            **where,
            meta={"topic": topic} if isinstance(topic, str) else None,
        )


def _options(value: Any, where: dict[str, Any]) -> list[str]:
    """Return Med-HALT's options in index order, from an object or its JSON / Python text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(value)  # literals only: never runs code
            except (ValueError, SyntaxError):
                value = None
    if isinstance(value, list):
        return [str(v) for v in value]
    if not isinstance(value, dict):
        raise InvalidInputError(
            "The options must be an object of index -> text (or its text).",
            **where,
            field="options",
        )
    numbered = sorted((int(k), str(v)) for k, v in value.items() if str(k).isdigit())
    return [text for _, text in numbered]


@dataset("medhalt_fct")
@dataclass(frozen=True, kw_only=True)
class MedHaltFCT(_HubMcq):
    """Med-HALT reasoning FCT: medical exam questions with options (gold = ``correct_index``)."""

    split: str = with_default(HubDataset, "split", "train")
    config: str = with_default(HubDataset, "config", "reasoning_FCT")
    hub_id: str = with_default(HubDataset, "hub_id", "openlifescienceai/Med-HALT")
    description: ClassVar[str] = "Med-HALT reasoning FCT questions as MCQ (Hub or files)."

    def example(self, row: dict[str, Any], where: dict[str, Any]) -> Example:
        """Return the question with its options."""
        question = field_of(row, "question", str, **where)
        options = _options(row.get("options"), where)
        gold = row.get("correct_index")
        if isinstance(gold, str) and gold.strip().isdigit():
            gold = int(gold)
        if not isinstance(gold, int) or isinstance(gold, bool):
            raise InvalidInputError(
                f"correct_index must be an integer. Got {gold!r}.", **where, field="correct_index"
            )
        student = row.get("student_answer")
        return mcq_example(
            f"{self.name}/{_row_id(row, where)}",
            self.name,
            question,
            options,
            [gold],
            **where,
            meta={"student_answer": str(student)} if student is not None else None,
        )
