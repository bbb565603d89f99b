"""Leaderboard: generators ranked by hallucination rate under the reference and each labeler.

Parts: ``_names`` (model ids cut at real path separators, short display
names), ``_ranking`` (ranks and rank ranges, judge-generator matching,
self-preference), ``_tables`` (tables, captions, finding), ``_plot`` (the dot
plot, shared with the QA-accuracy study).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from realitycheck import metrics as M
from realitycheck.analysis import (
    CALIBRATION,
    OBJECTIVES,
    Bootstrap,
    choose_or_fix_threshold,
    refusal_mask,
    split_of,
)
from realitycheck.params import (
    Interval,
    NonEmptyStr,
    OneOf,
    OrNone,
    Satisfies,
    SequenceOf,
    as_tuple,
    param,
)
from realitycheck.records.keys import LabelKey, is_human
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import Study, study
from realitycheck.studies.leaderboard import _ranking as R
from realitycheck.studies.leaderboard import _tables as T
from realitycheck.studies.leaderboard._plot import dot_plot
from realitycheck.studies.leaderboard._ranking import normalise_model_name, rank_ranges
from realitycheck.text import short_names

__all__ = [
    "Leaderboard",
    "dot_plot",
    "normalise_model_name",
    "rank_ranges",
]

RankBy = Literal["all", "answered"]


_THRESHOLDS = "a finite number per detector key, as {key: value} or 'key=value' strings"


def _parsed(item: Any) -> tuple[str, float] | None:
    """``key=value`` read into ``(key, value)``; None unless a key and a finite number."""
    if not isinstance(item, str) or "=" not in item:
        return None
    key, _, text = item.rpartition("=")
    try:
        value = float(text)
    except ValueError:
        return None
    if not key.strip() or not np.isfinite(value):
        return None
    return key.strip(), value


def _threshold_items(value: Any) -> Any:
    """Thresholds as sorted ``key=value`` strings (anything else unchanged, for the check)."""
    if isinstance(value, Mapping):
        numbers = all(
            isinstance(t, int | float) and not isinstance(t, bool) for t in value.values()
        )
        if not numbers:
            return value
        items: list[Any] = [f"{key}={float(t)!r}" for key, t in value.items()]
    elif isinstance(value, str):
        items = [value]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return value
    if any(_parsed(item) is None for item in items):
        return value
    return tuple(sorted(items))


def _valid_thresholds(value: Any) -> bool:
    return isinstance(value, tuple) and all(_parsed(item) is not None for item in value)


@dataclass(frozen=True)
class _Judge:
    key: str
    kind: str  # "reference", "labeler" or "detector"
    verdicts: np.ndarray  # 1.0 / 0.0 / NaN per response of the dataset
    threshold: float | None
    rule: str


@study("leaderboard")
@dataclass(frozen=True, kw_only=True)
class Leaderboard(Study):
    """Rank generators by hallucination rate under the reference labels and each labeler.

    Follows the HHEM / FaithJudge leaderboards of Tamber et al. (2025,
    "Benchmarking LLM Faithfulness in RAG with Evolving Leaderboards"): per
    dataset with at least two generators (and per task where a dataset has
    several), each generator's hallucination rate (share of its responses
    judged hallucinated, in [0, 1], lower = better, with a Wilson score
    interval) under the reference labels and under every other labeler (human
    protocols, automatic labelers, LLM judges, recorded judges); rank 1 = lowest
    rate, tied rates share their average rank. Where intervals overlap the ranks
    are not told apart: each generator also gets its rank range
    (:func:`~realitycheck.studies.leaderboard.rank_ranges` of the Wilson
    intervals of the rate ranked), which the finding and the report show
    instead of a strict order. Only responses that the reference
    labels enter the rates, so every judge is compared with the reference on the
    same responses. Detectors are not judges: one is ranked only when named in
    ``detectors``, hallucinated iff value >= threshold, at a given threshold or at
    the one :func:`~realitycheck.analysis.choose_or_fix_threshold` picks on the
    calibration split against the reference (0.5 for a binary detector; the
    objective maximised elsewhere), applied to every response. The answer
    rate is the share of responses with more than ``refusal_words`` words (the
    HHEM rule for refusals); the rate among answered responses is also shown.
    Each judge's ranking is compared with the reference's: discordant pairs
    (listed; pairs tied under either are not counted) and Kendall's tau-b in
    [-1, 1]. Where a judge is also a generator (a judge stands for the
    ``model`` of its nested backend, e.g. ``qa_judge[judge=openai[model=gpt-4o]]``
    for ``gpt-4o``, and a recorded judge for its name; names matched by
    :func:`normalise_model_name`), the
    self-preference statistic is ``(judge - reference rate)`` on its own outputs
    minus the mean of that difference on the other generators (in [-2, 2];
    negative = more lenient with itself), with a CI from resampling sources.
    Every interval covers the run's bootstrap confidence; the self-preference
    bootstrap uses its resamples and seed.

    Args:
        reference: The labels whose ranking the others are compared with; any
            labeler key (``human``, a judge, a panel, ``recorded:<name>``). Columns
            that hold its rates are named after it (``<reference>_rate``).
        judges: Labeler keys to rank by; ``None`` = every stored labeler except
            single annotators (``human:<name>``).
        detectors: Detector keys to rank by as well (none by default).
        thresholds: Fixed detector thresholds, ``{key: value}`` or
            ``("key=value", ...)``.
        refusal_words: Responses with at most this many words are refusals.
        rank_by: ``"all"`` (rate over every judged response) or ``"answered"``
            (rate over non-refusals, as the HHEM leaderboard).
        objective: What a calibration-split threshold maximises.
        calibration_fraction: Share of examples in the calibration split.
        slice_by: Metadata columns (a ``files`` dataset's ``meta=``, kept in each
            response's ``meta["slice"]``, as ``evaluate --slice-by`` reads them)
            whose values add one ranking each (``subset=qa``) beside the pooled
            ``all`` slice: one dataset holding a leaderboard's subsets gives
            the per-subset and the overall rates (Tamber et al. rank by the
            total over all subsets, which ``all`` is). The table
            ``slice_rates`` sets them side by side.
    """

    judges: tuple[str, ...] | None = param(
        None, OrNone(SequenceOf(NonEmptyStr())), convert=as_tuple
    )
    detectors: tuple[str, ...] = param((), SequenceOf(NonEmptyStr()), convert=as_tuple)
    thresholds: tuple[str, ...] | Mapping[str, float] = param(
        (), Satisfies(_valid_thresholds, _THRESHOLDS), convert=_threshold_items
    )
    refusal_words: int = param(5, Interval(int, 0))
    rank_by: RankBy = param("all", OneOf(RankBy))
    objective: str = param("f1_macro", OneOf(OBJECTIVES))
    calibration_fraction: float = param(0.5, Interval(float, 0, 1, closed="neither"))
    slice_by: tuple[str, ...] = param((), SequenceOf(NonEmptyStr()), convert=as_tuple)

    title: ClassVar[str] = "Leaderboard: generators ranked by the reference and by each labeler"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Rank the generators of every dataset; see the class docstring."""
        boards: list[pd.DataFrame] = []
        answers: list[pd.DataFrame] = []
        inversions: list[dict[str, Any]] = []
        preference: list[dict[str, Any]] = []
        figures: list[StudyFigure] = []
        skipped: list[str] = []
        if self.slice_by:
            from realitycheck.pipeline import check_slice_by

            check_slice_by(data.store, self.slice_by)  # a misspelt column fails, as in evaluate
        for ds in data.datasets:
            frame = T.with_slice_columns(data.frame(ds), self.slice_by)
            if frame["model"].nunique() < 2:
                skipped.append(f"{ds}: one generator ({frame['model'].iloc[0]}), nothing to rank")
                continue
            if self.reference not in data.labelers_of(ds):
                skipped.append(f"{ds}: no {self.reference!r} labels to rank against")
                continue
            judges = self._judges(data, ds, frame, skipped)
            if len(judges) == 1:
                skipped.append(
                    f"{ds}: no other labeler or named detector; only the reference ranks"
                )
            for column in self.slice_by:
                if frame[T.slice_column(column)].notna().sum() == 0:
                    skipped.append(f"{ds}: no response declares the slice column {column!r}")
            for name, mask in T.slices(frame, self.slice_by):
                sub = frame[mask]
                if sub["model"].nunique() < 2:
                    skipped.append(f"{ds} ({name}): one generator, nothing to rank")
                    continue
                where = {"dataset": ds, "slice": name}
                refused = refusal_mask(sub["text"], self.refusal_words)
                local = [replace(j, verdicts=j.verdicts[mask]) for j in judges]
                board = self._board(sub, refused, local, bootstrap.confidence)
                answers.append(T.answer_rates(sub, refused, bootstrap.confidence).assign(**where))
                boards.append(board.assign(**where))
                inversions += [{**where, **row} for row in T.inversions(board)]
                preference += [
                    {**where, **row}
                    for row in self._self_preference(sub, refused, board, local, bootstrap)
                ]
                figures.append(self._figure(board, ds, name, bootstrap.confidence))
        ref = self.reference
        board_frame, inv_frame, pref_frame = (
            T.front(boards),
            pd.DataFrame(inversions),
            pd.DataFrame(preference),
        )
        finding = T.finding(board_frame, inv_frame, pref_frame, ref)
        by_slice = T.slice_rates(board_frame, self.slice_by)
        if not by_slice.empty:
            finding = " ".join(filter(None, (finding, T.slice_finding(by_slice, ref))))
        tables = [
            StudyTable(
                "leaderboard",
                T.name_reference(board_frame, ref),
                T.BOARD_CAPTION.format(by=self.rank_by, ref=ref),
            ),
            StudyTable(
                "answer_rate", T.front(answers), T.ANSWER_CAPTION.format(self.refusal_words)
            ),
            StudyTable(
                "inversions", T.name_reference(inv_frame, ref), T.INVERSION_CAPTION.format(ref=ref)
            ),
            StudyTable(
                "self_preference",
                T.name_reference(pref_frame, ref),
                T.SELF_CAPTION.format(ref=ref),
            ),
        ]
        if self.slice_by:
            tables.append(
                StudyTable(
                    "slice_rates",
                    T.name_reference(by_slice, ref),
                    T.SLICE_CAPTION.format(by=self.rank_by, ref=ref),
                )
            )
        return self._result(finding, tables=tables, figures=figures, skipped=skipped)

    def _judges(
        self, data: RunData, ds: str, frame: pd.DataFrame, skipped: list[str]
    ) -> list[_Judge]:
        verdicts = data.verdicts(ds)
        ref = verdicts[self.reference].to_numpy()
        out = [_Judge(self.reference, "reference", ref, None, "reference labels")]
        labelers = [k for k in data.labelers_of(ds) if k != self.reference]
        stored = data.detectors_of(ds)
        if self.judges is None:
            labelers = [k for k in labelers if not LabelKey.parse(k).is_annotator]
        else:
            missing = [j for j in self.judges if j not in labelers and j != self.reference]
            if missing:
                skipped.append(f"{ds}: no labeler {', '.join(missing)} here")
            labelers = [k for k in labelers if k in self.judges]
        for key in labelers:
            v = verdicts[key].to_numpy()
            same = [j.key for j in out if np.array_equal(v, j.verdicts, equal_nan=True)]
            if same:
                skipped.append(f"{ds}: judge {key} left out, its verdicts equal {same[0]}'s")
                continue
            kind = "human" if is_human(key) else "labeler"
            out.append(_Judge(key, kind, v, None, f"{kind} verdict"))
        missing = [d for d in self.detectors if d not in stored]
        if missing:
            skipped.append(f"{ds}: no detector {', '.join(missing)} here")
        scores = data.detector_scores(ds)
        split = split_of(list(frame["example_id"]), self.calibration_fraction)
        given = dict(t for t in map(_parsed, self.thresholds) if t is not None)
        for key in (d for d in self.detectors if d in stored):
            if any(j.key == key for j in out):
                skipped.append(f"{ds}: detector {key} left out, {key} is ranked as a labeler")
                continue
            s = scores[key].to_numpy()
            t, rule = self._threshold(key, s, ref, split, given)
            if not np.isfinite(t):
                skipped.append(f"{ds}: {key} {rule}")
                continue
            v = np.where(np.isnan(s), np.nan, (s >= t).astype(float))
            out.append(_Judge(key, "detector", v, t, rule))
        return out

    def _threshold(
        self, key: str, s: np.ndarray, ref: np.ndarray, split: np.ndarray, given: dict[str, float]
    ) -> tuple[float, str]:
        if key in given:
            return given[key], "given threshold"
        cal = (split == CALIBRATION) & ~np.isnan(s) & ~np.isnan(ref)
        t, rule = choose_or_fix_threshold(ref[cal].astype(int), s[cal], self.objective)
        if rule.startswith("threshold maximising"):
            rule = (
                f"chosen on the calibration split (max {self.objective} vs {self.reference}), "
                "applied to every response"
            )
        return t, rule

    def _board(
        self, sub: pd.DataFrame, refused: np.ndarray, judges: list[_Judge], confidence: float
    ) -> pd.DataFrame:
        models = sorted(sub["model"].unique())
        model = sub["model"].to_numpy()
        ref = judges[0].verdicts
        counts = ("n_hallucinated", "n_judged")
        if self.rank_by == "answered":
            counts = ("n_hallucinated_answered", "n_judged_answered")
        parts = []
        for judge in judges:
            v = judge.verdicts
            judged = ~np.isnan(ref) & ~np.isnan(v)
            use = judged & ~refused if self.rank_by == "answered" else judged
            rows = []
            for m in models:
                mine, answered = model == m, (model == m) & judged & ~refused
                rows.append(
                    {
                        "judge": judge.key,
                        "judge_kind": judge.kind,
                        "generator": m,
                        "n_judged": int((mine & judged).sum()),
                        "n_hallucinated": int(v[mine & judged].sum()),
                        "n_judged_answered": int(answered.sum()),
                        "n_hallucinated_answered": int(v[answered].sum()),
                        "ranked_rate": _mean(v[mine & use]),
                        "human_rate": _mean(ref[mine & use]),
                        "threshold": judge.threshold,
                        "threshold_rule": judge.rule,
                    }
                )
            part = pd.DataFrame(rows)
            part["hallucination_rate"] = _ratio(part["n_hallucinated"], part["n_judged"])
            part["ci_low"], part["ci_high"] = M.wilson_interval(
                part["n_hallucinated"], part["n_judged"], confidence=confidence
            )
            part["hallucination_rate_answered"] = _ratio(
                part["n_hallucinated_answered"], part["n_judged_answered"]
            )
            part["rank"] = R.rank_rates(part["ranked_rate"].to_numpy(float))
            part["human_rank"] = R.rank_rates(part["human_rate"].to_numpy(float))
            rated = part["ranked_rate"]
            part["tied"] = rated.duplicated(keep=False) & rated.notna()
            low, high = M.wilson_interval(
                part[counts[0]], part[counts[1]], confidence=confidence
            )  # the interval of the rate ranked
            part["rank_low"], part["rank_high"] = R.rank_ranges(low, high)
            parts.append(part)
        return pd.concat(parts, ignore_index=True)[T.BOARD_COLUMNS]

    def _self_preference(
        self,
        sub: pd.DataFrame,
        refused: np.ndarray,
        board: pd.DataFrame,
        judges: list[_Judge],
        bootstrap: Bootstrap,
    ) -> list[dict[str, Any]]:
        models = sorted(sub["model"].unique())
        matched = R.match_judges([j.key for j in judges[1:]], models)
        ref = judges[0].verdicts
        group = pd.Categorical(sub["model"], categories=models).codes.astype(np.int64)
        cluster = pd.factorize(sub["example_id"])[0].astype(np.int64)
        out = []
        for judge in judges[1:]:
            own = matched.get(judge.key)
            if own is None:
                continue
            part = board[board["judge"] == judge.key].set_index("generator").loc[models]
            rates, human = part["ranked_rate"].to_numpy(), part["human_rate"].to_numpy()
            keep = np.flatnonzero(np.isfinite(rates) & np.isfinite(human))
            k = models.index(own)
            if k not in keep or keep.size < 2:
                continue
            bias_self, bias_others, pref = R.self_preference(
                rates[keep], human[keep], int(np.searchsorted(keep, k))
            )
            use = ~np.isnan(judge.verdicts) & ~np.isnan(ref) & np.isin(group, keep)
            if self.rank_by == "answered":
                use &= ~refused
            low, high = R.cluster_bootstrap_self_preference(
                judge.verdicts[use],
                ref[use],
                group[use] == k,
                group[use],
                cluster[use],
                n_resamples=bootstrap.n_resamples,
                confidence=bootstrap.confidence,
                seed=bootstrap.seed,
            )
            out.append(
                {
                    "judge": judge.key,
                    "generator": own,
                    "n_judged_self": int(part["n_judged"].to_numpy()[k]),
                    "judge_rate_self": rates[k],
                    "human_rate_self": human[k],
                    "judge_rank_self": float(part["rank"].to_numpy()[k]),
                    "human_rank_self": float(part["human_rank"].to_numpy()[k]),
                    "bias_self": bias_self,
                    "bias_others": bias_others,
                    "self_preference": pref,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
        return out

    def _figure(self, board: pd.DataFrame, ds: str, name: str, confidence: float) -> StudyFigure:
        ref = board[board["judge_kind"] == "reference"].sort_values("ranked_rate")
        order = list(ref["generator"])
        counts = ("n_hallucinated", "n_judged")
        if self.rank_by == "answered":
            counts = ("n_hallucinated_answered", "n_judged_answered")
        series = {}
        for judge, part in board.groupby("judge", sort=False):
            part = part.set_index("generator").loc[order]
            low, high = M.wilson_interval(part[counts[0]], part[counts[1]], confidence=confidence)
            series[str(judge)] = (part["ranked_rate"].to_numpy(), low, high)
        short = short_names(order)
        png = dot_plot(
            [short[str(g)] for g in order],
            series,
            xlabel=f"hallucination rate ({self.rank_by} judged responses; Wilson CI)",
            title=f"{ds} ({name}): generators by {self.reference} rate, lowest first",
        )
        stem = re.sub(r"[^A-Za-z0-9._=-]+", "_", f"leaderboard_{ds}_{name}")
        caption = (
            f"Hallucination rate of each generator on {ds} ({name}) under {self.reference} "
            "(black, with Wilson interval) and under each automatic judge."
        )
        return StudyFigure(stem, png, caption)


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    return num / den.where(den > 0)
