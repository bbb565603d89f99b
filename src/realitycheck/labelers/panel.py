"""A panel: a labeler over other labelers, whose verdicts it combines by a rule.

The panel asks each member (a nested labeler component: lexical labelers,
LLM judges, another panel) for its labels of the same responses, passing the
run's call cache through so judges share it, and combines the verdicts of
each response:

``majority``
    Hallucinated when more members say so than not; a tie counts as
    hallucinated, as FaithJudge's majority vote does (seed paper 003, Table 2:
    "we break ties by defaulting to a classification of inconsistent").
``unanimous``
    Hallucinated only when every member that gave a verdict says so.
``any``
    Hallucinated when any member says so.
``dawid_skene``
    Each member's reliability (sensitivity, specificity) and the prior are
    fitted by Dawid-Skene (:func:`realitycheck.analysis.dawid_skene`) on the
    responses of the calibration split (:func:`realitycheck.analysis.split_of`
    of their example ids), and every response is labelled by that fit:
    hallucinated when P(hallucinated | votes) >= 0.5 (a tie counts as
    hallucinated, as in ``majority``). The fit uses no human label.

A member's verdict of ``None`` (it could not judge: no reference, an excluded
refusal, replies it could not read) is left out of the vote; the panel's
label counts its members' unreadable replies (``unreadable``, and each
member's count in ``raw``). A response without any member verdict gets
``hallucinated=None`` and an error. A member whose call failed (its label is
``failed``: a judge's backend never answered) makes the panel's label of that
response ``None`` and ``failed`` too, rather than a vote of the members left,
which would be another panel (a majority of two of three), so the stage
exits non-zero; it is ``retryable`` when every failed member's error may pass,
and a resumed run then asks again (a judge's answered calls come back from
the cache) rather than keep a verdict one vote short for good.

Batches and Dawid-Skene. The label stage calls :meth:`Panel.label` on batches
of the responses not labelled yet (up to 2,048 by default), and the fit is
made per call: on the calibration responses of that batch. A run labelled in
one batch gets one fit; a larger run, or one resumed after a stop, is labelled
by several fits, each on its own calibration responses. Each label's ``raw``
records the fit that made it (on what, how many responses, the prior and each
member's reliabilities), so a reader can tell them apart; pass a larger
``batch_size`` to the label stage for a single fit. A batch with fewer than
``min_calibration`` calibration responses with a vote, or whose calibration
votes are all one verdict (Dawid-Skene cannot tell reliabilities apart then),
is labelled by ``majority`` instead, and ``raw`` says so; the panel never fits
on test responses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from realitycheck.errors import InvalidInputError
from realitycheck.labelers._base import Labeler, labeler
from realitycheck.labelers.lexical import ExactMatch, TokenF1
from realitycheck.labelers.rouge import RougeL
from realitycheck.params import Interval, OneOf, param, param_error
from realitycheck.records import Example, Label, Response
from realitycheck.registry import nested

if TYPE_CHECKING:
    from realitycheck.backends import CallCache

__all__ = ["RULES", "Panel"]

Rule = Literal["majority", "unanimous", "any", "dawid_skene"]
RULES: tuple[str, ...] = ("majority", "unanimous", "any", "dawid_skene")


@labeler("panel")
@dataclass(frozen=True, kw_only=True)
class Panel(Labeler):
    """A panel of labelers whose verdicts are combined by majority, unanimity, any or Dawid-Skene.

    ``hallucinated`` follows ``rule`` (ties count as hallucinated); ``score`` is
    the share of voting members that say hallucinated, in [0, 1], or with
    ``dawid_skene`` the posterior P(hallucinated | votes), in [0, 1] (the share
    again where it falls back to majority): higher = more likely hallucinated
    either way. ``category`` is the vote, e.g. ``3/4``
    (three of the four members that gave a verdict say hallucinated); ``raw``
    is JSON with each member's key, verdict and error, and the fit or the
    fallback with ``dawid_skene``. See the module docstring for how members
    without a verdict are counted and how Dawid-Skene is fitted per batch.

    Args:
        members: The labelers on the panel, at least 2, all different (a key
            ``rouge_l+token_f1+exact_match``, judges such as
            ``qa_judge[judge=openai[model=gpt-4o-mini]]``). The default, the
            three lexical labelers rouge_l, token_f1 and exact_match, only lets
            ``panel`` build alone; name judges for a panel worth its calls.
        rule: How verdicts combine: ``majority`` (ties count as hallucinated),
            ``unanimous``, ``any`` or ``dawid_skene``.
        calibration_fraction: Share of examples in the calibration split that
            ``dawid_skene`` fits on (the split of evaluate, by example id).
        min_calibration: Fewest calibration responses with a vote that
            ``dawid_skene`` fits on; a batch with fewer is labelled by majority.
    """

    members: tuple[Labeler, ...] = nested(
        "labelers",
        many=True,
        default=(RougeL(), TokenF1(), ExactMatch()),
        doc="the labelers on the panel, at least 2",
    )
    rule: Rule = param("majority", OneOf(Rule), doc="how verdicts combine")
    calibration_fraction: float = param(
        0.5,
        Interval(float, 0, 1, closed="neither"),
        doc="share of examples in the calibration split",
    )
    min_calibration: int = param(
        20, Interval(int, 2), doc="fewest calibration responses Dawid-Skene fits on"
    )
    needs: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        """Check the parameters, then that the members are at least 2, distinct and computed."""
        super().__post_init__()
        keys = [m.key for m in self.members]
        if len(keys) < 2:
            raise param_error(
                "members",
                self.name,
                "a list of at least 2 labelers",
                got=" + ".join(keys) or "none",
            )
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise param_error(
                "members",
                self.name,
                "a list of different labelers (a repeated one would vote twice)",
                got=" + ".join(keys),
                hint=f"Repeated: {', '.join(repeated)}.",
            )
        recorded = [m.key for m in self.members if "recorded" in m.needs]
        if recorded:
            raise param_error(
                "members",
                self.name,
                "a list of labelers that compute their labels",
                got=" + ".join(keys),
                hint=f"{', '.join(recorded)} can only be read from a dataset, not computed.",
            )

    @property
    def overlaps_batches(self) -> bool:
        """Whether every member's batches may overlap (a panel of judges on servers)."""
        return all(member.overlaps_batches for member in self.members)

    def label(
        self,
        responses: Sequence[Response],
        examples: Mapping[str, Example],
        *,
        cache: CallCache | None = None,
    ) -> list[Label]:
        """Return one label per response, in order: the members' verdicts combined by ``rule``.

        Raises:
            InvalidInputError: A member returned labels of other responses than asked.
            MissingDependencyError: ``dawid_skene`` without crowd-kit installed.
        """
        responses = list(responses)
        if not responses:
            return []
        verdicts = [self._member_labels(m, responses, examples, cache) for m in self.members]
        matrix = np.array(
            [[_vote(by_id[r.response_id]) for by_id in verdicts] for r in responses], dtype=float
        ).reshape(len(responses), len(self.members))
        hallucinated, score, fit = self._combine(matrix, [r.example_id for r in responses])
        out = []
        for i, response in enumerate(responses):
            mine = [by_id[response.response_id] for by_id in verdicts]
            out.append(self._one(response, mine, matrix[i], hallucinated[i], score[i], fit))
        return out

    def _member_labels(
        self,
        member: Labeler,
        responses: list[Response],
        examples: Mapping[str, Example],
        cache: CallCache | None,
    ) -> dict[str, Label]:
        """Return a member's labels by response id, checking it labelled exactly those asked."""
        labels = member.label(responses, examples, cache=cache)
        by_id = {lab.response_id: lab for lab in labels}
        asked = {r.response_id for r in responses}
        if len(labels) != len(responses) or set(by_id) != asked:
            raise InvalidInputError(
                f"The panel member {member.key!r} returned {len(labels)} labels of "
                f"{len(set(by_id) & asked)} of the {len(asked)} responses asked."
            )
        return by_id

    def _combine(
        self, matrix: np.ndarray, example_ids: list[str]
    ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Return each response's verdict (1/0/NaN) and score (NaN without votes), and the fit."""
        ones, zeros = (matrix == 1).sum(axis=1), (matrix == 0).sum(axis=1)
        voted = ones + zeros > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(voted, ones / np.maximum(ones + zeros, 1), np.nan)
        if self.rule == "unanimous":
            verdict = np.where(voted, (zeros == 0).astype(float), np.nan)
        elif self.rule == "any":
            verdict = np.where(voted, (ones > 0).astype(float), np.nan)
        elif self.rule == "dawid_skene":
            return self._dawid_skene(matrix, example_ids, voted, share)
        else:
            verdict = _majority(matrix, voted)
        return verdict, share, {}

    def _dawid_skene(
        self, matrix: np.ndarray, example_ids: list[str], voted: np.ndarray, share: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        from realitycheck.analysis import CALIBRATION, dawid_skene, split_of

        calibration = (split_of(example_ids, self.calibration_fraction) == CALIBRATION) & voted
        n_fit = int(calibration.sum())
        seen = np.unique(matrix[calibration][~np.isnan(matrix[calibration])])
        if n_fit < self.min_calibration or seen.size < 2:
            why = (
                f"{n_fit} calibration responses with a vote in this batch, fewer than "
                f"min_calibration={self.min_calibration}"
                if n_fit < self.min_calibration
                else f"the {n_fit} calibration responses of this batch all got one verdict"
            )
            return _majority(matrix, voted), share, {"fallback": f"majority: {why}"}
        fitted = dawid_skene(matrix[calibration])
        posterior = fitted.predict(matrix)
        verdict = np.where(voted, (posterior >= 0.5).astype(float), np.nan)
        keys = [m.key for m in self.members]
        fit = {
            "on": "calibration",
            "n": n_fit,
            "prior": _plain(fitted.prior),
            "sensitivity": dict(zip(keys, map(_plain, fitted.sensitivity), strict=True)),
            "specificity": dict(zip(keys, map(_plain, fitted.specificity), strict=True)),
        }
        return verdict, posterior, fit

    def _one(
        self,
        response: Response,
        mine: list[Label],
        votes: np.ndarray,
        verdict: float,
        score: float,
        fit: dict[str, Any],
    ) -> Label:
        """Return the panel's label of one response from its members' labels."""
        record: dict[str, Any] = {
            "rule": self.rule,
            "votes": [
                {
                    "member": m.key,
                    "hallucinated": lab.hallucinated,
                    "error": lab.error,
                    "unreadable": lab.unreadable,
                }
                for m, lab in zip(self.members, mine, strict=True)
            ],
        }
        if fit:
            record["fit"] = fit
        raw = json.dumps(record, sort_keys=True)
        unreadable = sum(lab.unreadable for lab in mine)
        failed = [(m, lab) for m, lab in zip(self.members, mine, strict=True) if lab.failed]
        if failed:
            # A vote of the members left would be another panel (a majority of 2 of 3):
            # no verdict, and the panel's label fails as its member's call did.
            retryable = all(lab.retryable for _, lab in failed)
            said = "; ".join(f"{m.key}: {lab.error}" for m, lab in failed)
            error = (
                f"a member may pass on retry: {said}"
                if retryable
                else f"a member's call failed for good: {said}"
            )
            return self._label(
                response,
                None,
                raw=raw,
                error=error,
                retryable=retryable,
                failed=True,
                unreadable=unreadable,
            )
        n_votes = int((~np.isnan(votes)).sum())
        if n_votes == 0:
            why = "; ".join(
                f"{m.key}: {lab.error}"
                for m, lab in zip(self.members, mine, strict=True)
                if lab.error
            )
            error = f"no member gave a verdict ({why})" if why else "no member gave a verdict"
            return self._label(
                response,
                None,
                raw=raw,
                error=error,
                failed=any(lab.failed for lab in mine),
                unreadable=unreadable,
            )
        category = f"{int((votes == 1).sum())}/{n_votes}"
        return self._label(
            response,
            bool(verdict == 1),
            score=float(score),
            category=category,
            raw=raw,
            unreadable=unreadable,
        )


def _vote(label: Label) -> float:
    """1.0 (hallucinated), 0.0 (faithful) or NaN (no verdict) for one member's label."""
    return np.nan if label.hallucinated is None else float(label.hallucinated)


def _majority(matrix: np.ndarray, voted: np.ndarray) -> np.ndarray:
    """Majority verdict per response; a tie counts as hallucinated, no vote gives NaN."""
    # analysis (and metrics under it) loads here, not when the registry lists labelers.
    from realitycheck.analysis import majority_vote

    majority = majority_vote(matrix)  # NaN on a tie and without votes
    return np.where(voted, np.where(np.isnan(majority), 1.0, majority), np.nan)


def _plain(value: float) -> float | None:
    """A float for JSON; ``None`` for NaN (a member the fit never saw)."""
    value = float(value)
    return None if value != value else value
