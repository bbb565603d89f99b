"""Label noise: detector metrics and rankings under noisy test labels; rater reliability.

Parts: ``_simulation`` (noisy label sets and measurement under them),
``_signals`` (the detectors and labelers ranked, and the labelers left out),
``_raters`` (the rater tables), ``_report`` (tables, figures, finding). The
noisy label sets are public here, for the ``train_noise`` study, which puts
the same noise into training labels: :func:`random_flips`,
:func:`dissenting_label_proposal` and :func:`apply_proposal`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap, choose_or_fix_threshold, split_of
from realitycheck.metrics import auroc_many
from realitycheck.params import InstanceOf, Interval, SequenceOf, as_tuple, param
from realitycheck.records.keys import is_human
from realitycheck.store import RunData, StudyFigure, StudyResult
from realitycheck.studies import Study, study
from realitycheck.studies.label_noise import _simulation as N
from realitycheck.studies.label_noise._raters import RaterTables, rater_tables
from realitycheck.studies.label_noise._report import (
    Condition,
    curve_figure,
    effect_rows,
    finding,
    rank_figure,
    ranking_row,
    tables,
)
from realitycheck.studies.label_noise._signals import Signals
from realitycheck.studies.label_noise._simulation import (
    Noisy,
    apply_proposal,
    dissenting_label_proposal,
    random_flips,
)

__all__ = ["LabelNoise", "Noisy", "apply_proposal", "dissenting_label_proposal", "random_flips"]

_RATE = Interval(float, 0, 1)


@study("label_noise")
@dataclass(frozen=True, kw_only=True)
class LabelNoise(Study):
    """Detectors and labelers ranked under simulated test-label noise, and rater reliability.

    Follows the noisy-label design of paper 002 ("Rethinking Evaluation for LLM
    Hallucination Detection", Trivia++): the reference labels of each dataset
    are replaced by (a) **random flips** of exactly ``rate`` of the labelled
    responses (mean over ``repetitions`` seeded draws); (b) a **dissenting
    worker**: one annotator's verdicts wherever that annotator gave one, each
    annotator in turn; (c) a **dissenting label**: where annotators disagree,
    the minority verdict (on a tie, the verdict opposite to the reference);
    (b) and (c) are capped at ``rate`` of the labelled responses (a random
    subset of the changes), as the paper controls them at 15%; (d) **weak
    supervision**: every automatic labeler's verdicts wherever it has one.
    Detectors are not weak labels by default: a detector's own verdicts, or a
    close variant's (``length`` for ``length[unit=tokens]``), as test labels
    make the other detectors look better or worse for a circular reason. With
    ``weak_detectors=true`` each detector's verdicts at its threshold (0.5 for
    binary detectors, else the one maximising F1-macro against the reference
    on the calibration split) are added as well, marked ``source_kind =
    detector``, and the finding still reports labelers only.

    What is ranked: every detector (by its value) and, as paper 002 ranks LLM
    judges next to detectors, every labeler — LLM judges, lexical and
    semantic labelers, panels, a dataset's recorded judges, other annotators
    — by its continuous ``score`` where it has one, else by its verdict as a
    0/1 score (``score_used`` says which; ``signal_kind`` says detector or
    labeler). The reference itself and labelers derived from it are not
    ranked against it and are listed under ``skipped``: against a human
    aggregate (``human``), every other human key (its annotators
    ``human:<name>`` and other protocols over them); against one annotator,
    the aggregates that count that annotator's vote; against any human
    reference, a judge shown the annotation of the response it judges
    (``include_self``); against a component such as ``rouge_l``, the same
    component with other parameters and panels holding it as a member.

    For each noisy set, every signal's AUROC and PR-AUC (in [0, 1], higher =
    better; bootstrap CIs over responses) and balanced accuracy (threshold
    chosen on the calibration split with the same labels, measured on the test
    split; 0.5 for a 0/1 score) are compared with the clean values (change =
    noisy - clean), and the AUROC ranking of detectors and labelers together
    with the clean one: Kendall's tau-b in [-1, 1] and the pairs whose order
    reverses (a noise source is left out of its own ranking: a labeler scored
    against its own verdicts is perfect for a circular reason). AUROC-vs-rate
    curves average ``repetitions`` random flips per rate; a rank figure per
    dataset shows every signal's AUROC rank under each label set.

    Datasets with at least two annotators (``human:<name>``) also get their
    raters aggregated by majority vote (ties undecided) and by Dawid–Skene
    (crowd-kit), each annotator's reliability (Dawid–Skene sensitivity and
    specificity, accuracy against the majority of the *other* annotators), and
    inter-annotator agreement (pairwise Cohen's kappa, Fleiss' kappa per number
    of ratings, Krippendorff's alpha, all in [-1, 1]). A missing verdict of an
    annotator (FaithBench: a Benign or Questionable label under the majority
    protocol) counts as missing. Without annotators, two or more automatic
    labelers are aggregated the same way.

    The bootstrap intervals use the run's bootstrap settings, and its seed also
    seeds the noise draws (one seed reproduces the whole run).

    Args:
        reference: The clean labels.
        rate: Noise level of random flips and cap of the human-noise sets, in [0, 1].
        rates: Noise levels of the random-flip curves, each in [0, 1].
        repetitions: Seeded random-flip draws per rate (>= 1).
        weak_detectors: Also use detectors' verdicts as weak supervision (off:
            circular; see above).
    """

    rate: float = param(0.15, _RATE)
    rates: tuple[float, ...] = param(
        (0.0, 0.05, 0.1, 0.15, 0.2, 0.3), SequenceOf(_RATE, min_length=1), convert=as_tuple
    )
    repetitions: int = param(5, Interval(int, 1))
    weak_detectors: bool = param(False, InstanceOf(bool))

    title: ClassVar[str] = "Label noise: detectors under noisy test labels, rater reliability"

    def _rng(self, seed: int, dataset: str, *parts: int) -> np.random.Generator:
        return np.random.default_rng([seed, zlib.crc32(dataset.encode("utf-8")), *parts])

    def _flips(self, seed: int, dataset: str, y: np.ndarray, rate: float) -> np.ndarray:
        draw_seed = int(self._rng(seed, dataset, int(round(rate * 1e6))).integers(2**32))
        return N.random_flips(y, rate, self.repetitions, draw_seed)

    def _conditions(
        self,
        data: RunData,
        ds: str,
        y: np.ndarray,
        test: np.ndarray,
        detectors: dict[str, np.ndarray],
        seed: int,
    ) -> Iterator[Condition]:
        yield Condition("clean", "", "", y[None, :], 0.0, 0.0)
        flips = self._flips(seed, ds, y, self.rate)
        labelled = ~np.isnan(y)
        achieved = float((flips[0] != y)[labelled].mean()) if labelled.any() else np.nan
        yield Condition("random_flip", "", "", flips, self.rate, achieved)
        verdicts = data.verdicts(ds)
        annotators = data.annotators_of(ds)
        proposals: list[tuple[str, str, str, np.ndarray, float | None]] = []
        if annotators:
            ratings = verdicts[annotators].to_numpy()
            if len(annotators) >= 2:
                minority = N.dissenting_label_proposal(y, ratings)
                proposals.append(("dissenting_label", "", "", minority, self.rate))
            proposals += [
                ("dissenting_worker", a, "annotator", ratings[:, i], self.rate)
                for i, a in enumerate(annotators)
            ]
        proposals += [
            ("weak_supervision", k, "labeler", verdicts[k].to_numpy(), None)
            for k in data.labelers_of(ds)
            if not is_human(k)
        ]
        if self.weak_detectors:
            for key, s in detectors.items():
                ok = ~np.isnan(y) & ~np.isnan(s) & ~test
                threshold, _ = choose_or_fix_threshold(y[ok], s[ok], N.OBJECTIVE)
                if not np.isnan(threshold):
                    verdict = np.where(np.isnan(s), np.nan, (s >= threshold).astype(float))
                    proposals.append(("weak_supervision", key, "detector", verdict, None))
        for k, (name, source, kind, proposal, cap) in enumerate(proposals):
            cap_seed = int(self._rng(seed, ds, 7, k).integers(2**32))
            noisy = N.apply_proposal(y, proposal, cap=cap, seed=cap_seed)
            yield Condition(
                name, source, kind, noisy.labels[None, :], noisy.natural_rate, noisy.rate
            )

    def _measure(
        self, cond: Condition, scores: dict[str, np.ndarray], test: np.ndarray, boot: Bootstrap
    ) -> pd.DataFrame:
        if cond.draws.shape[0] == 1:
            frame = pd.DataFrame(N.measure_condition(cond.draws[0], scores, test, boot)).T
            return frame.assign(interval="bootstrap over responses")
        per_draw = [pd.DataFrame(N.measure_condition(d, scores, test, None)).T for d in cond.draws]
        stacked = pd.concat(per_draw, keys=range(len(per_draw)), names=["draw", "signal"])
        grouped = stacked.astype(float).groupby(level="signal", sort=False)
        frame = grouped.mean()
        for metric in ("auroc", "pr_auc"):
            frame[f"{metric}_ci_low"] = grouped[metric].quantile(0.025)
            frame[f"{metric}_ci_high"] = grouped[metric].quantile(0.975)
        # Each draw has its own threshold; their mean would describe no classifier.
        frame["threshold"] = np.nan
        return frame.assign(interval=f"2.5-97.5% over {len(per_draw)} seeded draws")

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Run the noise simulations, the curves and the rater analyses on every dataset."""
        effect: list[pd.DataFrame] = []
        ranking: list[dict[str, Any]] = []
        curves: list[pd.DataFrame] = []
        figures: list[StudyFigure] = []
        skipped: list[str] = []
        raters = RaterTables()
        for ds in data.datasets:
            ref = data.human_reference(ds, self.reference)
            if ref is None:
                skipped.append(f"{ds}: no {self.reference!r} labels")
                continue
            y = data.verdicts(ds)[ref].to_numpy()
            self._raters(data, ds, y, ref, raters, skipped)
            signals = Signals.of(data, ds, ref)
            if set(signals.excluded) - {ref}:  # the reference alone goes without saying
                by_reason: dict[str, list[str]] = {}
                for key, why in signals.excluded.items():
                    by_reason.setdefault(why, []).append(key)
                skipped.append(
                    f"{ds}: not ranked against {ref} (the reference or derived from it): "
                    + "; ".join(f"{', '.join(keys)} ({why})" for why, keys in by_reason.items())
                )
            if not signals.values:
                skipped.append(f"{ds}: noise simulations (no detector scores or labelers to rank)")
                continue
            scores = signals.values
            test = split_of(data.example_ids(ds).tolist()) == "test"
            clean: pd.DataFrame | None = None
            first = len(effect)
            for cond in self._conditions(data, ds, y, test, signals.detectors, bootstrap.seed):
                measured = self._measure(cond, scores, test, bootstrap)
                clean = measured if clean is None else clean
                effect.append(effect_rows(ds, cond, measured, clean, signals))
                if cond.condition != "clean":
                    ranking.append(ranking_row(ds, cond, measured, clean, signals.kind))
            curve = self._curve(ds, y, signals, bootstrap.seed)
            curves.append(curve)
            figures.append(curve_figure(ds, curve, self.rate))
            ranks = rank_figure(ds, pd.concat(effect[first:], ignore_index=True))
            if ranks is not None:
                figures.append(ranks)
        made = tables(effect, ranking, curves, raters)
        return self._result(
            finding(ranking, raters, self.rate), tables=made, figures=figures, skipped=skipped
        )

    def _raters(
        self, data: RunData, ds: str, y: np.ndarray, ref: str, out: RaterTables, skipped: list[str]
    ) -> None:
        annotators = data.annotators_of(ds)
        autos = [k for k in data.labelers_of(ds) if not is_human(k)]
        if len(annotators) >= 2:
            kind, names = "annotators", annotators
        elif len(autos) >= 2:
            kind, names = "automatic labelers", autos
            skipped.append(
                f"{ds}: dissenting worker / dissenting label (no per-annotator labels; its "
                f"{len(autos)} automatic labelers are aggregated as raters instead)"
            )
        else:
            what = "dissenting label" if annotators else "dissenting worker / dissenting label"
            skipped.append(
                f"{ds}: {what}, rater aggregation and agreement "
                "(fewer than two annotators or automatic labelers)"
            )
            return
        rater_tables(out, ds, kind, names, data.verdicts(ds)[names].to_numpy(), y, ref)

    def _curve(self, ds: str, y: np.ndarray, signals: Signals, seed: int) -> pd.DataFrame:
        draws = np.vstack([self._flips(seed, ds, y, r) for r in self.rates])
        rows = []
        for d, s in signals.values.items():
            ok = ~np.isnan(y) & ~np.isnan(s)
            values = auroc_many(draws[:, ok], s[ok][None, :])[:, 0].reshape(len(self.rates), -1)
            for rate, row in zip(self.rates, values, strict=True):
                rows.append(
                    {
                        "dataset": ds,
                        "rate": rate,
                        "signal": d,
                        "signal_kind": signals.kind[d],
                        "auroc_mean": np.nanmean(row) if np.isfinite(row).any() else np.nan,
                        "auroc_sd": np.nanstd(row) if np.isfinite(row).any() else np.nan,
                        "auroc_low": np.nanquantile(row, 0.025)
                        if np.isfinite(row).any()
                        else np.nan,
                        "auroc_high": np.nanquantile(row, 0.975)
                        if np.isfinite(row).any()
                        else np.nan,
                        "repetitions": row.size,
                        "n": int(ok.sum()),
                    }
                )
        return pd.DataFrame(rows)
