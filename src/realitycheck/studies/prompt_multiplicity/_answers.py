"""Each response as an answer: its question, variant, retrieval setting, answer and correctness.

The study compares a question's answers across prompt variants. An answer is
what two variants must share to *agree*:

- ``agreement="answer"``: for multiple choice, the chosen option's index in
  the question's original option list (``meta["chosen"]`` of the choose
  stage, so a shuffled option order still compares); for free-form text, the
  text normalised as in SQuAD (:func:`realitycheck.text.normalize_answer`:
  lower case, no punctuation or articles, single spaces), so two answers
  agree when they are the same words;
- ``agreement="label"``: the correctness label itself, so two variants agree
  when both are right or both wrong (coarser; it never tells two wrong
  answers apart).

A response answered with retrieval carries ``meta["passages"]`` (and the
retriever's key in ``meta["retriever"]``); its ``retriever`` here is that key
(``"retrieval"`` when only the passages are recorded), and ``""`` without
retrieval. Responses without a correctness verdict take no part.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from realitycheck.store import RunData
from realitycheck.text import normalize_answer

__all__ = [
    "AGREEMENTS",
    "COLUMNS",
    "GOLD",
    "answer_table",
    "correctness_labeler",
    "retriever_of",
]

AGREEMENTS = ("answer", "label")
GOLD = "gold"
"""The labeler key of the choose stage's correctness labels (the fallback reference)."""
COLUMNS = ["model", "retriever", "example_id", "variant", "response_id", "answer", "correct"]


def correctness_labeler(data: RunData, dataset: str, reference: str) -> str | None:
    """The labels that say whether an answer is right: ``reference``, else ``gold``, else None."""
    present = data.labelers_of(dataset)
    for key in (reference, GOLD):
        if key in present:
            return key
    return None


def _meta(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if isinstance(value, str) and value else {}
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def retriever_of(meta: Any) -> str:
    """The retriever key of a response's meta (JSON text or mapping); ``""`` without retrieval."""
    meta = _meta(meta)
    if not isinstance(meta.get("passages"), list):
        return ""
    return str(meta.get("retriever") or "retrieval")


def _answer(meta: dict[str, Any], text: str, correct: bool, agreement: str) -> Any:
    if agreement == "label":
        return bool(correct)
    chosen = meta.get("chosen")
    if isinstance(chosen, int) and not isinstance(chosen, bool):
        return chosen
    return normalize_answer(str(text))


def answer_table(
    data: RunData, dataset: str, labeler: str, agreement: str
) -> tuple[pd.DataFrame, int]:
    """One row per answered (model, retriever, question, variant), with :data:`COLUMNS`.

    ``correct`` is ``True`` where ``labeler`` says the response is not
    hallucinated. Where one (model, retriever, question, variant) has several
    responses (several plans), the first by response id is kept.

    Returns:
        The table and the number of repeated responses left out.
    """
    frame = data.frame(dataset)
    hallucinated = data.verdicts(dataset)[labeler]
    frame = frame.assign(_h=hallucinated)[hallucinated.notna()].sort_index()
    metas = [_meta(m) for m in frame["meta"]]
    correct = [not bool(h) for h in frame["_h"]]
    table = pd.DataFrame(
        {
            "model": frame["model"].astype(str).to_numpy(),
            "retriever": [retriever_of(m) for m in metas],
            "example_id": frame["example_id"].astype(str).to_numpy(),
            "variant": frame["prompt_variant"].astype(str).to_numpy(),
            "response_id": frame.index.astype(str),
            "answer": [
                _answer(m, t, c, agreement)
                for m, t, c in zip(metas, frame["text"], correct, strict=True)
            ],
            "correct": correct,
        },
        columns=COLUMNS,
    )
    kept = table.drop_duplicates(["model", "retriever", "example_id", "variant"], keep="first")
    return kept, len(table) - len(kept)
