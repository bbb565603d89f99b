"""BEGIN: knowledge-grounded dialogue responses with human attribution labels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from realitycheck.datasets._base import Dataset, dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._io import IdMaker, read_text, split_lines
from realitycheck.errors import InvalidInputError
from realitycheck.params import OneOf, SequenceOf, as_unique_tuple, param
from realitycheck.records import Example, Label, Response

__all__ = ["Begin"]

SPLITS = {
    "wow-test": "begin/begin_test_wow.tsv",
    "wow-dev": "begin/begin_dev_wow.tsv",
    "cmu-dev": "begin/begin_dev_cmu.tsv",
    "tc-dev": "begin/topicalchat_begin_dev_tc.tsv",
}
HEADER = ("model_name", "data_source", "knowledge", "message", "response", "begin_label")
GENERIC = {"exclude": None, "hallucinated": True, "faithful": False}
VERDICTS = {"Fully attributable": False, "Not fully attributable": True}


@dataset("begin")
@dataclass(frozen=True, kw_only=True)
class Begin(Dataset):
    """BEGIN: responses of gpt2, t5, ctrl and doha grounded in a knowledge snippet.

    Context = the knowledge, question = the user's message, response = the
    model's turn. ``Fully attributable`` -> not hallucinated, ``Not fully
    attributable`` -> hallucinated, ``Generic`` as the ``generic`` parameter says.

    Args:
        generic: How a ``Generic`` response is labelled: ``exclude`` (None,
            category ``generic``), ``hallucinated`` or ``faithful``.
        splits: Which files to read: any of ``wow-test``, ``wow-dev``,
            ``cmu-dev``, ``tc-dev``.
    """

    generic: str = param("exclude", OneOf(GENERIC))
    splits: tuple[str, ...] = param(
        tuple(SPLITS), SequenceOf(OneOf(SPLITS), min_length=1), convert=as_unique_tuple
    )

    files: ClassVar[tuple[str, ...]] = tuple(SPLITS.values())
    description: ClassVar[str] = (
        "BEGIN: 4,836 knowledge-grounded dialogue responses (WoW, CMU-DoG, TopicalChat) "
        "with human attribution labels."
    )

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the selected TSV files into records."""
        root = self.root()
        out = Bundle(examples=[])
        for split in self.splits:
            before = len(out.responses)
            self._read(root / SPLITS[split], split, out)
            if progress is not None:
                progress(len(out.responses) - before)
        out.notes.extend(
            [
                "`human`: 'Fully attributable' -> not hallucinated, 'Not fully attributable' "
                f"-> hallucinated, 'Generic' -> {self.generic} "
                "(exclude = None with category 'generic').",
                "Examples group the rows of a file with the same knowledge and message; "
                "context = knowledge, question = message, model = model_name.",
                "The TSV files have no quoting: each line is split on tabs as it is.",
            ]
        )
        return out

    def _read(self, path: Path, split: str, out: Bundle) -> None:
        lines = split_lines(read_text(path))
        if not lines or tuple(lines[0].split("\t")) != HEADER:
            raise InvalidInputError(
                f"The first line must be the header {HEADER}. "
                f"Got {tuple(lines[0].split(chr(9))) if lines else 'an empty file'} instead.",
                path=path,
                line=1,
            )
        examples: dict[tuple[str, str], str] = {}
        ids = IdMaker()
        for line, text in enumerate(lines[1:], start=2):
            if not text.strip():
                continue
            cells = text.split("\t")
            if len(cells) != len(HEADER):
                raise InvalidInputError(
                    f"Each row must have {len(HEADER)} tab-separated fields. "
                    f"Got {len(cells)} instead.",
                    path=path,
                    line=line,
                )
            row = dict(zip(HEADER, cells, strict=True))
            label = row["begin_label"].strip()
            if label not in VERDICTS and label != "Generic":
                raise InvalidInputError(
                    "The label must be 'Fully attributable', 'Not fully attributable' or "
                    f"'Generic'. Got {label!r} instead.",
                    path=path,
                    line=line,
                    field="begin_label",
                )
            if not row["response"].strip():
                raise InvalidInputError(
                    "The response is empty.", path=path, line=line, field="response"
                )
            key = (row["knowledge"], row["message"])
            if key not in examples:
                examples[key] = f"begin/{split}/{len(examples)}"
                out.examples.append(
                    Example(
                        example_id=examples[key],
                        dataset=self.name,
                        task="dialogue",
                        question=row["message"],
                        context=row["knowledge"],
                        meta={"split": split, "source": row["data_source"]},
                    )
                )
            model = row["model_name"]
            response_id = ids.make(f"{examples[key]}/{model}")
            out.responses.append(
                Response(
                    response_id=response_id,
                    example_id=examples[key],
                    model=model,
                    text=row["response"],
                    meta={"split": split, "source": row["data_source"], "line": line},
                )
            )
            generic = label == "Generic"
            out.labels.append(
                Label(
                    response_id=response_id,
                    labeler="human",
                    hallucinated=GENERIC[self.generic] if generic else VERDICTS[label],
                    category="generic" if generic else label.lower(),
                    raw=label,
                    spec=self.spec_json,
                )
            )
