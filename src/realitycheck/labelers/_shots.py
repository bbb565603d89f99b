"""Where a few-shot QA judge's worked examples come from: a run's calibration split, balanced.

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
Nothing of the test split is ever shown.

How they are drawn (:class:`Draw`, :func:`draw`): ``k / 2`` responses of each
verdict (balanced by label), in the order of a permutation seeded by the
judge's ``seed`` over the responses of that verdict sorted by id, skipping any
response to an example in ``avoid``. The permutations do not depend on
``avoid``, so every test response gets the same examples, and a calibration
response whose example is among them gets the next ones in line: a response is
never shown as an example of itself, nor is any other response to its
question. The examples are then shown in a seeded order, not grouped by verdict.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from realitycheck.labelers._judge import Unjudgeable
from realitycheck.records import Example, Label, Response

__all__ = [
    "VERDICT_SHOWN",
    "Draw",
    "Labelled",
    "balanced_sample",
    "calibration_pool",
    "draw",
    "listing",
    "verdicts_of",
]

VERDICT_SHOWN = {True: "incorrect", False: "correct"}
"""How a reference verdict (hallucinated or not) is shown in a worked example."""


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


def verdicts_of(labels: Iterable[Label], key: str) -> dict[str, bool]:
    """Return the verdicts of the labeler ``key`` among ``labels``, by response id."""
    return {
        x.response_id: bool(x.hallucinated)
        for x in labels
        if x.labeler == key and x.hallucinated is not None
    }
