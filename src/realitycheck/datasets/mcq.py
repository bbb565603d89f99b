"""Multiple-choice sets scored by likelihood: FACTOR (news, expert) and TruthfulQA MC1 / MC2.

Each question is an :class:`~realitycheck.records.Example` with task ``mcq``:
``question`` is the prompt the options continue, ``choices`` are the options
in the file's order, ``references`` the correct ones and
``incorrect_references`` the others; ``meta["gold"]`` lists the indices of the
correct options in ``choices``. No responses: a model chooses by likelihood.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from realitycheck.datasets._base import Dataset, dataset
from realitycheck.datasets._bundle import Bundle
from realitycheck.datasets._io import as_object, field_of, read_json
from realitycheck.datasets._tables import read_rows
from realitycheck.errors import InvalidInputError
from realitycheck.params import OneOf, param
from realitycheck.records import Example

__all__ = ["Factor", "TruthfulQAMC", "mcq_example"]


def mcq_example(
    example_id: str,
    dataset_name: str,
    prompt: str,
    choices: Sequence[str],
    gold: Sequence[int],
    *,
    path: Path,
    line: int,
    meta: dict[str, Any] | None = None,
) -> Example:
    """Return one multiple-choice example, checking its options and gold indices.

    Raises:
        InvalidInputError: Fewer than two options, an empty option, no gold
            index, or a gold index outside the options (naming the file and row).
    """
    if len(choices) < 2:
        raise InvalidInputError(
            f"A question needs at least two options. Got {len(choices)}.",
            path=path,
            line=line,
            field="choices",
        )
    empty = [i for i, c in enumerate(choices) if not c.strip()]
    if empty:
        raise InvalidInputError(
            f"Option {empty[0]} is empty.", path=path, line=line, field="choices"
        )
    outside = [g for g in gold if not 0 <= g < len(choices)]
    if not gold or outside:
        raise InvalidInputError(
            f"The gold index must be among the {len(choices)} options. "
            f"Got {list(gold) or 'none'} instead.",
            path=path,
            line=line,
            field="gold",
        )
    return Example(
        example_id=example_id,
        dataset=dataset_name,
        task="mcq",
        question=prompt,
        choices=tuple(choices),
        references=tuple(choices[g] for g in gold),
        incorrect_references=tuple(c for i, c in enumerate(choices) if i not in set(gold)),
        meta={"gold": list(gold), **(meta or {})},
    )


_FACTOR_FILES = {"news": "factor/news_factor.csv", "expert": "factor/expert_factor.csv"}


@dataset("factor")
@dataclass(frozen=True, kw_only=True)
class Factor(Dataset):
    """FACTOR (AI21 Labs): a prefix, its true completion and three contradicting ones.

    The model scores each completion's likelihood given the prefix; it is
    right when the true completion scores highest. The files' quirks, stated:
    the leading unnamed index columns are ignored; the prefix is the
    ``turncated_prefixes`` column (sic: the authors' prefix cut to fit their
    models' context, as their evaluation uses it; ``prefix=full`` takes
    ``full_prefix``); the expert file's ``Asnwer:`` typo is the data's and is
    kept. The true completion is option 0 in every row; shuffle the options
    (a prompt variant) before any prompt-based choice.

    Args:
        part: ``news`` (Wiki-FACTOR's sibling on news, 1,036 rows) or
            ``expert`` (236 rows).
        prefix: ``truncated`` (the default) or ``full``.
    """

    part: Literal["news", "expert"] = param("news", OneOf(tuple(_FACTOR_FILES)))
    prefix: Literal["truncated", "full"] = param("truncated", OneOf(("truncated", "full")))

    files: ClassVar[tuple[str, ...]] = tuple(_FACTOR_FILES.values())
    description: ClassVar[str] = (
        "FACTOR news / expert: prefix + true completion + 3 contradictions, for choice by "
        "likelihood (input only)."
    )

    def sources(self) -> list[Path]:
        """Return the one file of the chosen part."""
        return [self.root() / _FACTOR_FILES[self.part]]

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the part's rows into multiple-choice examples (ids ``factor_<part>/<row>``)."""
        (path,) = self.sources()
        columns, rows = read_rows(path, format="csv", delimiter=",")
        prefix_column = "turncated_prefixes" if self.prefix == "truncated" else "full_prefix"
        wanted = [prefix_column, "completion", "contradiction_0", "contradiction_1"]
        missing = [c for c in wanted if c not in columns]
        if missing:
            raise InvalidInputError(
                f"The file lacks the column(s) {missing}. Present: {columns}.",
                path=path,
                field=missing[0],
            )
        contradictions = sorted(c for c in columns if c.startswith("contradiction_"))
        examples = []
        for number, (line, row) in enumerate(rows, start=1):
            prompt = str(row.get(prefix_column) or "")
            if not prompt.strip():
                raise InvalidInputError(
                    "The prefix is empty.", path=path, line=line, field=prefix_column
                )
            options = [str(row.get(c) or "") for c in ("completion", *contradictions)]
            examples.append(
                mcq_example(
                    f"factor_{self.part}/{number}",
                    self.name,
                    prompt,
                    options,
                    [0],
                    path=path,
                    line=line,
                    meta={"doc_id": row.get("doc_id"), "part": self.part},
                )
            )
        if progress is not None:
            progress(len(examples))
        notes = [
            f"FACTOR {self.part}: {len(examples)} prefixes, the true completion first and "
            f"{len(contradictions)} contradictions; prompt = `{prefix_column}`.",
            "Input only: a backend chooses by the likelihood of each completion.",
        ]
        return Bundle(examples=examples, notes=notes)


@dataset("truthfulqa_mc")
@dataclass(frozen=True, kw_only=True)
class TruthfulQAMC(Dataset):
    """TruthfulQA multiple choice (``mc_task.json``): MC1 (one true option) or MC2 (several).

    The prompt is the question; the options are the targets in the file's
    order, and the gold indices are those marked 1. MC1 is accuracy of the
    top-scored option; MC2 is the normalised probability mass on the true
    options (Lin et al., 2022).

    Args:
        variant: ``mc1`` or ``mc2``.
    """

    variant: Literal["mc1", "mc2"] = param("mc1", OneOf(("mc1", "mc2")))

    files: ClassVar[tuple[str, ...]] = ("truthfulqa/mc_task.json",)
    description: ClassVar[str] = (
        "TruthfulQA MC1 / MC2: 817 questions with true and false options (input only)."
    )

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the questions into multiple-choice examples (ids ``truthfulqa_<variant>/<n>``)."""
        path = self.root() / self.files[0]
        data = read_json(path)
        if not isinstance(data, list):
            raise InvalidInputError("The file must hold a list of questions.", path=path)
        key = f"{self.variant}_targets"
        examples = []
        for number, item in enumerate(data, start=1):
            item = as_object(item, "question", path=path, line=number)
            question = field_of(item, "question", str, path=path, line=number)
            targets = field_of(item, key, dict, path=path, line=number)
            bad = [v for v in targets.values() if v not in (0, 1) or isinstance(v, float)]
            if bad:
                raise InvalidInputError(
                    f"Each target must be marked 0 or 1. Got {bad[0]!r}.",
                    path=path,
                    line=number,
                    field=key,
                )
            choices = [str(c) for c in targets]
            gold = [i for i, v in enumerate(targets.values()) if v == 1]
            examples.append(
                mcq_example(
                    f"truthfulqa_{self.variant}/{number}",
                    self.name,
                    question,
                    choices,
                    gold,
                    path=path,
                    line=number,
                    meta={"variant": self.variant},
                )
            )
        if progress is not None:
            progress(len(examples))
        notes = [
            f"TruthfulQA {self.variant.upper()}: {len(examples)} questions; line numbers in "
            "errors are the question's position in the file's list.",
            "Input only: a backend chooses by the likelihood of each option.",
        ]
        return Bundle(examples=examples, notes=notes)
