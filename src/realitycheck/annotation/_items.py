"""What an annotator sees and says: items, their ids, the verdict vocabulary, safe JSON.

An *item* is one response of a run shown to people: its question,
references, context and response (and the automatic verdicts only when asked).
Its id is derived from the response id alone, so the same response is the
same item in every round and every file format.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from realitycheck.annotation._names import VERDICT_CHOICES
from realitycheck.errors import InvalidInputError

if TYPE_CHECKING:
    from realitycheck.store import RunData

__all__ = [
    "CANT_TELL",
    "FAITHFUL",
    "HALLUCINATED",
    "VERDICT_CHOICES",
    "Item",
    "check_annotator",
    "item_id",
    "items_of",
    "read_verdict",
    "round_id",
    "safe_json",
]

HALLUCINATED, FAITHFUL, CANT_TELL = VERDICT_CHOICES

_VERDICTS: dict[str, bool | None] = {
    "hallucinated": True,
    "faithful": False,
    "can't tell": None,
    "cant tell": None,
    "can't_tell": None,
    "cant_tell": None,
}
"""What a verdict cell may say (compared lower-cased, stripped): True / False / no verdict."""

_ANNOTATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._@+-]{0,99}")
"""An annotator name fit for the key ``human:<annotator>``: no comma, bracket, quote or colon."""

_UNSAFE_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def item_id(response_id: str) -> str:
    """Return the stable id of the item showing ``response_id`` (``i`` + 16 hex digits)."""
    return "i" + hashlib.sha256(response_id.encode("utf-8")).hexdigest()[:16]


def round_id(choice: Mapping[str, Any]) -> str:
    """Return the id of an export round: a hash of what was chosen (no time in it).

    The same selection of the same run gives the same id, so exporting twice
    is one round.
    """
    text = json.dumps(choice, sort_keys=True, default=str)
    return "r" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def read_verdict(value: Any, *, path: str, line: int | None, where: str) -> bool | None:
    """Return the verdict a cell or choice says: True (hallucinated), False, None (can't tell).

    Raises:
        InvalidInputError: The value is none of :data:`VERDICT_CHOICES`; names
            the file, the line (or task) and the field.
    """
    text = str(value).strip().lower().replace("\u2019", "'")
    if text in _VERDICTS:
        return _VERDICTS[text]
    raise InvalidInputError(
        f"The verdict must be one of {list(VERDICT_CHOICES)} (any case). Got {value!r:.80} "
        "instead.",
        path=path,
        line=line,
        field=where,
    )


def check_annotator(name: str, *, path: str, line: int | None, where: str) -> str:
    """Return ``name`` if it can name labels ``human:<name>``; else raise.

    A name starts with a letter or digit and holds at most 100 letters,
    digits, spaces and ``. _ @ + -`` (an e-mail address fits).

    Raises:
        InvalidInputError: Naming the file, line (or task) and field.
    """
    if not isinstance(name, str) or not _ANNOTATOR.fullmatch(name):
        raise InvalidInputError(
            "An annotator name must start with a letter or digit and hold at most 100 "
            "letters, digits, spaces and . _ @ + - (it names the labels human:<annotator>). "
            f"Got {name!r:.80} instead.",
            path=path,
            line=line,
            field=where,
        )
    return name


def safe_json(value: Any, *, indent: int | None = None) -> str:
    r"""Return ``value`` as JSON whose text shows no C1, DEL, bidi or line-separator character.

    Those characters are written as ``\uXXXX`` escapes: the parsed value is
    unchanged, but a terminal or an editor showing the file is not driven by
    the data (C0 controls are escaped by :func:`json.dumps` already).
    """
    text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=False)
    return _UNSAFE_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@dataclass(frozen=True)
class Item:
    """One response as annotators see it.

    Attributes:
        item_id: :func:`item_id` of the response.
        response_id: The response in the run.
        dataset: Its dataset.
        model: The model that wrote it.
        question: The question or instruction.
        references: The gold answers.
        context: The source passages.
        response: The response text.
        verdicts: Automatic verdicts by labeler key (``hallucinated`` /
            ``faithful`` / ``no verdict``); empty unless they are shown.
    """

    item_id: str
    response_id: str
    dataset: str
    model: str
    question: str
    references: tuple[str, ...]
    context: str
    response: str
    verdicts: dict[str, str] = field(default_factory=dict)

    @property
    def verdict_text(self) -> str:
        """The automatic verdicts on one line (``rouge_l: hallucinated; qa_judge: faithful``)."""
        return "; ".join(f"{k}: {v}" for k, v in self.verdicts.items())


def _verdict_word(value: float) -> str:
    return "no verdict" if value != value else "hallucinated" if value == 1.0 else "faithful"


def items_of(
    data: RunData, response_ids: Sequence[str], *, show: Sequence[str] | None
) -> list[Item]:
    """Return the items of ``response_ids`` (in that order) from a run's tables.

    Args:
        data: The run's tables.
        response_ids: The chosen responses.
        show: Labeler keys whose verdicts each item shows; ``None`` shows
            none (annotators blinded). Human labels are never shown.
    """
    responses = data.frame()
    examples = data.examples.set_index("example_id")
    wide = data.verdicts() if show else None
    out = []
    for rid in response_ids:
        row = responses.loc[rid]
        example = examples.loc[row["example_id"]]
        verdicts = {}
        if wide is not None and show:
            values = wide.loc[rid].to_dict()
            verdicts = {k: _verdict_word(float(values[k])) for k in show if k in values}
        refs = example["references"]
        out.append(
            Item(
                item_id=item_id(rid),
                response_id=rid,
                dataset=str(row["dataset"]),
                model=str(row["model"]),
                question=str(example["question"] or ""),
                references=tuple(str(r) for r in (() if refs is None else refs)),
                context=str(example["context"] or ""),
                response=str(row["text"] or ""),
                verdicts=verdicts,
            )
        )
    return out
