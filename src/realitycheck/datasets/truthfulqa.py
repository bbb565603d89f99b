"""TruthfulQA: the 817 questions and the human-judged answers of its fine-tuning files."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from realitycheck.datasets._base import Dataset, dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._io import field_of, read_jsonl, read_text
from realitycheck.datasets._truthfulqa_format import EXTRA_ID, VERDICT
from realitycheck.errors import InvalidInputError
from realitycheck.params import OneOf, param
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    from realitycheck.datasets._table_bundle import TableBundle

__all__ = ["TruthfulQA"]

COLUMNS = ("Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers")
UNMATCHED = ("keep", "error")


def _split(cell: str) -> list[str]:
    return [part.strip() for part in cell.split(";") if part.strip()]


_PROMPTS = {s: re.compile(rf"Q: (.*?)\nA: (.*)\n{s}:", flags=re.S) for s in ("True", "Helpful")}


def _parse(prompt: str, suffix: str, path: Path, line: int) -> tuple[str, str]:
    match = _PROMPTS[suffix].fullmatch(prompt)
    if match is None:
        raise InvalidInputError(
            f"The prompt must read 'Q: <question>\\nA: <answer>\\n{suffix}:'. "
            f"Got {prompt[:60]!r} instead.",
            path=path,
            line=line,
            field="prompt",
        )
    return match.group(1), match.group(2)


def _verdict(obj: dict[str, Any], path: Path, line: int) -> bool:
    completion = field_of(obj, "completion", str, path=path, line=line)
    if completion.strip() not in VERDICT:
        raise InvalidInputError(
            f"The completion must be ' yes' or ' no'. Got {completion!r} instead.",
            path=path,
            line=line,
            field="completion",
        )
    return VERDICT[completion.strip()]


@dataset("truthfulqa")
@dataclass(frozen=True, kw_only=True)
class TruthfulQA(Dataset):
    """TruthfulQA questions with 22,434 answers judged true / false by humans.

    Examples come from ``TruthfulQA.csv`` (references = Best + Correct Answers,
    incorrect references = Incorrect Answers). Responses are the rows of
    ``finetune_truth.jsonl``, joined to the questions by their text; each carries
    a ``human`` label (" no" = hallucinated) and, in its meta, ``informative``
    from ``finetune_info.jsonl``.

    Args:
        unmatched: What to do with answers whose question is not in the CSV:
            ``keep`` (an extra example without references, marked in its meta
            and counted in the notes) or ``error`` (raise, naming the line).
    """

    unmatched: str = param("keep", OneOf(UNMATCHED))

    files: ClassVar[tuple[str, ...]] = (
        "truthfulqa/TruthfulQA.csv",
        "truthfulqa/finetune_truth.jsonl",
        "truthfulqa/finetune_info.jsonl",
    )
    description: ClassVar[str] = (
        "TruthfulQA: 817 questions with reference answers, plus 22,434 answers with human "
        "truthfulness (9,484 true) and informativeness judgements."
    )

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read questions, judged answers and informativeness into records."""
        read = self._read(self.root())
        if progress is not None:
            progress(len(read.rows))
        responses, labels = [], []
        for line, example_id, answer, hallucinated, completion, votes in read.rows:
            response_id = f"{example_id}/{line}"
            responses.append(
                Response(
                    response_id=response_id,
                    example_id=example_id,
                    model="unknown",
                    text=answer,
                    meta=_response_meta(votes, line),
                )
            )
            labels.append(
                Label(
                    response_id=response_id,
                    labeler="human",
                    hallucinated=hallucinated,
                    category="false" if hallucinated else "true",
                    raw=completion,
                    spec=self.spec_json,
                )
            )
        return Bundle(
            examples=read.examples, responses=responses, labels=labels, notes=read.notes()
        )

    def load_tables(self, *, progress: Callable[[int], Any] | None = None) -> TableBundle:
        """The tables of :meth:`load`, built column by column (no record per answer).

        Files the columnar reader does not take as they are (see
        :mod:`._truthfulqa_columns`) go through :meth:`load`, which names any error.
        """
        # pyarrow and the store on first use: listing the datasets imports this module.
        from realitycheck.datasets._table_bundle import TableBundle, columns_table
        from realitycheck.datasets._truthfulqa_columns import answer_columns
        from realitycheck.store import records_table

        root = self.root()
        examples = self._questions(root / self.files[0])
        found = answer_columns(
            root / self.files[1],
            root / self.files[2],
            {e.question.strip(): e for e in examples},
            dataset=self.name,
            unmatched_error=self.unmatched == "error",
        )
        if found is None:
            return TableBundle.of(self.load(progress=progress))
        n = len(found.responses["response_id"])
        if progress is not None:
            progress(n)
        return TableBundle(
            examples=records_table(examples + found.extra),
            responses=columns_table(Response, {**found.responses, "model": ["unknown"] * n}),
            labels=columns_table(
                Label, {**found.labels, "labeler": ["human"] * n, "spec": [self.spec_json] * n}
            ),
            notes=mapping_notes(**found.counts),
        )

    def _read(self, root: Path) -> _Read:
        """Parse the three files into examples and one row per judged answer."""
        examples = self._questions(root / self.files[0])
        by_question = {e.question.strip(): e for e in examples}
        informative = self._informative(root / self.files[2])
        truth_path = root / self.files[1]
        rows: list[_Row] = []
        extra: dict[str, Example] = {}
        unmatched_rows = 0
        for line, obj in read_jsonl(truth_path):
            question, answer = _parse(
                field_of(obj, "prompt", str, path=truth_path, line=line), "True", truth_path, line
            )
            hallucinated = not _verdict(obj, truth_path, line)
            example = by_question.get(question.strip()) or extra.get(question)
            if example is None:
                if self.unmatched == "error":
                    raise InvalidInputError(
                        f"The question {question!r} is not in TruthfulQA.csv.",
                        path=truth_path,
                        line=line,
                        field="prompt",
                    )
                example = Example(
                    example_id=f"{EXTRA_ID}{len(extra)}",
                    dataset=self.name,
                    task="qa",
                    question=question,
                    meta={"error": "question not in TruthfulQA.csv"},
                )
                extra[question] = example
            if example.example_id.startswith(EXTRA_ID):
                unmatched_rows += 1
            votes = informative.get((question, answer), _NO_VOTES)
            rows.append((line, example.example_id, answer, hallucinated, obj["completion"], votes))
        return _Read(examples + list(extra.values()), rows, len(extra), unmatched_rows)

    def _questions(self, path: Path) -> list[Example]:
        reader = csv.DictReader(io.StringIO(read_text(path).lstrip("\ufeff"), newline=""))
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InvalidInputError(
                f"The CSV must have the columns {COLUMNS}. Missing {missing}; "
                f"present: {reader.fieldnames}.",
                path=path,
                line=1,
                field=missing[0],
            )
        examples: list[Example] = []
        seen: dict[str, int] = {}
        for row in reader:
            line = reader.line_num
            question = row["Question"]
            if not question or not question.strip():
                raise InvalidInputError(
                    "The question is empty.", path=path, line=line, field="Question"
                )
            if question.strip() in seen:
                raise InvalidInputError(
                    f"The question {question!r} repeats the one on line {seen[question.strip()]}.",
                    path=path,
                    line=line,
                    field="Question",
                )
            seen[question.strip()] = line
            references = [row["Best Answer"].strip(), *_split(row["Correct Answers"])]
            examples.append(
                Example(
                    example_id=f"truthfulqa/{len(examples)}",
                    dataset=self.name,
                    task="qa",
                    question=question.strip(),
                    references=tuple(dict.fromkeys(r for r in references if r)),
                    incorrect_references=tuple(_split(row["Incorrect Answers"])),
                    meta={
                        "type": row["Type"],
                        "category": row["Category"],
                        "source": row.get("Source") or "",
                    },
                )
            )
        return examples

    def _informative(self, path: Path) -> dict[tuple[str, str], Counter[bool]]:
        votes: dict[tuple[str, str], Counter[bool]] = defaultdict(Counter)
        for line, obj in read_jsonl(path):
            prompt = field_of(obj, "prompt", str, path=path, line=line)
            votes[_parse(prompt, "Helpful", path, line)][_verdict(obj, path, line)] += 1
        return votes


_Row = tuple[int, str, str, bool, str, Counter[bool]]
"""A judged answer: (line, example id, answer, hallucinated, raw completion, info votes)."""
_NO_VOTES: Counter[bool] = Counter()


def _response_meta(votes: Counter[bool], line: int) -> dict[str, Any]:
    """A response's meta: the informativeness majority, its votes and the answer's line."""
    return {
        "informative": _majority(votes),
        "informative_votes": {"yes": votes[True], "no": votes[False]},
        "line": line,
    }


@dataclass(frozen=True)
class _Read:
    """What :meth:`TruthfulQA._read` parsed: the examples and one row per judged answer."""

    examples: list[Example]
    rows: list[_Row]
    extra: int
    unmatched_rows: int

    def notes(self) -> list[str]:
        """How the raw data was mapped, with the counts of this read."""
        pairs = Counter((row[1], row[2]) for row in self.rows)
        verdicts: dict[tuple[str, str], set[bool]] = defaultdict(set)
        for row in self.rows:
            verdicts[(row[1], row[2])].add(row[3])
        conflicting = sum(len(v) > 1 for v in verdicts.values())
        repeats = len(self.rows) - len(pairs)
        return mapping_notes(self.extra, self.unmatched_rows, repeats, conflicting)


def mapping_notes(extra: int, unmatched_rows: int, repeats: int, conflicting: int) -> list[str]:
    """How the raw data was mapped: the notes of a TruthfulQA bundle.

    Args:
        extra: Questions of finetune_truth.jsonl not in TruthfulQA.csv.
        unmatched_rows: Rows of those questions.
        repeats: Rows repeating an (example, answer) pair seen before.
        conflicting: Repeated pairs with both verdicts.
    """
    return [
        "`human`: finetune_truth ' yes' (true) -> not hallucinated, ' no' -> hallucinated.",
        "Questions are joined on their text, ignoring surrounding whitespace (the CSV "
        "has one question with a trailing space).",
        f"{extra} question(s) of finetune_truth.jsonl are not in TruthfulQA.csv "
        f"({unmatched_rows} rows); they get an example of their own "
        "(truthfulqa/extra/<k>) without references, with an error in its meta.",
        f"Every row is its own response (id <example>/<line>): {repeats} rows repeat a "
        "(question, answer) pair already seen; they are kept, as each is a separate "
        f"human judgement; {conflicting} repeated pairs were judged differently.",
        "meta.informative: the majority of the finetune_info.jsonl judgements of the same "
        "(question, answer) pair; None on a tie or when the pair is absent; the votes "
        "are in meta.informative_votes.",
        "The generating models are not recorded in these files: model = 'unknown'.",
    ]


def _majority(votes: Counter[bool]) -> bool | None:
    if votes[True] == votes[False]:
        return None
    return votes[True] > votes[False]
