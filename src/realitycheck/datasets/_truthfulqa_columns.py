r"""TruthfulQA's judged answers as Arrow columns, with no Python object per answer.

The columnar twin of the answer loop in :mod:`.truthfulqa`: both JSON-lines
files are read by Arrow's parser (:func:`.read_jsonl_table`), the prompts split
at their first ``\nA: `` over the whole column, and Python runs once per distinct
question and per distinct completion, never per answer. Informativeness votes
are counted per (question, answer) pair and looked up by an integer code of the pair.

:func:`answer_columns` returns ``None`` whenever the files hold anything the
record loop would reject or treat specially (a blank line, a prompt that does
not parse, a completion other than yes/no, an unknown question under
``unmatched="error"``); the caller then runs the record loop, which names the
file, line and field of the error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from realitycheck.datasets._arrow_jsonl import read_jsonl_table
from realitycheck.datasets._truthfulqa_format import EXTRA_ID, VERDICT
from realitycheck.records import Example
from realitycheck.store import from_numpy, from_texts, scalar, to_numpy

__all__ = ["AnswerColumns", "answer_columns"]


@dataclass(frozen=True)
class AnswerColumns:
    """One judged answer per row, in file order, and what the notes count.

    Attributes:
        responses: Columns of the responses table (ids, texts, meta JSON).
        labels: Columns of the ``human`` labels table (without ``spec``).
        extra: The examples made for questions not in the CSV, in order.
        counts: ``extra``, ``unmatched_rows``, ``repeats``, ``conflicting``
            (see :func:`.truthfulqa.mapping_notes`).
    """

    responses: dict[str, pa.Array]
    labels: dict[str, pa.Array]
    extra: list[Example]
    counts: dict[str, int]


def _split_prompts(prompts: pa.Array, suffix: str) -> tuple[pa.Array, pa.Array] | None:
    r"""(question, answer) of each ``Q: <question>\nA: <answer>\n<suffix>:`` prompt, or None.

    The groups of the record loop's ``Q: (.*?)\nA: (.*)\n<suffix>:`` (full match,
    dot matching newlines): the question ends at the first ``\nA: ``, which can
    overlap neither the ``Q: `` before it nor the ``\n<suffix>:`` after it.
    """
    end = f"\n{suffix}:"
    halves = pc.split_pattern(prompts, "\nA: ", max_splits=1)
    valid = pc.and_(
        pc.and_(pc.starts_with(prompts, "Q: "), pc.ends_with(prompts, end)),
        pc.equal(pc.list_value_length(halves), scalar(2)),
    )
    if not pc.all(valid).as_py():
        return None
    question = pc.utf8_slice_codeunits(pc.list_element(halves, scalar(0)), 3)
    answer = pc.utf8_slice_codeunits(pc.list_element(halves, scalar(1)), 0, -len(end))
    return question, answer


def _verdicts(completions: pa.Array) -> pa.Array | None:
    """Each completion's verdict (`` yes`` true, `` no`` false), or None if one is neither."""
    distinct = pc.unique(completions)
    values = [VERDICT.get(c.strip()) for c in distinct.to_pylist()]
    if None in values:
        return None
    return pc.take(from_numpy(np.array(values, dtype=bool)), pc.index_in(completions, distinct))


def _pair_codes(first: pa.Array, second: pa.Array) -> np.ndarray:
    """One int64 code per row, equal exactly where the (first, second) text pairs are equal."""
    a = pc.dictionary_encode(first)
    b = pc.dictionary_encode(second)
    width = max(len(b.dictionary), 1)
    return to_numpy(a.indices).astype(np.int64) * width + to_numpy(b.indices).astype(np.int64)


def _votes(info: pa.Table, question: pa.Array, answer: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Per answer, the yes and no informativeness votes of its (question, answer) pair.

    The pairs of both files get one code each (:func:`_pair_codes` over the two
    files together); votes are counted per code and looked up by it.
    """
    verdict = _verdicts(info.column("completion").combine_chunks())
    parsed = _split_prompts(info.column("prompt").combine_chunks(), "Helpful")
    if verdict is None or parsed is None:
        raise LookupError("finetune_info.jsonl is not plain")
    n = len(question)
    codes = _pair_codes(
        pa.concat_arrays([question, parsed[0]]), pa.concat_arrays([answer, parsed[1]])
    )
    mine, theirs = codes[:n], codes[n:]
    voted, slot = np.unique(theirs, return_inverse=True)
    says_yes = to_numpy(verdict).astype(bool)
    yes_per = np.bincount(slot, weights=says_yes, minlength=len(voted)).astype(np.int64)
    no_per = np.bincount(slot, weights=~says_yes, minlength=len(voted)).astype(np.int64)
    if not len(voted):  # no votes at all
        zeros = from_numpy(np.zeros(n, dtype=np.int64))
        return zeros, zeros
    where = np.searchsorted(voted, mine).clip(max=len(voted) - 1)
    found = voted[where] == mine
    yes = np.where(found, yes_per[where], 0)
    no = np.where(found, no_per[where], 0)
    return from_numpy(yes.astype(np.int64)), from_numpy(no.astype(np.int64))


def _meta(yes: pa.Array, no: pa.Array, line: pa.Array) -> pa.Array:
    """Each answer's meta as the store's JSON text (sorted keys; see ``_response_meta``)."""
    words = {w: scalar(w) for w in ("null", "true", "false")}
    majority = pc.if_else(
        pc.equal(yes, no),
        words["null"],
        pc.if_else(pc.greater(yes, no), words["true"], words["false"]),
    )
    parts = [
        scalar('{"informative": '),
        majority,
        scalar(', "informative_votes": {"no": '),
        pc.cast(no, pa.string()),
        scalar(', "yes": '),
        pc.cast(yes, pa.string()),
        scalar('}, "line": '),
        pc.cast(line, pa.string()),
        scalar("}"),
    ]
    return pc.binary_join_element_wise(*parts, scalar(""))


def _example_ids(
    question: pa.Array, by_question: Mapping[str, Example], *, dataset: str, error: bool
) -> tuple[pa.Array, list[Example]] | None:
    """Each answer's example id, and the examples made for unknown questions (None: error)."""
    distinct = pc.unique(question)
    extra: dict[str, Example] = {}
    ids = []
    for q in distinct.to_pylist():  # in order of first appearance, as the record loop meets them
        example = by_question.get(q.strip()) or extra.get(q)
        if example is None:
            if error:
                return None
            example = Example(
                example_id=f"{EXTRA_ID}{len(extra)}",
                dataset=dataset,
                task="qa",
                question=q,
                meta={"error": "question not in TruthfulQA.csv"},
            )
            extra[q] = example
        ids.append(example.example_id)
    return pc.take(from_texts(ids), pc.index_in(question, distinct)), list(extra.values())


def _pair_counts(example_id: pa.Array, text: pa.Array, hallucinated: pa.Array) -> dict[str, int]:
    """Rows repeating an (example, answer) pair, and repeated pairs judged both ways."""
    codes = _pair_codes(example_id, text)
    pairs = np.unique(codes)
    judged = np.unique(codes * 2 + to_numpy(hallucinated).astype(np.int64))
    both = np.count_nonzero(np.bincount(np.searchsorted(pairs, judged // 2)) > 1)
    return {"repeats": len(codes) - len(pairs), "conflicting": int(both)}


def answer_columns(
    truth_path: Path,
    info_path: Path,
    by_question: Mapping[str, Example],
    *,
    dataset: str,
    unmatched_error: bool,
) -> AnswerColumns | None:
    """The judged answers of ``finetune_truth.jsonl`` as columns, or None (use the record loop).

    Args:
        truth_path: ``finetune_truth.jsonl``.
        info_path: ``finetune_info.jsonl``.
        by_question: The CSV's examples by their stripped question.
        dataset: The name the examples carry.
        unmatched_error: A question not in the CSV is an error (``unmatched="error"``).
    """
    truth = read_jsonl_table(truth_path, ["prompt", "completion"])
    info = read_jsonl_table(info_path, ["prompt", "completion"])
    if truth is None or info is None:
        return None
    completion = truth.column("completion").combine_chunks()
    parsed = _split_prompts(truth.column("prompt").combine_chunks(), "True")
    verdict = _verdicts(completion)
    if parsed is None or verdict is None:
        return None
    question, answer = parsed
    found = _example_ids(question, by_question, dataset=dataset, error=unmatched_error)
    if found is None:
        return None
    example_id, extra = found
    try:
        yes, no = _votes(info, question, answer)
    except LookupError:
        return None
    line = from_numpy(np.arange(1, len(answer) + 1, dtype=np.int64))
    hallucinated = pc.invert(verdict)
    responses: dict[str, Any] = {
        "response_id": pc.binary_join_element_wise(
            example_id, pc.cast(line, pa.string()), scalar("/")
        ),
        "example_id": example_id,
        "text": answer,
        "meta": _meta(yes, no, line),
    }
    labels = {
        "response_id": responses["response_id"],
        "hallucinated": hallucinated,
        "category": pc.if_else(hallucinated, scalar("false"), scalar("true")),
        "raw": completion,
    }
    counts = {
        "extra": len(extra),
        "unmatched_rows": int(pc.sum(pc.starts_with(example_id, EXTRA_ID)).as_py() or 0),
        **_pair_counts(example_id, answer, hallucinated),
    }
    return AnswerColumns(responses, labels, extra, counts)
