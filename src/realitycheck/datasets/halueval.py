"""HaluEval (general part): ChatGPT answers to user queries with human yes/no labels."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.datasets._base import Bundle, Dataset, dataset
from realitycheck.datasets._io import field_of, read_jsonl
from realitycheck.errors import InvalidInputError
from realitycheck.records import Example, Label, Response

__all__ = ["HaluEvalGeneral"]

VERDICTS = {"yes": True, "no": False}


@dataset("halueval_general")
@dataclass(frozen=True, kw_only=True)
class HaluEvalGeneral(Dataset):
    """HaluEval general: 4,507 ChatGPT answers, 815 judged hallucinated by humans.

    There is no grounding source (task ``open``). Ids use the line number of the
    file, because its ``ID`` field is empty or the literal ``"ID"`` on three lines;
    the original ``ID`` is kept in the example's meta.
    """

    files: ClassVar[tuple[str, ...]] = ("halueval/general_data.json",)
    description: ClassVar[str] = (
        "HaluEval general: 4,507 ChatGPT answers to user queries, human yes/no "
        "hallucination labels (815 yes) with the hallucinated spans."
    )

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the file (JSON lines despite its ``.json`` name) into records."""
        path = self.root() / self.files[0]
        examples, responses, labels = [], [], []
        for lineno, obj in read_jsonl(path):
            query = field_of(obj, "user_query", str, path=path, line=lineno)
            text = field_of(obj, "chatgpt_response", str, path=path, line=lineno)
            verdict = field_of(obj, "hallucination", str, path=path, line=lineno)
            spans = field_of(obj, "hallucination_spans", list, path=path, line=lineno)
            if verdict not in VERDICTS:
                raise InvalidInputError(
                    f"The label must be 'yes' or 'no'. Got {verdict!r} instead.",
                    path=path,
                    line=lineno,
                    field="hallucination",
                )
            example_id = f"halueval_general/{lineno}"
            response_id = f"{example_id}/chatgpt"
            examples.append(
                Example(
                    example_id=example_id,
                    dataset=self.name,
                    task="open",
                    question=query,
                    meta={"halueval_id": obj.get("ID")},
                )
            )
            responses.append(
                Response(
                    response_id=response_id,
                    example_id=example_id,
                    model="chatgpt",
                    text=text,
                    meta={"hallucination_spans": spans},
                )
            )
            labels.append(
                Label(
                    response_id=response_id,
                    labeler="human",
                    hallucinated=VERDICTS[verdict],
                    category="hallucinated" if VERDICTS[verdict] else "faithful",
                    raw=json.dumps(
                        {"hallucination": verdict, "hallucination_spans": spans}, ensure_ascii=False
                    ),
                    spec=self.spec_json,
                )
            )
        if progress is not None:
            progress(len(responses))
        notes = [
            "`human`: hallucination 'yes' -> hallucinated, 'no' -> not; the marked spans are "
            "kept in the response's meta and the label's raw JSON.",
            "Task `open`: no grounding source, the user query is the question.",
            "Ids are `halueval_general/<line number>`; the file's own ID is in the example "
            "meta (it is '' or 'ID' on three lines).",
        ]
        return Bundle(examples=examples, responses=responses, labels=labels, notes=notes)
