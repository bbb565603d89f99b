"""The agreement of imported annotators, stored as a study result the report shows.

It is kept in ``RUN/studies/annotation/`` (``result.json`` and one CSV per
table), the layout of every study result, so ``realitycheck report`` shows it
among the studies: the annotators (Dawid–Skene reliability, dropped or not),
the agreement measures and the pairwise Cohen's kappas. A run on object
storage keeps no study results; the import then stores none (the tables are
printed all the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from realitycheck.annotation._agreement import Agreement
from realitycheck.annotation._sources import FileRead
from realitycheck.records.keys import HUMAN
from realitycheck.store import RunStore, StudyResult, StudyTable, save_result

__all__ = ["RESULT_KEY", "ImportReport", "finding", "save_agreement"]

RESULT_KEY = "annotation"
"""The study-result key of the imported annotators' agreement."""


@dataclass
class ImportReport:
    """What an import did.

    Attributes:
        files: Each file read.
        added: Labels that were not stored before.
        changed: Stored labels replaced by a different one.
        unchanged: Labels already stored as they are.
        foreign: Annotations left out as not items of this run (``skip_unknown``).
        annotators: Every imported annotator of the run, sorted.
        dropped: Annotators left out of the aggregate, least reliable first.
        into: The aggregate's key.
        counts: The aggregate's verdicts: hallucinated, faithful, no verdict.
        agreement: The agreement tables.
        result_dir: Where the agreement was stored as a study result (None on object storage).
        notes: Lines worth printing.
    """

    files: list[FileRead]
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    foreign: int = 0
    annotators: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    into: str = HUMAN
    counts: dict[str, int] = field(default_factory=dict)
    agreement: Agreement | None = None
    result_dir: Path | None = None
    notes: list[str] = field(default_factory=list)


def finding(report: ImportReport, n_items: int) -> str:
    """Return the agreement and the aggregate in a few sentences."""
    ag = report.agreement
    names = report.annotators
    text = f"{n_items} items labelled by {len(names)} annotators ({', '.join(names)})."
    if ag is not None:
        for _, row in ag.measures.iterrows():
            if row["measure"] == "krippendorff_alpha":
                text += (
                    f" Krippendorff's alpha {row['value']:.2f} on the {row['n_items']} items "
                    "with two verdicts or more."
                )
            if row["measure"] == "mean_pairwise_cohen_kappa" and np.isfinite(row["value"]):
                text += f" Mean pairwise Cohen's kappa {row['value']:.2f} ({row['scope']})."
        reliability = ag.annotators["ds_reliability"].to_numpy(dtype=float)
        if np.isfinite(reliability).any():
            worst = int(np.nanargmin(reliability))
            row = ag.annotators.iloc[worst]
            text += (
                f" Dawid-Skene rates {row['annotator']} least reliable (sensitivity "
                f"{row['ds_sensitivity']:.2f}, specificity {row['ds_specificity']:.2f})."
            )
    if report.dropped:
        text += f" Left out of the aggregate: {', '.join(report.dropped)}."
    c = report.counts
    text += (
        f" {report.into}: {c.get('hallucinated', 0)} hallucinated, {c.get('faithful', 0)} "
        f"faithful, {c.get('no verdict', 0)} without a verdict."
    )
    return text


def save_agreement(
    store: RunStore, report: ImportReport, *, aggregate: str, n_items: int
) -> Path | None:
    """Store the agreement tables in the run as the study result ``annotation``.

    Returns its folder, or None for a run on object storage (nothing stored).
    """
    ag = report.agreement
    if ag is None or store.remote is not None:
        return None
    result = StudyResult(
        study=RESULT_KEY,
        spec={"name": RESULT_KEY, "params": {"aggregate": aggregate, "into": report.into}},
        finding=finding(report, n_items),
        tables=(
            StudyTable(
                "annotators",
                ag.annotators,
                "Each imported annotator: items labelled, share hallucinated, Dawid-Skene "
                "sensitivity, specificity and reliability ((sens + spec) / 2, in [0, 1]), "
                "and whether it was left out of the aggregate.",
            ),
            StudyTable(
                "agreement",
                ag.measures,
                "Inter-annotator agreement in [-1, 1]: Krippendorff's alpha, Fleiss' kappa "
                "per number of verdicts, mean pairwise Cohen's kappa.",
            ),
            StudyTable(
                "pairwise",
                ag.pairwise,
                "Cohen's kappa and raw agreement of each pair of annotators on the items "
                "both labelled.",
            ),
        ),
        skipped=tuple(ag.notes),
    )
    return save_result(store, result)
