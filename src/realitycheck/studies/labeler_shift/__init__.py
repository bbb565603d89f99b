"""Labeler shift: how much a detector's reported quality depends on who labelled the data.

Parts: ``_paired`` (both AUROCs on the same responses per model and prompt
variant, Δ% with a paired bootstrap, and the paper's wide layout) and
``_report`` (correlation table, scatter figure, finding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from realitycheck.analysis import Bootstrap, ranking_ci
from realitycheck.params import NonEmptyStr, SequenceOf, as_tuple, param
from realitycheck.store import RunData, StudyResult, StudyTable
from realitycheck.studies import Study, automatic_labelers, study
from realitycheck.studies.labeler_shift._paired import (
    PAIRED_COLUMNS,
    paired_rows,
    paper_layout,
    relative_change,
)
from realitycheck.studies.labeler_shift._report import correlations, finding, scatter

__all__ = ["LabelerShift", "relative_change"]

_METRICS = ("auroc", "pr_auc")


@study("labeler_shift")
@dataclass(frozen=True, kw_only=True)
class LabelerShift(Study):
    """Every detector's AUROC and PR-AUC under each labeler, side by side.

    After Janiak et al. (*The Illusion of Progress*, paper 000, Tables 2-3),
    which compare each detector's AUROC under ROUGE labels and under an LLM
    judge, per model and for few-shot vs zero-shot prompts.

    * **shift** — every detector measured once against the reference labels
      (human by default) and once against each other labeler of the same
      dataset, each on the items where that labeler's verdict and the
      detector's score exist (``n``), with the relative change

          delta_pct = (metric under the labeler − metric under the reference)
                      / metric under the reference × 100

      (> 0: the labeler *overstates* the detector). AUROC lies in [0, 1] (0.5
      = chance); PR-AUC in [0, 1] (chance = the share of hallucinated items,
      ``positive_rate``).
    * **correlation** — for each other labeler, the Pearson correlation of
      detector AUROCs (and PR-AUCs) under it and under the reference across
      all (detector, dataset) pairs; NaN, with a note, below three pairs.
    * **paired** — the paper's comparison: AUROC under the labeler (the
      paper's ROUGE) and under the reference (its LLM judge) on the *same*
      responses, per model and prompt variant (and pooled over them, ``all``,
      where there are two or more), and the paper's
      ``Δ% = (reference AUROC − labeler AUROC) / labeler AUROC × 100``
      (``delta_ref_pct``; < 0: the labeler overstates the detector, as ROUGE
      does in the paper). The bootstrap is paired: both AUROCs and Δ% are
      read off the same resamples of the responses.
    * **paired_wide** — the same laid out as the paper's tables: one row per
      model and detector, one group of columns (labeler AUROC, reference
      AUROC, Δ%, n) per prompt variant. "all" pools responses; it is not the
      paper's mean over datasets.

    Every interval is a percentile bootstrap over responses with the run's
    bootstrap settings.

    Args:
        reference: The labeler taken as ground truth (the paper's LLM judge).
        labelers: Labelers to compare with the reference (the paper's ROUGE);
            empty = every automatic labeler of each dataset (not single
            annotators).
    """

    labelers: tuple[str, ...] = param((), SequenceOf(NonEmptyStr()), convert=as_tuple)
    title: ClassVar[str] = "Labeler shift: detector metrics under each labeler"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Measure every detector under every labeler of every dataset."""
        frames, paired, skipped = [], [], []
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
            paired += self._paired_rows(data, dataset, others, detectors, bootstrap)
        shift = pd.concat(frames, ignore_index=True) if frames else _empty_shift()
        correlation = correlations(shift, self.reference)
        by_slice = pd.DataFrame(paired, columns=PAIRED_COLUMNS)
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
            StudyTable("paired", by_slice, _paired_caption(self.reference, bootstrap)),
            StudyTable(
                "paired_wide",
                paper_layout(by_slice),
                "The paired table laid out as Janiak et al.'s Tables 2-3: one row per model and "
                "detector, one group of columns per prompt variant: labeler AUROC, reference "
                f"AUROC (under {self.reference}), Δ% = (reference - labeler) / labeler x 100 "
                "(negative = the labeler overstates the detector) and n; all = responses pooled.",
            ),
        ]
        figures = [] if shift.empty else [scatter(shift, self.reference)]
        return self._result(
            finding(shift, correlation, by_slice, self.reference),
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

    def _paired_rows(
        self,
        data: RunData,
        dataset: str,
        others: list[str],
        detectors: list[str],
        bootstrap: Bootstrap,
    ) -> list[dict[str, object]]:
        verdicts = data.verdicts(dataset)
        scores = data.detector_scores(dataset)[detectors]
        responses = data.frame(dataset)
        rows = []
        for labeler in others:
            head = {"dataset": dataset, "labeler": labeler, "reference": self.reference}
            measured = paired_rows(
                responses, verdicts[labeler], verdicts[self.reference], scores, bootstrap
            )
            rows += [{**head, **row} for row in measured]
        return rows


def _paired_caption(reference: str, bootstrap: Bootstrap) -> str:
    return (
        f"Each detector's AUROC under each labeler and under {reference} on the same responses "
        "(those with both verdicts and the detector's score), per model and prompt variant "
        "(all = pooled, where there are two or more), and Janiak et al.'s delta_ref_pct = "
        "(reference_auroc - labeler_auroc) / labeler_auroc x 100 (their Delta% = (LLM - "
        "ROUGE) / ROUGE); negative = the labeler overstates the detector. "
        f"{bootstrap.confidence:.0%} paired bootstrap CIs ({bootstrap.n_resamples} resamples, "
        f"seed {bootstrap.seed}): both AUROCs and delta_ref_pct on the same resamples."
    )


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
