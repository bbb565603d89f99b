"""Which responses of a run people label: disagreement, stratified, random, escalation.

Every strategy starts from the run's response ids in sorted order and draws
with ``numpy.random.default_rng(seed)``, so one seed on one run gives one
selection whatever order the run's parts were written in.

- ``disagreement``: responses on which the named labelers' verdicts differ
  (at least two of them give one, and not the same). As in the human study of
  paper 000 (§4, a sample balanced between the ways ROUGE and the judge
  conflict), the draw is balanced over the verdict patterns
  (``rouge_l=hallucinated, qa_judge=faithful`` and the reverse …): the
  patterns take turns, each giving its next random response, until ``n``.
- ``stratified``: the same turn-taking over strata of ``by``: ``dataset``,
  ``model``, ``label:<labeler>`` (its verdict: hallucinated / faithful / no
  verdict) or ``length`` (quantile bins of the response's words). A stratum
  smaller than its share gives all it has, and the others fill the rest.
- ``random``: ``n`` responses drawn uniformly.
- ``escalate``: responses whose human annotators (``human:<name>`` labels,
  e.g. a first round imported) disagree, for a round with more annotators
  (paper 002: 2 annotators, then 4, then 6 on disputed items).

The chosen ids are shuffled once more, so the order shown to annotators
says nothing of the stratum an item came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from realitycheck.annotation._names import STRATA, STRATEGIES
from realitycheck.errors import InvalidInputError, did_you_mean
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    OneOf,
    OrNone,
    Satisfies,
    SequenceOf,
    as_unique_tuple,
    check_params,
    param,
)
from realitycheck.records.keys import LabelKey

if TYPE_CHECKING:
    import pandas as pd

    from realitycheck.store import RunData

__all__ = ["Choice", "Selection", "choose"]

_OWNER = "annotate export"


def _is_stratum(value: object) -> bool:
    text = str(value)
    return text in STRATA[:3] or (text.startswith("label:") and len(text) > len("label:"))


@dataclass(frozen=True, kw_only=True)
class Selection:
    """What to choose; each field is checked where it is declared.

    Attributes:
        strategy: One of :data:`STRATEGIES`.
        n: How many responses (at most); ``None`` = every candidate.
        seed: Seed of the draw.
        labelers: Labeler keys whose disagreement ``disagreement`` looks for (>= 2).
        by: The strata of ``stratified``: one of :data:`STRATA`.
        bins: Quantile bins of ``by=length``.
        escalate: Choose the items whose human annotators disagree instead.
    """

    strategy: str = param("disagreement", OneOf(STRATEGIES))
    n: int | None = param(100, OrNone(Interval(int, 1)))
    seed: int = param(0, Interval(int, 0))
    labelers: tuple[str, ...] = param(
        (), SequenceOf(NonEmptyStr(), unique=True), convert=as_unique_tuple
    )
    by: str = param(
        "dataset", Satisfies(_is_stratum, "one of dataset, model, length or label:<labeler>")
    )
    bins: int = param(4, Interval(int, 2, 20))
    escalate: bool = param(False, InstanceOf(bool))

    def __post_init__(self) -> None:
        check_params(self, _OWNER)
        if self.strategy == "disagreement" and not self.escalate and len(self.labelers) < 2:
            raise InvalidInputError(
                f"The 'labelers' parameter of {_OWNER} must name at least two labelers for "
                f"strategy=disagreement. Got {list(self.labelers)} instead."
            )

    def record(self) -> dict[str, object]:
        """The settings that chose, as written in the manifests (only those that mattered)."""
        if self.escalate:
            return {"strategy": "escalate", "n": self.n, "seed": self.seed}
        out: dict[str, object] = {"strategy": self.strategy, "n": self.n, "seed": self.seed}
        if self.strategy == "disagreement":
            out["labelers"] = list(self.labelers)
        if self.strategy == "stratified":
            out["by"] = self.by
            if self.by == "length":
                out["bins"] = self.bins
        return out


@dataclass(frozen=True)
class Choice:
    """The chosen responses, in the order shown, with the group each came from.

    Attributes:
        response_ids: The chosen response ids.
        groups: Per chosen id, its verdict pattern or stratum (empty for ``random``).
        candidates: How many responses qualified before ``n`` was applied.
    """

    response_ids: tuple[str, ...]
    groups: Mapping[str, str]
    candidates: int

    def counts(self) -> dict[str, int]:
        """How many chosen responses each group gave, by group."""
        out: dict[str, int] = {}
        for rid in self.response_ids:
            group = self.groups.get(rid, "")
            out[group] = out.get(group, 0) + 1
        return dict(sorted(out.items()))


def _known(keys: Sequence[str], known: Sequence[str], what: str) -> None:
    for key in keys:
        if key not in known:
            raise InvalidInputError(
                f"The run has no {what} {key!r}.{did_you_mean(key, known)} Its labelers: "
                f"{', '.join(known) or 'none'}.",
                field="--labelers" if what == "labeler" else "--by",
            )


def _pattern(names: Sequence[str], row: np.ndarray) -> str:
    words = ("faithful", "hallucinated")
    return ", ".join(
        f"{k}={'no verdict' if np.isnan(v) else words[int(v)]}"
        for k, v in zip(names, row, strict=True)
    )


def _disputed(verdicts: pd.DataFrame, names: Sequence[str]) -> dict[str, str]:
    """Return the ids whose verdicts among ``names`` differ, each with its pattern."""
    matrix = verdicts[list(names)].to_numpy(dtype=float)
    given = ~np.isnan(matrix)
    ones = (matrix == 1.0).sum(axis=1)
    differ = (ones > 0) & (ones < given.sum(axis=1))
    return {
        str(rid): _pattern(names, row)
        for rid, row, keep in zip(verdicts.index, matrix, differ, strict=True)
        if keep
    }


def _strata(data: RunData, selection: Selection) -> dict[str, str]:
    frame = data.frame()
    by = selection.by
    if by in ("dataset", "model"):
        return {str(k): f"{by}={v}" for k, v in frame[by].items()}
    if by == "length":
        import pandas as pd

        words = frame["length_words"].astype(float)
        bins = pd.qcut(words, q=selection.bins, duplicates="drop")
        return {
            str(k): f"length {int(iv.left) + 1}-{int(iv.right)} words" for k, iv in bins.items()
        }
    key = by[len("label:") :]
    known = sorted(data.wide_verdicts.columns)
    _known([key], known, "labeler")
    verdicts = data.verdicts()[key]
    names = {1.0: "hallucinated", 0.0: "faithful"}
    return {str(k): f"{key}={names.get(v, 'no verdict')}" for k, v in verdicts.items()}


def _take_turns(groups: Mapping[str, str], n: int | None, rng: np.random.Generator) -> list[str]:
    """Draw from each group in turn (groups sorted, each in a random order) until ``n``."""
    members: dict[str, list[str]] = {}
    for rid in sorted(groups):
        members.setdefault(groups[rid], []).append(rid)
    queues = [list(rng.permutation(members[g])) for g in sorted(members)]
    limit = sum(len(q) for q in queues) if n is None else n
    out: list[str] = []
    depth = 0
    while len(out) < limit and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(out) < limit:
                out.append(str(queue[depth]))
        depth += 1
    return out


def choose(data: RunData, selection: Selection) -> Choice:
    """Choose responses of a run for people to label.

    Raises:
        InvalidInputError: A labeler not in the run, or no response qualifies
            (no disagreement; no annotators yet for ``escalate``).
    """
    rng = np.random.default_rng(selection.seed)
    known = sorted(data.wide_verdicts.columns)
    if selection.escalate:
        annotators = [k for k in known if LabelKey.parse(k).is_annotator]
        if len(annotators) < 2:
            raise InvalidInputError(
                "--escalate chooses the items whose human annotators disagree, but the run "
                f"has {len(annotators)} annotator(s) (human:<name> labels). Import a first "
                "round with `realitycheck annotate import` before escalating."
            )
        groups = _disputed(data.verdicts(), annotators)
        groups = dict.fromkeys(groups, "annotators disagree")
        what = f"the annotators {', '.join(annotators)}"
    elif selection.strategy == "disagreement":
        _known(selection.labelers, known, "labeler")
        groups = _disputed(data.verdicts(), selection.labelers)
        what = f"the labelers {', '.join(selection.labelers)}"
    elif selection.strategy == "stratified":
        groups = _strata(data, selection)
        what = ""
    else:
        groups = dict.fromkeys(data.frame().index.astype(str), "")
        what = ""
    if not groups:
        raise InvalidInputError(
            f"No response of the run qualifies: {what or 'the run'} never disagree."
            if what
            else "The run holds no responses to choose from."
        )
    chosen = _take_turns(groups, selection.n, rng)
    order = [chosen[i] for i in rng.permutation(len(chosen))]
    return Choice(tuple(order), {rid: groups[rid] for rid in order}, len(groups))
