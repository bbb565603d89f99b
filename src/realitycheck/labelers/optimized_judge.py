"""``optimized_judge``: a QA judge whose prompt is chosen on the calibration split, then frozen.

The prompt-optimized judge that Trivia++ ("Rethinking Evaluation for LLM
Hallucination Detection", seed paper 002) benchmarks beside zero-shot and
few-shot judges, as a small, budgeted search this project can state exactly:

1. **Candidates.** Each instruction of ``instructions`` (this project's
   variants of the grading rule, :data:`realitycheck.labelers._fewshot.INSTRUCTIONS`)
   with each of ``sets`` sets of ``k`` worked examples, set ``s`` drawn with
   seed ``seed + s`` from the run's calibration split, ``k / 2`` of each
   ``reference`` verdict (:func:`~realitycheck.labelers._shots.draw`). Set 0
   of the ``match`` instruction is the prompt ``fewshot_judge`` asks with the
   same ``k`` and ``seed``.
2. **Scoring.** Every candidate grades the same *search items*: calibration
   responses of the dataset, as many of each verdict (drawn with seed
   ``(seed, 1)``), none to a question any candidate shows as an example, as
   many as ``budget`` allows: ``budget // (candidates × repeats)`` items,
   never more. A candidate's score is its balanced accuracy on them against
   the ``reference`` verdicts, an item it gives no verdict counting as wrong.
   The calls go through the call cache, so a rerun (or the next batch of
   the label stage, which searches again) pays for none of them; with no
   cache every batch pays again.
3. **Frozen.** The best candidate (ties: the first, in the order of
   ``instructions``, then of sets) grades the **test split only**. A
   calibration response gets no verdict (``hallucinated=None``) and an error
   that says it was searched on, so evaluation never scores the judge on the
   items it was chosen on. The choice (instruction, the response ids of its
   worked examples, its calibration balanced accuracy, the search items'
   count, the calls made, every candidate's score) is written, under
   ``chosen``, into the spec stored with every label it gives, and into
   ``raw``.

The search runs per dataset (each dataset gets its own prompt) and only for
a dataset with test responses to grade.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from realitycheck.labelers._base import labeler
from realitycheck.labelers._fewshot import FRAME, INSTRUCTIONS, ShotJudge, instruction_template
from realitycheck.labelers._judge import Unjudgeable, prompt_sha256_param
from realitycheck.labelers._shots import Labelled, balanced_sample, draw
from realitycheck.params import Interval, OneOf, SequenceOf, as_unique_tuple, param, param_error
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["Candidate", "Choice", "OptimizedJudge", "Search"]

SEARCH_STREAM = 1
"""The seed ``(seed, SEARCH_STREAM)`` draws the search items (the example sets use ``seed + s``)."""


@dataclass(frozen=True)
class Candidate:
    """A prompt the search tries: an instruction and a set of worked examples.

    Attributes:
        instruction: The instruction's id.
        set: Which example set (drawn with seed ``seed + set``).
        shots: The worked examples, in the order shown.
    """

    instruction: str
    set: int
    shots: tuple[Labelled, ...]

    @property
    def examples(self) -> list[str]:
        """The response ids of the worked examples, in the order shown."""
        return [s.response.response_id for s in self.shots]


@dataclass(frozen=True)
class Search:
    """The prompt search planned on one dataset's calibration split.

    Attributes:
        dataset: The dataset.
        candidates: The prompts tried, in order.
        items: The calibration responses every candidate grades.
        prompts: Per candidate, the prompt of each item.
    """

    dataset: str
    candidates: tuple[Candidate, ...]
    items: tuple[Labelled, ...]
    prompts: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Choice:
    """The candidate a search chose, and how every candidate scored.

    Attributes:
        dataset: The dataset searched.
        candidate: The chosen prompt.
        scores: Every candidate's balanced accuracy on the search items, in order.
        search: The search.
        calls: The calls the search made (requests, before the cache answered any).
    """

    dataset: str
    candidate: Candidate
    scores: tuple[float, ...]
    search: Search
    calls: int

    def record(self, budget: int) -> dict[str, Any]:
        """Return the choice as written in the spec and ``raw`` of every label it gives."""
        best = self.search.candidates.index(self.candidate)
        return {
            "dataset": self.dataset,
            "instruction": self.candidate.instruction,
            "set": self.candidate.set,
            "examples": self.candidate.examples,
            "calibration_balanced_accuracy": self.scores[best],
            "search_items": len(self.search.items),
            "search_calls": self.calls,
            "budget": budget,
            "candidates": [
                {
                    "instruction": c.instruction,
                    "set": c.set,
                    "examples": c.examples,
                    "balanced_accuracy": score,
                }
                for c, score in zip(self.search.candidates, self.scores, strict=True)
            ],
        }


def balanced_accuracy(y_true: Sequence[bool], y_pred: Sequence[bool | None]) -> float:
    """Return the mean recall of the two classes; a ``None`` prediction counts as wrong.

    Both classes must be present in ``y_true`` (the search items are balanced).
    """
    recalls = []
    for verdict in (True, False):
        rows = [i for i, y in enumerate(y_true) if y is verdict]
        recalls.append(sum(y_pred[i] is verdict for i in rows) / len(rows))
    return sum(recalls) / 2


@labeler("optimized_judge")
@dataclass(frozen=True, kw_only=True)
class OptimizedJudge(ShotJudge):
    """A QA judge whose instruction and worked examples are chosen on the calibration split.

    The search (see the module documentation) tries each instruction of
    ``instructions`` with each of ``sets`` seeded sets of ``k`` worked
    examples on the same balanced calibration items, within ``budget`` calls
    per dataset, keeps the candidate with the best balanced accuracy against
    the ``reference`` verdicts, and grades the test split with it. A
    calibration response gets no verdict and an error that says why. Labels
    within a run only (it reads the run's ``reference`` labels); on
    :meth:`label`, every label has no verdict and says so.

    ``category`` is ``correct``, ``incorrect`` (hallucinated) or ``invalid``;
    ``score`` in ``[0, 1]`` is the share of the replies that say incorrect
    (higher = more likely hallucinated). The label's spec and ``raw`` carry
    ``chosen`` (:meth:`Choice.record`: the instruction, the worked examples'
    response ids, the calibration balanced accuracy, the search's items and
    calls, every candidate's score). A response without references or with
    empty text gets an error; so does every test response of a dataset
    whose calibration split cannot supply the examples and search items, and
    one whose search met a backend failure (``failed``, retryable when every
    failure may pass: the answered calls are cached). See
    :class:`~realitycheck.labelers.Judge` for the rest of ``raw``, e.g.
    ``optimized_judge[judge=openai[model=gpt-4o-mini],budget=400]``.

    Args:
        judge: The backend that grades (required), e.g. ``openai[model=gpt-4o-mini]``.
        instructions: The instruction variants tried (ids of
            ``prompts/fewshot_qa_<id>.v1.txt``): ``match``, ``strict``, ``lenient``.
        sets: Seeded sets of worked examples tried with each instruction.
        budget: Most calls the search makes on each dataset, repeats included;
            at least 2 per candidate and repeat.
        k: Worked examples shown, an even number: ``k / 2`` of each verdict.
        reference: The labeler whose verdicts in the run grade the worked
            examples and score the candidates (``human``, a judge key…).
        calibration_fraction: Share of examples in the calibration split (the
            split of evaluate, by example id).
        invalid_as: What a label none of whose replies could be read becomes:
            ``excluded`` (the default) or ``hallucinated``.
        repeats: How many times each response is graded; the majority decides.
        temperature: The judge's sampling temperature (0: greedy).
        seed: Seed of the example sets (set ``s`` uses ``seed + s``), of the
            search items, and of the first repeat.
        max_tokens: Most tokens of a reply.
        structured: Ask for a reply that follows a JSON Schema where the backend
            can constrain it (``openai`` in chat mode); ``False`` for servers that cannot.
        prompt_sha256: SHA-256 of the prompt templates (set; written in the spec).
    """

    instructions: tuple[str, ...] = param(
        INSTRUCTIONS,
        SequenceOf(OneOf(INSTRUCTIONS), min_length=1),
        convert=as_unique_tuple,
        doc="instruction variants tried",
    )
    sets: int = param(2, Interval(int, 1, 20), doc="example sets tried per instruction")
    budget: int = param(240, Interval(int, 2), doc="most search calls per dataset")
    prompt_sha256: str = prompt_sha256_param(
        (FRAME, *(instruction_template(i) for i in INSTRUCTIONS))
    )

    def __post_init__(self) -> None:
        """Check the parameters, then that the budget gives each candidate 2 items."""
        super().__post_init__()
        need = 2 * self.n_candidates * self.repeats
        if self.budget < need:
            raise param_error(
                "budget",
                self.name,
                f"an int >= {need} (2 search items for each of {self.n_candidates} "
                f"candidate prompts, {self.repeats} calls each)",
                self.budget,
            )

    @property
    def n_candidates(self) -> int:
        """How many prompts the search tries: instructions × example sets."""
        return len(self.instructions) * self.sets

    # -- the search ------------------------------------------------------------------------

    def plan_search(self, dataset: str, pool: Sequence[Labelled]) -> Search:
        """Return the search on ``dataset``'s calibration ``pool``, calling nothing.

        Raises:
            Unjudgeable: The pool cannot supply the worked examples, or one
                search item of each verdict besides them.
        """
        if not pool:
            raise Unjudgeable(self.no_pool(dataset))
        sets = [tuple(draw(pool, self.k, self.seed + s)) for s in range(self.sets)]
        candidates = tuple(
            Candidate(instruction, s, shots)
            for instruction in self.instructions
            for s, shots in enumerate(sets)
        )
        shown = {x.example.example_id for shots in sets for x in shots}
        per_verdict = self.budget // (self.n_candidates * self.repeats) // 2
        items = tuple(balanced_sample(pool, per_verdict, (self.seed, SEARCH_STREAM), avoid=shown))
        if not items:
            raise Unjudgeable(
                f"the prompt search on dataset {dataset!r} needs a calibration response of "
                "each verdict besides those shown as worked examples, to a question none of "
                "them answers; there is none of one verdict"
            )
        prompts = tuple(
            tuple(self.render(x.response, x.example, c.shots, c.instruction) for x in items)
            for c in candidates
        )
        return Search(dataset=dataset, candidates=candidates, items=items, prompts=prompts)

    def run_search(self, search: Search, cache: CallCache | None) -> Choice | Label:
        """Ask every candidate's prompts; return the best candidate.

        On a backend failure, return instead the label every test response of
        the dataset gets (its response id is the first search item's: replace it).
        """
        flat = [
            (item.response, prompt)
            for prompts in search.prompts
            for item, prompt in zip(search.items, prompts, strict=True)
        ]
        labels = self.ask(flat, cache)
        failed = [x for x in labels if x.failed]
        if failed:
            return self._label(
                search.items[0].response,
                None,
                error=(
                    f"the prompt search on dataset {search.dataset!r} failed on "
                    f"{len(failed)} of {len(labels)} items: {failed[0].error}"
                ),
                retryable=all(x.retryable for x in failed),
                failed=True,
            )
        y_true = [x.hallucinated for x in search.items]
        n = len(search.items)
        scores = tuple(
            balanced_accuracy(y_true, [x.hallucinated for x in labels[c * n : (c + 1) * n]])
            for c in range(len(search.candidates))
        )
        best = max(range(len(scores)), key=lambda c: (scores[c], -c))
        return Choice(
            dataset=search.dataset,
            candidate=search.candidates[best],
            scores=scores,
            search=search,
            calls=len(flat) * self.repeats,
        )

    # -- labelling -------------------------------------------------------------------------

    def _calibration_label(self, response: Response) -> Label:
        return self._label(
            response,
            None,
            error=(
                f"in the calibration split, on which {self.name} chose its prompt "
                "(it grades the test split only)"
            ),
        )

    def _to_grade(
        self, responses: Sequence[Response], examples: Mapping[str, Example]
    ) -> tuple[dict[str, list[tuple[int, Example]]], dict[int, Label]]:
        """Per dataset, the test responses to grade (position, example); the others' labels."""
        out: dict[int, Label] = {}
        graded: dict[str, list[tuple[int, Example]]] = {}
        for i, (response, side) in enumerate(zip(responses, self.split(responses), strict=True)):
            if side != "test":
                out[i] = self._calibration_label(response)
                continue
            try:
                example = self.check(response, examples.get(response.example_id))
            except Unjudgeable as exc:
                out[i] = self._label(response, None, error=str(exc))
                continue
            graded.setdefault(example.dataset, []).append((i, example))
        return graded, out

    def label_with(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        pool: Mapping[str, Sequence[Labelled]],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order: test responses graded by the chosen prompt.

        Args:
            responses: The responses to judge.
            examples: Their examples, by ``example_id``.
            pool: Per dataset, the labelled calibration responses
                (:func:`~realitycheck.labelers._shots.calibration_pool`).
            cache: The run's call cache; every call (the search's too) goes through it.
        """
        graded, out = self._to_grade(responses, examples)
        for dataset, rows in sorted(graded.items()):
            try:
                search = self.plan_search(dataset, pool.get(dataset, ()))
            except Unjudgeable as exc:
                for i, _ in rows:
                    out[i] = self._label(responses[i], None, error=str(exc))
                continue
            choice = self.run_search(search, cache)
            if isinstance(choice, Label):
                for i, _ in rows:
                    out[i] = self._label(
                        responses[i],
                        None,
                        error=choice.error,
                        retryable=choice.retryable,
                        failed=True,
                    )
                continue
            chosen = choice.candidate
            items = [
                (responses[i], self.render(responses[i], ex, chosen.shots, chosen.instruction))
                for i, ex in rows
            ]
            record = choice.record(self.budget)
            for (i, _), got in zip(rows, self.ask(items, cache), strict=True):
                raw = {"shown": chosen.examples, "split": "test", "chosen": record}
                out[i] = self.annotated(got, raw, spec={"chosen": record})
        return [out[i] for i in range(len(responses))]

    def planned_prompts(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        pool: Mapping[str, Sequence[Labelled]],
    ) -> tuple[list[str], list[str | None]]:
        """Return the search prompts and, per response, the longest candidate's prompt.

        Which candidate wins is known only after the search's calls, so a test
        response is planned at its longest candidate prompt (an upper bound);
        a calibration response, or one that gets no verdict, is ``None``.
        """
        graded, _ = self._to_grade(responses, examples)
        search_prompts: list[str] = []
        prompts: list[str | None] = [None] * len(responses)
        for dataset, rows in sorted(graded.items()):
            try:
                search = self.plan_search(dataset, pool.get(dataset, ()))
            except Unjudgeable:
                continue
            search_prompts.extend(p for group in search.prompts for p in group)
            for i, example in rows:
                options = [
                    self.render(responses[i], example, c.shots, c.instruction)
                    for c in search.candidates
                ]
                prompts[i] = max(options, key=len)
        return search_prompts, prompts
