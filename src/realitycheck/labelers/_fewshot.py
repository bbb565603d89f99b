"""What the few-shot QA judges share: the prompt frame, the run's pool, the calls.

``fewshot_judge`` and ``optimized_judge`` grade a QA answer after ``k``
worked examples drawn from the run's calibration split
(:mod:`realitycheck.labelers._shots` says which and how). The judges read
them from the run (:meth:`ShotJudge.label_in_run`, which the label stage
calls), so they label only within a run; :meth:`ShotJudge.label_with` takes
the labelled responses from the caller instead.

The prompt (``prompts/fewshot_qa.v1.txt``) is one frame around an
*instruction* (``prompts/fewshot_qa_<id>.v1.txt``, :data:`INSTRUCTIONS`): the
grading rule, in this project's own words. Every piece of dataset text is
quoted as JSON between data markers (:mod:`realitycheck.labelers._judge`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from realitycheck.errors import InvalidInputError
from realitycheck.labelers._judge import Judge, Unjudgeable, load_template, quote, substitute
from realitycheck.labelers._shots import Labelled, calibration_pool, listing, verdicts_of
from realitycheck.params import Interval, NonEmptyStr, Satisfies, param
from realitycheck.records import Example, Label, Response

if TYPE_CHECKING:
    import pyarrow as pa

    from realitycheck.backends import CallCache
    from realitycheck.store import ResponseBatch, RunStore

__all__ = ["FRAME", "INSTRUCTIONS", "ShotJudge", "instruction_template"]

FRAME = "fewshot_qa.v1.txt"
"""The prompt frame of the few-shot QA judges (placeholders: the instruction, examples, item)."""

INSTRUCTIONS: tuple[str, ...] = ("match", "strict", "lenient")
"""The instruction variants, by id: ``match`` (meaning agrees with a reference; what
``fewshot_judge`` asks), ``strict`` (every claim backed, doubt is incorrect) and
``lenient`` (the answer names a reference somewhere)."""


def instruction_template(instruction: str) -> str:
    """Return the template file of the instruction ``instruction`` (one of :data:`INSTRUCTIONS`)."""
    return f"fewshot_qa_{instruction}.v1.txt"


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
            verdicts_of(labels, self.reference),
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
