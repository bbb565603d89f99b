"""RAGTruth (test split as used by FaithJudge): span-level human labels of six generators."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from realitycheck.datasets._base import Dataset, dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._io import IdMaker, as_object, field_of, read_jsonl
from realitycheck.datasets.faithbench import ANNOTATED
from realitycheck.params import OneOf, SequenceOf, as_unique_tuple, param
from realitycheck.records import Example, Label, Response

__all__ = ["RagTruth"]

TASKS = {"qa": "rag_qa", "summary": "summary", "data2txt": "data2text"}


@dataset("ragtruth")
@dataclass(frozen=True, kw_only=True)
class RagTruth(Dataset):
    """RAGTruth: responses of six LLMs to QA, summary and data-to-text prompts.

    A response is hallucinated iff a human marked at least one span in it. The
    spans (with their ``label_type``) are kept, as JSON, in the label's ``raw``.
    Each example's ``meta["annotated_responses"]`` lists its responses with
    their spans (``span``, ``label`` = the span type, ``note`` = the annotator's
    comment) and a verdict (``unwanted`` with a span, else ``consistent``), in
    the format of :data:`realitycheck.datasets.faithbench.ANNOTATED`, for
    few-shot judges such as ``faithjudge``.

    Args:
        tasks: Which parts to load: any of ``qa`` (task ``rag_qa``), ``summary``
            and ``data2txt`` (task ``data2text``).
    """

    tasks: tuple[str, ...] = param(
        tuple(TASKS), SequenceOf(OneOf(TASKS), min_length=1), convert=as_unique_tuple
    )

    files: ClassVar[tuple[str, ...]] = (
        "ragtruth/qa.jsonl",
        "ragtruth/summary.jsonl",
        "ragtruth/data2txt.jsonl",
    )
    description: ClassVar[str] = (
        "RAGTruth test split (QA, summary, data-to-text): 2,617 responses of six LLMs "
        "with human hallucination spans."
    )

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the selected parts into examples, responses and ``human`` labels."""
        root = self.root()
        examples: list[Example] = []
        responses: list[Response] = []
        labels: list[Label] = []
        for task in self.tasks:
            path = root / "ragtruth" / f"{task}.jsonl"
            before = len(responses)
            for lineno, obj in read_jsonl(path):
                example, resp, labs = self._read_source(obj, task, path, lineno)
                examples.append(example)
                responses.extend(resp)
                labels.extend(labs)
            if progress is not None:
                progress(len(responses) - before)
        notes = [
            "A response is hallucinated (label `human`) iff annotators marked at least "
            "one span in it; the spans and their label_type are kept in the label's raw JSON "
            "and the label's category lists the span types.",
            f"Each example's meta['{ANNOTATED}'] lists its responses with their human "
            "spans (span type, annotator comment) and a verdict (unwanted with a span, else "
            "consistent), for few-shot judges such as faithjudge.",
            "Tasks: qa -> rag_qa (context = question + passages), summary -> summary "
            "(context = article), data2txt -> data2text (context = the business JSON, "
            "indented).",
        ]
        return Bundle(examples=examples, responses=responses, labels=labels, notes=notes)

    def _read_source(
        self, obj: dict[str, Any], task: str, path: Path, lineno: int
    ) -> tuple[Example, list[Response], list[Label]]:
        source_id = field_of(obj, "source_id", (int, str), path=path, line=lineno)
        question, context = _source_text(obj, task, path, lineno)
        example_id = f"ragtruth/{task}/{source_id}"
        shots: list[dict[str, Any]] = []  # filled below, once the responses are read
        example = Example(
            example_id=example_id,
            dataset=self.name,
            task=TASKS[task],
            question=question,
            context=context,
            meta={"ragtruth_task": task, "source_id": str(source_id), ANNOTATED: shots},
        )
        ids = IdMaker()
        responses, labels = [], []
        items = field_of(obj, "responses", list, path=path, line=lineno)
        for i, item in enumerate(items):
            prefix = f"responses[{i}]."
            as_object(item, "response", path=path, line=lineno, field=f"responses[{i}]")
            model = field_of(item, "model", str, path=path, line=lineno, prefix=prefix)
            text = field_of(item, "response", str, path=path, line=lineno, prefix=prefix)
            spans = field_of(item, "labels", list, path=path, line=lineno, prefix=prefix)
            for j, span in enumerate(spans):
                span_prefix = f"{prefix}labels[{j}]."
                as_object(span, "span", path=path, line=lineno, field=f"{prefix}labels[{j}]")
                field_of(span, "label_type", str, path=path, line=lineno, prefix=span_prefix)
            response_id = ids.make(f"{example_id}/{model}")
            kinds = sorted({s["label_type"] for s in spans})
            responses.append(
                Response(
                    response_id=response_id,
                    example_id=example_id,
                    model=model,
                    text=text,
                    meta={"n_spans": len(spans), "span_types": kinds},
                )
            )
            shots.append(
                {
                    "response_id": response_id,
                    "model": model,
                    "text": text,
                    "verdict": "unwanted" if spans else "consistent",
                    "human_label": "+".join(kinds),
                    "annotations": [
                        {
                            "span": str(span.get("text") or ""),
                            "source_span": "",
                            "label": span["label_type"],
                            "note": str(span.get("meta") or "").strip(),
                        }
                        for span in spans
                    ],
                }
            )
            labels.append(
                Label(
                    response_id=response_id,
                    labeler="human",
                    hallucinated=bool(spans),
                    category="+".join(kinds),
                    raw=json.dumps(spans, ensure_ascii=False, sort_keys=True),
                    spec=self.spec_json,
                )
            )
        return example, responses, labels


def _source_text(obj: dict[str, Any], task: str, path: Path, lineno: int) -> tuple[str, str]:
    """Return ``(question, context)`` of a source line."""
    if task == "summary":
        return "", field_of(obj, "source", str, path=path, line=lineno)
    source = field_of(obj, "source", dict, path=path, line=lineno)
    if task == "qa":
        question = field_of(source, "question", str, path=path, line=lineno, prefix="source.")
        passages = field_of(source, "passages", str, path=path, line=lineno, prefix="source.")
        return question, f"Question: {question}\n\n{passages}"
    return "", json.dumps(source, indent=2, ensure_ascii=False)
