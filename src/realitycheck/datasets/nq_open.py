"""NQ-Open (dev): questions with gold answer lists, an input for generation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.datasets._base import Dataset, dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._io import field_of, read_jsonl
from realitycheck.errors import InvalidInputError
from realitycheck.records import Example

__all__ = ["NqOpen"]


@dataset("nq_open")
@dataclass(frozen=True, kw_only=True)
class NqOpen(Dataset):
    """NQ-Open dev split: 3,610 questions and their gold answers; no model outputs."""

    files: ClassVar[tuple[str, ...]] = ("nq_open/NQ-open.dev.jsonl",)
    description: ClassVar[str] = (
        "NQ-Open dev: 3,610 open-domain questions with gold answer lists (no responses)."
    )

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the questions into examples (ids ``nq_open/<line number>``)."""
        path = self.root() / self.files[0]
        examples = []
        for lineno, obj in read_jsonl(path):
            question = field_of(obj, "question", str, path=path, line=lineno)
            answers = field_of(obj, "answer", list, path=path, line=lineno)
            if not answers or any(not isinstance(a, str) for a in answers):
                raise InvalidInputError(
                    f"The answer must be a non-empty list of strings. Got {answers!r} instead.",
                    path=path,
                    line=lineno,
                    field="answer",
                )
            examples.append(
                Example(
                    example_id=f"nq_open/{lineno}",
                    dataset=self.name,
                    task="qa",
                    question=question,
                    references=tuple(answers),
                )
            )
        if progress is not None:
            progress(len(examples))
        notes = ["Input only: generate responses with a backend, then label them."]
        return Bundle(examples=examples, notes=notes)
