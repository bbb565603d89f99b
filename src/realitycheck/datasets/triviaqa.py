"""TriviaQA (rc.nocontext): trivia questions with answer aliases, an input for generation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.datasets._base import dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._hub import HubDataset
from realitycheck.datasets._io import IdMaker, field_of
from realitycheck.errors import InvalidInputError
from realitycheck.params import with_default
from realitycheck.records import Example

__all__ = ["TriviaQA"]


@dataset("triviaqa")
@dataclass(frozen=True, kw_only=True)
class TriviaQA(HubDataset):
    """TriviaQA questions (reading-comprehension set, no evidence) with answer aliases.

    Loaded from the Hugging Face Hub (``load_dataset(hub_id, config, split=split)``,
    i.e. ``mandarjoshi/trivia_qa``, the Hub's home of the former ``trivia_qa``)
    or, with ``path``, from local files of the same dataset (its Parquet files
    or a JSON / JSON-lines export). References are the answer's value followed
    by its aliases; the normalised aliases are kept in the example's meta.

    The parameters (``path``, ``split``, ``config``, ``hub_id``, ``revision``)
    are those of :class:`~realitycheck.datasets._hub.HubDataset`.
    """

    config: str = with_default(HubDataset, "config", "rc.nocontext")
    hub_id: str = with_default(HubDataset, "hub_id", "mandarjoshi/trivia_qa")

    description: ClassVar[str] = (
        "TriviaQA rc.nocontext validation (17,944 questions with answer aliases) from the "
        "Hugging Face Hub or local files; no responses."
    )

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the questions into examples (ids ``triviaqa/<question_id>``)."""
        examples = []
        ids = IdMaker()
        for path, row_number, row in self._rows():
            where: dict[str, Any] = {"path": path, "line": row_number}
            question = field_of(row, "question", str, **where)
            question_id = field_of(row, "question_id", str, **where)
            answer = field_of(row, "answer", dict, **where)
            value = field_of(answer, "value", str, **where, prefix="answer.")
            aliases = field_of(answer, "aliases", list, **where, prefix="answer.")
            normalized = answer.get("normalized_aliases") or []
            if any(not isinstance(a, str) for a in [*aliases, *normalized]):
                raise InvalidInputError(
                    "The answer aliases must be strings.", **where, field="answer.aliases"
                )
            if not question.strip():
                raise InvalidInputError("The question is empty.", **where, field="question")
            references = tuple(dict.fromkeys(a for a in [value, *aliases] if a.strip()))
            if not references:
                raise InvalidInputError(
                    "The answer has neither a value nor an alias.", **where, field="answer"
                )
            examples.append(
                Example(
                    example_id=ids.make(f"triviaqa/{question_id}"),
                    dataset=self.name,
                    task="qa",
                    question=question.strip(),
                    references=references,
                    meta={
                        "question_id": question_id,
                        "question_source": str(row.get("question_source") or ""),
                        "normalized_aliases": list(normalized),
                    },
                )
            )
        if progress is not None:
            progress(len(examples))
        notes = [
            "Input only: generate responses with a backend, then label them.",
            "references = the answer's value, then its aliases (duplicates dropped); "
            "meta.normalized_aliases keeps TriviaQA's normalised forms.",
            f"{ids.repeats} question id(s) occur more than once; repeats get ids ending "
            "in #2, #3, ...",
        ]
        return Bundle(examples=examples, notes=notes)
