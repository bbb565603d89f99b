"""HaluEval (general part): ChatGPT answers to user queries with human yes/no labels."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from realitycheck.datasets._base import Dataset, dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._io import field_of, read_jsonl
from realitycheck.errors import InvalidInputError
from realitycheck.records import Example, Label, Response

__all__ = ["HaluEvalDialogue", "HaluEvalGeneral", "HaluEvalQA", "HaluEvalSummarization"]

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


@dataclass(frozen=True, kw_only=True)
class _HaluEvalPairs(Dataset):
    """A HaluEval part whose rows pair a right and a hallucinated output.

    Each row becomes one example and two responses, ``<id>/right`` (model
    ``reference``: the gold output of the source dataset) and
    ``<id>/hallucinated`` (model ``chatgpt``: written and filtered by ChatGPT
    to be plausible but wrong). Their ``human`` labels hold by construction;
    no annotator judged each response.
    """

    task: ClassVar[str] = ""
    question_field: ClassVar[str] = ""
    context_field: ClassVar[str] = ""
    right_field: ClassVar[str] = ""
    hallucinated_field: ClassVar[str] = ""

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the file (JSON lines despite its ``.json`` name) into records."""
        path = self.root() / self.files[0]
        out = Bundle(examples=[])
        for lineno, obj in read_jsonl(path):
            example_id = f"{self.name}/{lineno}"
            question = ""
            if self.question_field:
                question = field_of(obj, self.question_field, str, path=path, line=lineno)
            out.examples.append(
                Example(
                    example_id=example_id,
                    dataset=self.name,
                    task=self.task,
                    question=question,
                    context=field_of(obj, self.context_field, str, path=path, line=lineno),
                )
            )
            for kind, model, field, hallucinated in (
                ("right", "reference", self.right_field, False),
                ("hallucinated", "chatgpt", self.hallucinated_field, True),
            ):
                response_id = f"{example_id}/{kind}"
                text = field_of(obj, field, str, path=path, line=lineno)
                out.responses.append(
                    Response(response_id=response_id, example_id=example_id, model=model, text=text)
                )
                out.labels.append(
                    Label(
                        response_id=response_id,
                        labeler="human",
                        hallucinated=hallucinated,
                        category=kind,
                        raw=field,
                        spec=self.spec_json,
                    )
                )
        if progress is not None:
            progress(len(out.responses))
        out.notes.extend(
            [
                f"Each row yields two responses: `{self.right_field}` (model `reference`, "
                f"faithful) and `{self.hallucinated_field}` (model `chatgpt`, hallucinated).",
                "The labels hold by construction (HaluEval generated and filtered the "
                "hallucinated outputs with ChatGPT); they are not per-response human judgements, "
                "and every example has exactly one of each, so the hallucination rate is 50%.",
                f"Task `{self.task}`; the context is `{self.context_field}`"
                + (f", the question `{self.question_field}`." if self.question_field else "."),
            ]
        )
        return out


@dataset("halueval_qa")
@dataclass(frozen=True, kw_only=True)
class HaluEvalQA(_HaluEvalPairs):
    """HaluEval QA: 10,000 HotpotQA questions with knowledge, a right and a hallucinated answer.

    Not in the shared data folder: ``realitycheck datasets fetch halueval_qa
    --trust-unpinned`` downloads it from RUCAIBox/HaluEval at the pinned commit.
    """

    files: ClassVar[tuple[str, ...]] = ("halueval/qa_data.json",)
    description: ClassVar[str] = (
        "HaluEval QA: knowledge, question, right and ChatGPT-hallucinated answer per row "
        "(two responses per example, labels by construction)."
    )
    task: ClassVar[str] = "qa"
    question_field: ClassVar[str] = "question"
    context_field: ClassVar[str] = "knowledge"
    right_field: ClassVar[str] = "right_answer"
    hallucinated_field: ClassVar[str] = "hallucinated_answer"


@dataset("halueval_dialogue")
@dataclass(frozen=True, kw_only=True)
class HaluEvalDialogue(_HaluEvalPairs):
    """HaluEval dialogue: 10,000 OpenDialKG turns with knowledge, a right and a hallucinated reply.

    Not in the shared data folder: fetch with ``--trust-unpinned`` (see ``halueval_qa``).
    """

    files: ClassVar[tuple[str, ...]] = ("halueval/dialogue_data.json",)
    description: ClassVar[str] = (
        "HaluEval dialogue: knowledge, dialogue history, right and ChatGPT-hallucinated reply "
        "per row (two responses per example, labels by construction)."
    )
    task: ClassVar[str] = "dialogue"
    question_field: ClassVar[str] = "dialogue_history"
    context_field: ClassVar[str] = "knowledge"
    right_field: ClassVar[str] = "right_response"
    hallucinated_field: ClassVar[str] = "hallucinated_response"


@dataset("halueval_summarization")
@dataclass(frozen=True, kw_only=True)
class HaluEvalSummarization(_HaluEvalPairs):
    """HaluEval summarization: 10,000 CNN/DailyMail documents, a right and a hallucinated summary.

    Not in the shared data folder: fetch with ``--trust-unpinned`` (see ``halueval_qa``).
    """

    files: ClassVar[tuple[str, ...]] = ("halueval/summarization_data.json",)
    description: ClassVar[str] = (
        "HaluEval summarization: document, right and ChatGPT-hallucinated summary per row "
        "(two responses per example, labels by construction)."
    )
    task: ClassVar[str] = "summary"
    context_field: ClassVar[str] = "document"
    right_field: ClassVar[str] = "right_summary"
    hallucinated_field: ClassVar[str] = "hallucinated_summary"
