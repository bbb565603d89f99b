"""What the few-shot QA judges share: graded examples drawn from a run's calibration split.

``fewshot_judge`` and ``optimized_judge`` (the few-shot and prompt-optimized
judges that Trivia++, seed paper 002, benchmarks) grade a QA answer after
reading ``k`` *worked examples*: other responses of the same dataset, each
with its question, reference answers and the verdict of a ``reference``
labeler (``human`` by default: the labels a dataset ships).

Where the examples come from: the responses of the run's **calibration
split** (:func:`realitycheck.analysis.split_of` of their example ids, at
``calibration_fraction``, the split evaluate chooses thresholds on and the
supervised detectors train on) that carry a ``reference`` verdict in the run,
have text, and whose example has reference answers (:func:`calibration_pool`).
Nothing of the test split is ever shown. The judges read them from the run
(:meth:`ShotJudge.label_in_run`, which the label stage calls), so they label
only within a run; :meth:`ShotJudge.label_with` takes the labelled responses
from the caller instead.

How they are drawn (:func:`draw`): ``k / 2`` responses of each verdict
(balanced by label), in the order of a permutation seeded by the judge's
``seed`` over the responses of that verdict sorted by id, skipping any
response to an example in ``avoid``. The permutations do not depend on
``avoid``, so every test response gets the same examples, and a calibration
response whose example is among them gets the next ones in line: a response is
never shown as an example of itself, nor is any other response to its
question. The examples are then shown in a seeded order, not grouped by verdict.

The prompt (``prompts/fewshot_qa.v1.txt``) is one frame around an
*instruction* (``prompts/fewshot_qa_<id>.v1.txt``, :data:`INSTRUCTIONS`): the
grading rule, in this project's own words. Every piece of dataset text is
quoted as JSON between data markers (:mod:`realitycheck.labelers._judge`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from realitycheck.errors import InvalidInputError
from realitycheck.labelers._judge import Judge, Unjudgeable, load_template, quote, substitute
from realitycheck.params import Interval, NonEmptyStr, Satisfies, param
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    import pyarrow as pa

    from realitycheck.backends import CallCache
    from realitycheck.store import ResponseBatch, RunStore

__all__ = [
    "FRAME",
    "INSTRUCTIONS",
    "Draw",
    "Labelled",
    "ShotJudge",
    "balanced_sample",
    "calibration_pool",
    "draw",
    "instruction_template",
    "listing",
]

FRAME = "fewshot_qa.v1.txt"
"""The prompt frame of the few-shot QA judges (placeholders: the instruction, examples, item)."""

INSTRUCTIONS: tuple[str, ...] = ("match", "strict", "lenient")
"""The instruction variants, by id: ``match`` (meaning agrees with a reference; what
``fewshot_judge`` asks), ``strict`` (every claim backed, doubt is incorrect) and
``lenient`` (the answer names a reference somewhere)."""

VERDICT_SHOWN = {True: "incorrect", False: "correct"}
"""How a reference verdict (hallucinated or not) is shown in a worked example."""


def instruction_template(instruction: str) -> str:
    """Return the template file of the instruction ``instruction`` (one of :data:`INSTRUCTIONS`)."""
    return f"fewshot_qa_{instruction}.v1.txt"


@dataclass(frozen=True)
class Labelled:
    """A response with its reference verdict: what a few-shot judge may show as a worked example.

    Attributes:
        response: The response.
        example: Its example (with reference answers).
        hallucinated: The ``reference`` labeler's verdict of it.
    """

    response: Response
    example: Example
    hallucinated: bool

    def shown(self) -> dict[str, Any]:
        """Return the worked example as the prompt shows it (a JSON object)."""
        return {
            "question": self.example.question,
            "reference answers": list(self.example.references),
            "answer": self.response.text,
            "verdict": VERDICT_SHOWN[self.hallucinated],
        }


def calibration_pool(
    responses: Iterable[Response],
    examples: Mapping[str, Example],
    verdicts: Mapping[str, bool],
    *,
    calibration_fraction: float,
) -> dict[str, list[Labelled]]:
    """Return, per dataset, the calibration responses a few-shot judge may show, by response id.

    A response qualifies when it is in the calibration split (by its example
    id), has a verdict in ``verdicts`` and text, and its example is known and
    has reference answers.

    Args:
        responses: The run's responses (any order; a repeated id counts once).
        examples: Their examples, by ``example_id``.
        verdicts: The ``reference`` labeler's verdicts, by response id (``True``: hallucinated).
        calibration_fraction: Share of examples in the calibration split.
    """
    from realitycheck.analysis import CALIBRATION, split_of

    unique = {r.response_id: r for r in responses}
    candidates = [
        r
        for _, r in sorted(unique.items())
        if r.response_id in verdicts and r.text.strip() and r.example_id in examples
    ]
    sides = split_of([r.example_id for r in candidates], calibration_fraction)
    out: dict[str, list[Labelled]] = {}
    for response, side in zip(candidates, sides, strict=True):
        example = examples[response.example_id]
        if side == CALIBRATION and example.references:
            out.setdefault(example.dataset, []).append(
                Labelled(response, example, bool(verdicts[response.response_id]))
            )
    return out


def _in_order(
    pool: Sequence[Labelled], rng: np.random.Generator
) -> tuple[list[Labelled], list[Labelled]]:
    """The hallucinated and the other members of ``pool`` (sorted by id), each seeded-shuffled."""
    out = []
    for verdict in (True, False):
        members = sorted(
            (x for x in pool if x.hallucinated is verdict), key=lambda x: x.response.response_id
        )
        out.append([members[i] for i in rng.permutation(len(members))])
    return out[0], out[1]


def _outside(members: Sequence[Labelled], avoid: Collection[str], n: int) -> list[Labelled]:
    """The first ``n`` of ``members`` whose example is not in ``avoid`` (fewer if there are not)."""
    out: list[Labelled] = []
    for x in members:
        if len(out) == n:
            break
        if x.example.example_id not in avoid:
            out.append(x)
    return out


@dataclass(frozen=True)
class Draw:
    """A seeded draw of ``k`` worked examples from one pool, made once, taken per judged response.

    Attributes:
        k: How many each draw takes, an even number.
        hallucinated: The pool's hallucinated members, in the seeded order.
        faithful: Its other members, in the seeded order.
        shown: The order the ``k`` taken are shown in (a seeded permutation).
    """

    k: int
    hallucinated: tuple[Labelled, ...]
    faithful: tuple[Labelled, ...]
    shown: tuple[int, ...]

    @classmethod
    def of(cls, pool: Sequence[Labelled], k: int, seed: int | Sequence[int]) -> Draw:
        """Return the draw of ``k`` from ``pool`` with ``seed``.

        ``seed`` is an int, or ints for :func:`numpy.random.default_rng`.
        """
        rng = np.random.default_rng(seed)
        hallucinated, faithful = _in_order(pool, rng)
        shown = tuple(int(i) for i in rng.permutation(k))
        return cls(k, tuple(hallucinated), tuple(faithful), shown)

    def take(self, avoid: Collection[str] = ()) -> list[Labelled]:
        """Return ``k / 2`` of each verdict, the first in the seeded order outside ``avoid``.

        Raises:
            Unjudgeable: The pool holds fewer than ``k / 2`` of a verdict outside ``avoid``.
        """
        half = self.k // 2
        hallucinated = _outside(self.hallucinated, avoid, half)
        faithful = _outside(self.faithful, avoid, half)
        if len(hallucinated) < half or len(faithful) < half:
            left = (
                sum(x.example.example_id not in avoid for x in self.hallucinated),
                sum(x.example.example_id not in avoid for x in self.faithful),
            )
            raise Unjudgeable(
                f"{self.k} worked examples need {half} of each verdict; the calibration split "
                f"offers {left[0]} hallucinated and {left[1]} not"
                + (" (responses to the judged question left out)" if avoid else "")
            )
        chosen = hallucinated + faithful
        return [chosen[i] for i in self.shown]


def draw(
    pool: Sequence[Labelled], k: int, seed: int | Sequence[int], *, avoid: Collection[str] = ()
) -> list[Labelled]:
    """Return ``k / 2`` members of ``pool`` of each verdict, in a seeded order (see the module doc).

    The same as ``Draw.of(pool, k, seed).take(avoid)``; build the :class:`Draw`
    once to take for many responses.

    Args:
        pool: The labelled responses to draw from (one dataset's calibration pool).
        k: How many to draw, an even number.
        seed: Seed of the draw and of the order shown (an int, or ints for
            :func:`numpy.random.default_rng`).
        avoid: Example ids whose responses are never drawn.

    Raises:
        Unjudgeable: ``pool`` holds fewer than ``k / 2`` of a verdict outside ``avoid``.
    """
    return Draw.of(pool, k, seed).take(avoid)


def balanced_sample(
    pool: Sequence[Labelled],
    per_verdict: int,
    seed: int | Sequence[int],
    *,
    avoid: Collection[str] = (),
) -> list[Labelled]:
    """Return up to ``per_verdict`` members of each verdict, as many of each, in a seeded order.

    As :func:`draw`, but takes what there is: the scarcer verdict sets how many.
    """
    rng = np.random.default_rng(seed)
    hallucinated, faithful = (
        [x for x in members if x.example.example_id not in avoid]
        for members in _in_order(pool, rng)
    )
    n = min(per_verdict, len(hallucinated), len(faithful))
    chosen = hallucinated[:n] + faithful[:n]
    return [chosen[i] for i in rng.permutation(len(chosen))]


def listing(shots: Sequence[Labelled]) -> str:
    """Return the worked examples as a JSON list, one example a line."""
    if not shots:
        return "[]"
    return "[\n" + ",\n".join(json.dumps(s.shown(), ensure_ascii=False) for s in shots) + "\n]"


def _verdicts(labels: Iterable[Label], key: str) -> dict[str, bool]:
    """Return the verdicts of the labeler ``key`` among ``labels``, by response id."""
    return {
        x.response_id: bool(x.hallucinated)
        for x in labels
        if x.labeler == key and x.hallucinated is not None
    }


def _even(value: Any) -> bool:
    return isinstance(value, int) and value % 2 == 0


@dataclass(frozen=True, kw_only=True)
class ShotJudge(Judge):
    """Base of the few-shot QA judges: see the module documentation.

    Verdicts are ``correct`` and ``incorrect`` (hallucinated); an answer that
    commits to no answer is ``incorrect``. A subclass implements
    :meth:`label_with` (and :meth:`planned_prompts`, for ``label --dry-run``).
    """

    k: int = param(
        4,
        Interval(int, 2),
        Satisfies(_even, "an even number (k / 2 worked examples of each verdict)"),
        doc="worked examples shown, half of each verdict",
    )
    reference: str = param(
        "human", NonEmptyStr(), doc="labeler whose verdicts grade the worked examples"
    )
    calibration_fraction: float = param(
        0.5,
        Interval(float, 0, 1, closed="neither"),
        doc="share of examples in the calibration split",
    )

    needs: ClassVar[frozenset[str]] = frozenset({"references", "labels"})
    verdicts: ClassVar[tuple[str, ...]] = ("incorrect", "correct")
    hallucinated_verdicts: ClassVar[frozenset[str]] = frozenset({"incorrect"})
    field: ClassVar[str] = "verdict"

    # -- prompts ---------------------------------------------------------------------------

    def prompt(self, response: Response, example: Example | None) -> str:
        """A few-shot judge's prompt depends on the run's labels: see :meth:`label_with`.

        Raises:
            Unjudgeable: Always: its examples come from a run.
        """
        raise Unjudgeable(self._outside_a_run())

    def check(self, response: Response, example: Example | None) -> Example:
        """Return ``response``'s example if the judge can be asked about it.

        Raises:
            Unjudgeable: If the example has no references or the response is empty.
        """
        if example is None or not example.references:
            raise Unjudgeable("no reference answers to grade against")
        if not response.text.strip():
            raise Unjudgeable("the response is empty")
        return example

    def render(
        self, response: Response, example: Example, shots: Sequence[Labelled], instruction: str
    ) -> str:
        """Return the prompt that grades ``response`` after the worked examples ``shots``."""
        return substitute(
            FRAME,
            instruction=load_template(instruction_template(instruction)).strip(),
            examples=listing(shots),
            question=quote(example.question),
            references=quote(example.references),
            response=quote(response.text),
        )

    # -- where the worked examples come from -----------------------------------------------

    def pool(
        self,
        responses: Iterable[Response],
        examples: Mapping[str, Example],
        labels: Iterable[Label],
    ) -> dict[str, list[Labelled]]:
        """Return the calibration pool of ``responses`` graded by the ``reference`` ``labels``."""
        return calibration_pool(
            responses,
            examples,
            _verdicts(labels, self.reference),
            calibration_fraction=self.calibration_fraction,
        )

    def pool_in_run(
        self, store: RunStore, examples: Mapping[str, Example]
    ) -> dict[str, list[Labelled]]:
        """Return the calibration pool of the run ``store`` (its ``reference`` labels)."""
        import pyarrow.compute as pc

        from realitycheck.store import scalar

        labels = store.arrow("labels", columns=["hallucinated"])
        mine = labels.filter(pc.equal(labels.column("labeler"), scalar(self.reference)))
        mine = mine.filter(pc.is_valid(mine.column("hallucinated")))
        verdicts = dict(
            zip(
                mine.column("response_id").to_pylist(),
                (bool(h) for h in mine.column("hallucinated").to_pylist()),
                strict=True,
            )
        )
        rows = store.arrow("responses", columns=["example_id", "model", "text"])
        wanted = rows.filter(
            pc.is_in(rows.column("response_id"), value_set=mine.column("response_id"))
        )
        responses = [
            Response(response_id=rid, example_id=eid, model=model or "", text=text or "")
            for rid, eid, model, text in zip(
                *(wanted.column(n).to_pylist() for n in ("response_id", "example_id", "model")),
                wanted.column("text").to_pylist(),
                strict=True,
            )
        ]
        return calibration_pool(
            responses, examples, verdicts, calibration_fraction=self.calibration_fraction
        )

    def split(self, responses: Sequence[Response]) -> list[str]:
        """Return ``calibration`` or ``test`` for each response, by its example id."""
        from realitycheck.analysis import split_of

        return [
            str(s) for s in split_of([r.example_id for r in responses], self.calibration_fraction)
        ]

    def no_pool(self, dataset: str) -> str:
        """Return why a dataset without a calibration pool gets no verdict."""
        return (
            f"no response of the calibration split of dataset {dataset!r} carries a "
            f"{self.reference!r} verdict (with text and reference answers) to show as a "
            "worked example"
        )

    # -- labelling -------------------------------------------------------------------------

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Outside a run there are no graded examples: every label says so (no verdict).

        Use the label stage, or :meth:`label_with` with the labelled responses.
        """
        return [self._label(r, None, error=self._outside_a_run()) for r in responses]

    def label_with(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        pool: Mapping[str, Sequence[Labelled]],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order, with worked examples drawn from ``pool``.

        Args:
            responses: The responses to judge.
            examples: Their examples, by ``example_id``.
            pool: Per dataset, the labelled calibration responses
                (:func:`calibration_pool`, :meth:`pool`).
            cache: The run's call cache; every call goes through it.
        """
        raise NotImplementedError

    def label_in_run(
        self, batch: ResponseBatch, store: RunStore, *, cache: CallCache | None = None
    ) -> pa.Table:
        """Return the labels of one batch, with worked examples from the run's calibration split.

        Raises:
            InvalidInputError: :meth:`label_with` returned a label count other than the batch's.
        """
        from realitycheck.store import records_table

        responses = batch.records()
        pool = self.pool_in_run(store, batch.examples)
        labels = self.label_with(responses, batch.examples, pool, cache=cache)
        if len(labels) != len(responses):
            raise InvalidInputError(
                f"{self.key} returned {len(labels)} records for {len(responses)} responses."
            )
        return records_table(labels)

    def planned_prompts(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        pool: Mapping[str, Sequence[Labelled]],
    ) -> tuple[list[str], list[str | None]]:
        """Return the prompts :meth:`label_with` would send, calling nothing.

        The first list holds the prompts asked before any response is judged
        (a prompt search); the second, per response, its prompt or ``None``
        when it would get no verdict.
        """
        raise NotImplementedError

    def ask(self, items: Sequence[tuple[Response, str]], cache: CallCache | None) -> list[Label]:
        """Ask the judge each ``(response, prompt)``; return one label each, in order.

        The calls go through the call cache, ``repeats`` per prompt; replies
        are read as every judge reads them (:class:`~realitycheck.labelers.Judge`).
        """
        from realitycheck.backends import cached_generate

        asked = [self.requests(prompt) for _, prompt in items]
        requests = [r for group in asked for r in group]
        generations = cached_generate(self.judge, requests, cache=cache) if requests else []
        out, position = [], 0
        for (response, _), group in zip(items, asked, strict=True):
            out.append(self._decide(response, generations[position : position + len(group)], group))
            position += len(group)
        return out

    def annotated(
        self, label: Label, raw: Mapping[str, Any], spec: Mapping[str, Any] | None = None
    ) -> Label:
        """Return ``label`` with ``raw`` merged into its raw JSON and ``spec`` into its spec."""
        merged = {**(json.loads(label.raw) if label.raw else {}), **raw}
        changes: dict[str, Any] = {"raw": json.dumps(merged, ensure_ascii=False)}
        if spec:
            changes["spec"] = json.dumps({**self.spec, **spec}, sort_keys=True, default=str)
        return dataclasses.replace(label, **changes)

    def _outside_a_run(self) -> str:
        return (
            f"{self.name} shows worked examples from the {self.reference!r} labels of a run's "
            "calibration split; label it within a run (the label stage)"
        )
