"""Labeler shift: how much a detector's reported quality depends on who labelled the data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap, ranking_ci
from realitycheck.metrics import correlation_pvalue, pearson
from realitycheck.params import NonEmptyStr, SequenceOf, as_tuple, param
from realitycheck.plots import new_figure, png_bytes
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import Study, automatic_labelers, fmt, quiet, study

__all__ = ["LabelerShift", "relative_change"]

_METRICS = ("auroc", "pr_auc")
_MARKERS = "osD^vP*Xph"


def relative_change(value: float, reference: float) -> float:
    """Δ% = (value − reference) / reference × 100; NaN when the reference is 0 or NaN."""
    if not np.isfinite(reference) or reference == 0 or not np.isfinite(value):
        return float("nan")
    return (value - reference) / reference * 100.0


@study("labeler_shift")
@dataclass(frozen=True, kw_only=True)
class LabelerShift(Study):
    """Every detector's AUROC and PR-AUC under each labeler, side by side.

    Follows Janiak et al. (*The Illusion of Progress*, Table 2): a detector is
    measured once against the reference labels (human by default) and once
    against each other labeler of the same dataset, and the relative change

        Δ% = (metric under the other labeler − metric under the reference)
             / metric under the reference × 100

    is reported; Δ% > 0 means the other labeler *overstates* the detector.
    Each value is computed on the items where that labeler's verdict and the
    detector's score both exist (``n`` says how many), with a percentile
    bootstrap CI over responses. AUROC lies in [0, 1] (0.5 = chance); PR-AUC in
    [0, 1] (chance = the share of hallucinated items, given as
    ``positive_rate``). For each other labeler the Pearson correlation of
    detector AUROCs (and PR-AUCs) under it and under the reference is taken
    across all (detector, dataset) pairs; it is NaN, with a note, below three
    pairs. The intervals use the run's bootstrap settings.

    Args:
        reference: The labeler taken as ground truth.
        labelers: Labelers to compare with the reference; empty = every
            automatic labeler of each dataset (not single annotators).
    """

    labelers: tuple[str, ...] = param((), SequenceOf(NonEmptyStr()), convert=as_tuple)
    title: ClassVar[str] = "Labeler shift: detector metrics under each labeler"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Measure every detector under every labeler of every dataset."""
        frames, skipped = [], []
        for dataset in data.datasets:
            have = data.labelers_of(dataset)
            if self.reference not in have:
                skipped.append(f"{dataset}: no {self.reference!r} labels")
                continue
            wanted = self.labelers or tuple(automatic_labelers(have, self.reference))
            others = [k for k in wanted if k in have and k != self.reference]
            if not others:
                what = "none of " + ", ".join(self.labelers) if self.labelers else "no"
                skipped.append(f"{dataset}: {what} automatic labeler to compare with")
                continue
            detectors = data.detectors_of(dataset)
            if not detectors:
                skipped.append(f"{dataset}: no detector scores")
                continue
            frames.append(self._dataset_rows(data, dataset, others, detectors, bootstrap))
        shift = pd.concat(frames, ignore_index=True) if frames else _empty_shift()
        correlation = _correlations(shift, self.reference)
        tables = [
            StudyTable(
                "shift",
                shift,
                f"Each detector's AUROC and PR-AUC under the reference labels ({self.reference}) "
                "and under each other labeler, with "
                f"{bootstrap.confidence:.0%} bootstrap CIs ({bootstrap.n_resamples} resamples, "
                f"seed {bootstrap.seed}) and delta_pct = (value - reference_value) / "
                "reference_value x 100; "
                "positive = the other labeler overstates the detector. PR-AUC's chance level is "
                "the positive rate, which differs between labelers (see positive_rate).",
            ),
            StudyTable(
                "correlation",
                correlation,
                f"Pearson correlation, across detectors and datasets, of the metric under "
                f"{self.reference} and under each other labeler (n = pairs; p two-sided).",
            ),
        ]
        figures = [] if shift.empty else [_scatter(shift, self.reference)]
        return self._result(
            _finding(shift, correlation, self.reference),
            tables=tables,
            figures=figures,
            skipped=skipped,
        )

    def _dataset_rows(
        self,
        data: RunData,
        dataset: str,
        others: list[str],
        detectors: list[str],
        bootstrap: Bootstrap,
    ) -> pd.DataFrame:
        verdicts = data.verdicts(dataset)
        scores = data.detector_scores(dataset)[detectors]
        measured = {}
        for labeler in [self.reference, *others]:
            table = ranking_ci(verdicts[labeler], scores, _METRICS, bootstrap)
            table["positive_rate"] = table["n_positive"] / table["n"].where(table["n"] > 0)
            measured[labeler] = table.set_index(["name", "metric"])
        ref = measured[self.reference].add_prefix("reference_")
        rows = []
        for labeler in others:
            joined = ref.join(measured[labeler]).reset_index()
            joined.insert(0, "labeler", labeler)
            rows.append(joined)
        out = pd.concat(rows, ignore_index=True).rename(columns={"name": "detector"})
        out.insert(0, "dataset", dataset)
        out.insert(3, "reference", self.reference)
        out["delta_pct"] = [
            relative_change(v, r) for v, r in zip(out["value"], out["reference_value"], strict=True)
        ]
        return out[_SHIFT_COLUMNS]


_SHIFT_COLUMNS = [
    "dataset",
    "detector",
    "metric",
    "reference",
    "reference_value",
    "reference_ci_low",
    "reference_ci_high",
    "reference_n",
    "reference_positive_rate",
    "labeler",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "positive_rate",
    "delta_pct",
]


def _empty_shift() -> pd.DataFrame:
    return pd.DataFrame(columns=_SHIFT_COLUMNS)


def _correlations(shift: pd.DataFrame, reference: str) -> pd.DataFrame:
    rows = []
    for (labeler, metric), group in shift.groupby(["labeler", "metric"], sort=True):
        ok = group[np.isfinite(group["value"].astype(float))]
        ok = ok[np.isfinite(ok["reference_value"].astype(float))]
        n = len(ok)
        note = ""
        if n < 3:
            r = float("nan")
            note = f"only {n} (detector, dataset) pairs; 3 are needed"
        else:
            with quiet():
                r = pearson(ok["reference_value"].astype(float), ok["value"].astype(float))
            if not np.isfinite(r):
                note = "undefined: the metric is constant under one of the two labelers"
        rows.append(
            {
                "reference": reference,
                "labeler": labeler,
                "metric": metric,
                "pearson_r": r,
                "p_value": correlation_pvalue(r, n),
                "n": n,
                "datasets": ", ".join(sorted(ok["dataset"].unique())),
                "note": note,
            }
        )
    columns = ["reference", "labeler", "metric", "pearson_r", "p_value", "n", "datasets", "note"]
    return pd.DataFrame(rows, columns=columns)


def _scatter(shift: pd.DataFrame, reference: str) -> StudyFigure:
    auroc = shift[shift["metric"] == "auroc"]
    fig, ax = new_figure(6.5, 5.5)
    labelers = sorted(auroc["labeler"].unique())
    datasets = sorted(auroc["dataset"].unique())
    colors = {lab: f"C{k % 10}" for k, lab in enumerate(labelers)}
    markers = {ds: _MARKERS[k % len(_MARKERS)] for k, ds in enumerate(datasets)}
    for (labeler, dataset), group in auroc.groupby(["labeler", "dataset"], sort=True):
        ax.scatter(
            group["reference_value"].astype(float),
            group["value"].astype(float),
            color=colors[labeler],
            marker=markers[dataset],
            label=f"{labeler} / {dataset}",
            alpha=0.8,
        )
    values = pd.concat([auroc["reference_value"], auroc["value"]]).astype(float)
    values = values[np.isfinite(values)]
    low = min(0.4, float(values.min())) if len(values) else 0.0
    high = max(1.0, float(values.max())) if len(values) else 1.0
    ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel(f"AUROC under {reference}")
    ax.set_ylabel("AUROC under the other labeler")
    ax.set_title("Detector AUROC: reference labels vs each labeler")
    ax.legend(fontsize=7, loc="best", title="labeler / dataset", title_fontsize=7)
    return StudyFigure(
        "auroc-scatter",
        png_bytes(fig),
        f"One marker per detector and dataset: AUROC under {reference} (x) and under another "
        "labeler (y). Points above the diagonal are overstated by that labeler.",
    )


def _finding(shift: pd.DataFrame, correlation: pd.DataFrame, reference: str) -> str:
    auroc = shift[(shift["metric"] == "auroc")].copy()
    auroc["delta_pct"] = auroc["delta_pct"].astype(float)
    auroc = auroc[np.isfinite(auroc["delta_pct"])]
    if auroc.empty:
        return (
            f"No dataset has {reference} labels, another labeler and a detector with a defined "
            "AUROC under both, so no shift could be measured."
        )
    sentences = []
    top = auroc.loc[auroc["delta_pct"].idxmax()]
    low = auroc.loc[auroc["delta_pct"].idxmin()]
    if top["delta_pct"] > 0:
        sentences.append(
            f"Under {top['labeler']} the detectors' AUROC is up to {top['delta_pct']:+.1f}% "
            f"higher than under {reference} labels ({top['detector']} on {top['dataset']}: "
            f"{fmt(top['value'])} vs {fmt(top['reference_value'])})."
        )
    else:
        sentences.append(f"No labeler rates any detector higher than {reference} labels do.")
    if low["delta_pct"] < 0:
        sentences.append(
            f"The largest understatement is {low['delta_pct']:+.1f}% ({low['detector']} on "
            f"{low['dataset']} under {low['labeler']}: {fmt(low['value'])} vs "
            f"{fmt(low['reference_value'])})."
        )
    over = auroc.groupby("labeler")["delta_pct"].apply(lambda d: float((d > 0).mean()))
    worst = over.idxmax()
    sentences.append(
        f"{worst} overstates {over[worst]:.0%} of the {int((auroc['labeler'] == worst).sum())} "
        f"detector-dataset pairs it labels."
    )
    corr = correlation[(correlation["metric"] == "auroc")]
    defined = corr[np.isfinite(corr["pearson_r"].astype(float))]
    if not defined.empty:
        parts = [f"{r.labeler} r = {r.pearson_r:.2f} (n = {r.n})" for r in defined.itertuples()]
        sentences.append(
            f"Across detectors and datasets, AUROC under {reference} and under each labeler "
            f"correlate at {'; '.join(parts)}."
        )
    too_few = corr[corr["n"] < 3]
    if not too_few.empty:
        sentences.append(
            "Too few detector-dataset pairs for a correlation under "
            + ", ".join(f"{r.labeler} ({r.n})" for r in too_few.itertuples())
            + "."
        )
    return " ".join(sentences[:5])
