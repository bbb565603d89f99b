"""SQuAD v2: questions about a Wikipedia paragraph, a third of them unanswerable from it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from realitycheck.datasets._base import dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._hub import HubDataset
from realitycheck.datasets._io import IdMaker, field_of
from realitycheck.errors import InvalidInputError
from realitycheck.params import with_default
from realitycheck.records import Example

__all__ = ["SquadV2"]


def _flatten(obj: dict[str, Any], path: Path, line: int) -> Iterator[dict[str, Any]]:
    """Yield the flat rows of a file in the original nested SQuAD JSON layout."""
    for i, article in enumerate(field_of(obj, "data", list, path=path, line=line)):
        prefix = f"data[{i}]."
        title = article.get("title", "") if isinstance(article, dict) else ""
        paragraphs = field_of(article, "paragraphs", list, path=path, line=line, prefix=prefix)
        for j, paragraph in enumerate(paragraphs):
            inner = f"{prefix}paragraphs[{j}]."
            context = field_of(paragraph, "context", str, path=path, line=line, prefix=inner)
            for qa in field_of(paragraph, "qas", list, path=path, line=line, prefix=inner):
                answers = (qa.get("answers") or []) if isinstance(qa, dict) else []
                yield {
                    **(qa if isinstance(qa, dict) else {}),
                    "title": title,
                    "context": context,
                    "answers": {
                        "text": [a.get("text") for a in answers if isinstance(a, dict)],
                        "answer_start": [
                            a.get("answer_start") for a in answers if isinstance(a, dict)
                        ],
                    },
                }


@dataset("squad_v2")
@dataclass(frozen=True, kw_only=True)
class SquadV2(HubDataset):
    """SQuAD v2 questions with their paragraph as context (task ``rag_qa``).

    Loaded from the Hugging Face Hub (``load_dataset(hub_id, config, split=split)``)
    or, with ``path``, from local files: the Hub dataset's Parquet files, a JSON /
    JSON-lines export of it, or the original nested ``dev-v2.0.json``. References
    are the distinct gold answer texts; an unanswerable question has none and
    ``meta.answerable = False``, so reference-based labelers leave it out.

    The parameters (``path``, ``split``, ``config``, ``hub_id``, ``revision``)
    are those of :class:`~realitycheck.datasets._hub.HubDataset`.
    """

    config: str = with_default(HubDataset, "config", "squad_v2")
    hub_id: str = with_default(HubDataset, "hub_id", "rajpurkar/squad_v2")

    description: ClassVar[str] = (
        "SQuAD v2 validation (11,873 questions over Wikipedia paragraphs, 5,945 unanswerable) "
        "from the Hugging Face Hub or local files; no responses."
    )

    def _local_rows(
        self, path: Path, row_number: int, row: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        if "data" in row and "question" not in row:
            yield from _flatten(row, path, row_number)
        else:
            yield row

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the questions into examples (ids ``squad_v2/<id>``)."""
        examples = []
        ids = IdMaker()
        unanswerable = 0
        for path, row_number, row in self._rows():
            where: dict[str, Any] = {"path": path, "line": row_number}
            row_id = field_of(row, "id", str, **where)
            question = field_of(row, "question", str, **where)
            context = field_of(row, "context", str, **where)
            answers = field_of(row, "answers", dict, **where)
            texts = field_of(answers, "text", list, **where, prefix="answers.")
            starts = answers.get("answer_start") or []
            if any(not isinstance(t, str) for t in texts):
                raise InvalidInputError(
                    f"The answer texts must be strings. Got {texts!r} instead.",
                    **where,
                    field="answers.text",
                )
            if not question.strip() or not context.strip():
                name = "question" if not question.strip() else "context"
                raise InvalidInputError(f"The {name} is empty.", **where, field=name)
            references = tuple(dict.fromkeys(t.strip() for t in texts if t.strip()))
            unanswerable += not references
            examples.append(
                Example(
                    example_id=ids.make(f"squad_v2/{row_id}"),
                    dataset=self.name,
                    task="rag_qa",
                    question=question.strip(),
                    context=context,
                    references=references,
                    meta={
                        "answerable": bool(references),
                        "title": str(row.get("title") or ""),
                        "answer_starts": [int(s) for s in starts if isinstance(s, int)],
                    },
                )
            )
        if progress is not None:
            progress(len(examples))
        notes = [
            "Input only: generate responses with a backend, then label them.",
            "Task rag_qa: context = the paragraph; references = the distinct gold answer texts.",
            f"{unanswerable} question(s) are unanswerable from their paragraph: no references "
            "and meta.answerable = False (reference-based labelers leave them out).",
        ]
        if ids.repeats:
            notes.append(f"{ids.repeats} repeated id(s) got ids ending in #2, #3, ...")
        return Bundle(examples=examples, notes=notes)
