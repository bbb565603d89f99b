"""Leaderboard: generators ranked by hallucination rate under humans and under each judge."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from realitycheck import metrics as M
from realitycheck.analysis import Bootstrap, split_of
from realitycheck.errors import InvalidInputError
from realitycheck.keys import LabelKey, is_human
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import _leaderboard_tables as T
from realitycheck.studies import _rank_stats as R
from realitycheck.studies._base import Study, study
from realitycheck.studies._rank_plots import dot_plot

__all__ = ["Leaderboard"]

_OBJECTIVES = ("f1_macro", "balanced_accuracy", "f1", "f1_weighted", "youden")
_RANK_BY = ("all", "answered")


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
    """Rank generators by hallucination rate under the reference labels and each judge.

    Follows the HHEM / FaithJudge leaderboards of Tamber et al. (2025,
    "Benchmarking LLM Faithfulness in RAG with Evolving Leaderboards"): per
    dataset with at least two generators (and per task where a dataset has
    several), each generator's hallucination rate (share of its responses
    judged hallucinated, in [0, 1], lower = better, with a Wilson score
    interval) under the reference labels and under every automatic labeler and
    detector; rank 1 = lowest rate, tied rates share their average rank. Only
    responses that the reference labels enter the rates, so every judge is
    compared with humans on the same responses. Detectors are thresholded
    (hallucinated iff value >= threshold): binary ones at 0.5, continuous ones
    at a given threshold or at the one maximising ``objective`` against the
    reference on the calibration split (applied to every response). The answer
    rate is the share of responses with more than ``refusal_words`` words (the
    HHEM rule for refusals); the rate among answered responses is also shown.
    Each judge's ranking is compared with the reference's: discordant pairs
    (listed; pairs tied under either are not counted) and Kendall's tau-b in
    [-1, 1]. Where a judge is also a generator (names matched by
    :func:`~realitycheck.studies._rank_stats.normalise_model_name`), the
    self-preference statistic is ``(judge - human rate)`` on its own outputs
    minus the mean of that difference on the other generators (in [-2, 2];
    negative = more lenient with itself), with a CI from resampling sources.

    Args:
        reference: The labels taken as the human ranking.
        judges: Labeler / detector keys to rank by; ``None`` = every stored one
            except single annotators (``human:<name>``).
        thresholds: Fixed detector thresholds, ``{key: value}`` or
            ``("key=value", ...)``.
        refusal_words: Responses with at most this many words are refusals.
        rank_by: ``"all"`` (rate over every judged response) or ``"answered"``
            (rate over non-refusals, as the HHEM leaderboard).
        objective: What a calibration-split threshold maximises.
        calibration_fraction: Share of examples in the calibration split.
        confidence: Coverage of the Wilson and bootstrap intervals.
    """

    judges: tuple[str, ...] | None = None
    thresholds: tuple[str, ...] | Mapping[str, float] = ()
    refusal_words: int = 5
    rank_by: str = "all"
    objective: str = "f1_macro"
    calibration_fraction: float = 0.5
    confidence: float = 0.95

    title: ClassVar[str] = "Leaderboard: generators ranked by humans and by each judge"

    def __post_init__(self) -> None:
        if isinstance(self.judges, str):
            object.__setattr__(self, "judges", (self.judges,))
        elif self.judges is not None:
            object.__setattr__(self, "judges", tuple(str(j) for j in self.judges))
        object.__setattr__(self, "thresholds", _threshold_items(self.thresholds))
        if (
            isinstance(self.refusal_words, bool)
            or not isinstance(self.refusal_words, int)
            or self.refusal_words < 0
        ):
            raise InvalidInputError(
                "The 'refusal_words' parameter of leaderboard must be an int >= 0. "
                f"Got {self.refusal_words!r} instead."
            )
        for name, value, allowed in (
            ("rank_by", self.rank_by, _RANK_BY),
            ("objective", self.objective, _OBJECTIVES),
        ):
            if value not in allowed:
                raise InvalidInputError(
                    f"The {name!r} parameter of leaderboard must be one of {list(allowed)}. "
                    f"Got {value!r} instead."
                )
        for name, fraction in (
            ("calibration_fraction", self.calibration_fraction),
            ("confidence", self.confidence),
        ):
            if (
                isinstance(fraction, bool)
                or not isinstance(fraction, int | float)
                or not 0 < fraction < 1
            ):
                raise InvalidInputError(
                    f"The {name!r} parameter of leaderboard must be a float in (0, 1). "
                    f"Got {fraction!r} instead."
                )

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Rank the generators of every dataset; see the class docstring."""
        boards: list[pd.DataFrame] = []
        answers: list[pd.DataFrame] = []
        inversions: list[dict[str, Any]] = []
        preference: list[dict[str, Any]] = []
        figures: list[StudyFigure] = []
        skipped: list[str] = []
        for ds in data.datasets:
            frame = data.frame(ds)
            if frame["model"].nunique() < 2:
                skipped.append(f"{ds}: one generator ({frame['model'].iloc[0]}), nothing to rank")
                continue
            if self.reference not in data.labelers_of(ds):
                skipped.append(f"{ds}: no {self.reference!r} labels to rank against")
                continue
            judges = self._judges(data, ds, frame, skipped)
            if len(judges) == 1:
                skipped.append(f"{ds}: no automatic labeler or detector; only the reference ranks")
            for name, mask in T.slices(frame):
                sub = frame[mask]
                if sub["model"].nunique() < 2:
                    skipped.append(f"{ds} ({name}): one generator, nothing to rank")
                    continue
                where = {"dataset": ds, "slice": name}
                refused = R.refusal_mask(sub["text"], self.refusal_words)
                local = [replace(j, verdicts=j.verdicts[mask]) for j in judges]
                board = self._board(sub, refused, local)
                answers.append(T.answer_rates(sub, refused, self.confidence).assign(**where))
                boards.append(board.assign(**where))
                inversions += [{**where, **row} for row in T.inversions(board)]
                preference += [
                    {**where, **row} for row in self._self_preference(sub, refused, board, local)
                ]
                figures.append(self._figure(board, ds, name))
        tables = [
            StudyTable("leaderboard", T.front(boards), T.BOARD_CAPTION.format(by=self.rank_by)),
            StudyTable(
                "answer_rate", T.front(answers), T.ANSWER_CAPTION.format(self.refusal_words)
            ),
            StudyTable("inversions", pd.DataFrame(inversions), T.INVERSION_CAPTION),
            StudyTable("self_preference", pd.DataFrame(preference), T.SELF_CAPTION),
        ]
        finding = T.finding(tables[0].frame, tables[2].frame, tables[3].frame, self.reference)
        return self._result(finding, tables=tables, figures=figures, skipped=skipped)

    def _judges(
        self, data: RunData, ds: str, frame: pd.DataFrame, skipped: list[str]
    ) -> list[_Judge]:
        verdicts = data.verdicts(ds)
        ref = verdicts[self.reference].to_numpy()
        out = [_Judge(self.reference, "reference", ref, None, "reference labels")]
        labelers = [k for k in data.labelers_of(ds) if k != self.reference]
        detectors = data.detectors_of(ds)
        if self.judges is None:
            labelers = [k for k in labelers if not LabelKey.parse(k).is_annotator]
        else:
            missing = [j for j in self.judges if j not in labelers and j not in detectors]
            if missing:
                skipped.append(f"{ds}: no judge {', '.join(missing)} here")
            labelers = [k for k in labelers if k in self.judges]
            detectors = [k for k in detectors if k in self.judges]
        for key in labelers:
            v = verdicts[key].to_numpy()
            same = [j.key for j in out if np.array_equal(v, j.verdicts, equal_nan=True)]
            if same:
                skipped.append(f"{ds}: judge {key} left out, its verdicts equal {same[0]}'s")
                continue
            kind = "human" if is_human(key) else "labeler"
            out.append(_Judge(key, kind, v, None, f"{kind} verdict"))
        scores = data.detector_scores(ds)
        split = split_of(list(frame["example_id"]), self.calibration_fraction)
        given = dict(_parse_threshold(item) for item in self.thresholds)
        for key in detectors:
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
        finite = s[~np.isnan(s)]
        if np.isin(finite, (0.0, 1.0)).all():
            return 0.5, "binary detector: hallucinated iff value >= 0.5"
        cal = (split == "calibration") & ~np.isnan(s) & ~np.isnan(ref)
        y = ref[cal].astype(int)
        if y.size == 0 or y.min() == y.max():
            return float("nan"), "not thresholded: one reference class on the calibration split"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", M.UndefinedMetricWarning)
            t = float(M.choose_threshold(y, s[cal], objective=self.objective))
        return t, (
            f"chosen on the calibration split (max {self.objective} vs {self.reference}), "
            "applied to every response"
        )

    def _board(self, sub: pd.DataFrame, refused: np.ndarray, judges: list[_Judge]) -> pd.DataFrame:
        models = sorted(sub["model"].unique())
        model = sub["model"].to_numpy()
        ref = judges[0].verdicts
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
            part["ci_low"], part["ci_high"] = R.wilson_interval(
                part["n_hallucinated"], part["n_judged"], self.confidence
            )
            part["hallucination_rate_answered"] = _ratio(
                part["n_hallucinated_answered"], part["n_judged_answered"]
            )
            part["rank"] = R.rank_rates(part["ranked_rate"].to_numpy(float))
            part["human_rank"] = R.rank_rates(part["human_rate"].to_numpy(float))
            rated = part["ranked_rate"]
            part["tied"] = rated.duplicated(keep=False) & rated.notna()
            parts.append(part)
        return pd.concat(parts, ignore_index=True)[T.BOARD_COLUMNS]

    def _self_preference(
        self, sub: pd.DataFrame, refused: np.ndarray, board: pd.DataFrame, judges: list[_Judge]
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
                confidence=self.confidence,
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

    def _figure(self, board: pd.DataFrame, ds: str, name: str) -> StudyFigure:
        ref = board[board["judge_kind"] == "reference"].sort_values("ranked_rate")
        order = list(ref["generator"])
        counts = ("n_hallucinated", "n_judged")
        if self.rank_by == "answered":
            counts = ("n_hallucinated_answered", "n_judged_answered")
        series = {}
        for judge, part in board.groupby("judge", sort=False):
            part = part.set_index("generator").loc[order]
            low, high = R.wilson_interval(part[counts[0]], part[counts[1]], self.confidence)
            series[str(judge)] = (part["ranked_rate"].to_numpy(), low, high)
        png = dot_plot(
            [g.rsplit("/", 1)[-1] for g in order],
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


def _threshold_items(value: Any) -> tuple[str, ...]:
    if isinstance(value, Mapping):
        items = []
        for key, t in value.items():
            if isinstance(t, bool) or not isinstance(t, int | float):
                raise InvalidInputError(_THRESHOLD_MESSAGE.format(f"{key!r}: {t!r}"))
            items.append(f"{key}={float(t)!r}")
    elif isinstance(value, str):
        items = [value]
    else:
        items = [str(v) if isinstance(v, str) else v for v in value]
    for item in items:
        _parse_threshold(item)
    return tuple(sorted(items))


_THRESHOLD_MESSAGE = (
    "The 'thresholds' parameter of leaderboard must give a finite number per detector key, "
    "as {{key: value}} or 'key=value' strings. Got {} instead."
)


def _parse_threshold(item: Any) -> tuple[str, float]:
    if not isinstance(item, str) or "=" not in item:
        raise InvalidInputError(_THRESHOLD_MESSAGE.format(repr(item)))
    key, _, text = item.rpartition("=")
    try:
        value = float(text)
    except ValueError:
        raise InvalidInputError(_THRESHOLD_MESSAGE.format(repr(item))) from None
    if not key.strip() or not np.isfinite(value):
        raise InvalidInputError(_THRESHOLD_MESSAGE.format(repr(item)))
    return key.strip(), value
