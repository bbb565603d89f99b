"""The result sections: detector metrics, ROC/PR curves and labeler agreement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from realitycheck.analysis import AGREEMENT_METRICS, CALIBRATION_METRICS, SCORE_METRICS
from realitycheck.records.keys import LabelKey
from realitycheck.report._baseline import is_baseline
from realitycheck.report._calibration import calibration_table, selective_figures
from realitycheck.report._cells import (
    BASE_RATE_NOTE,
    Footnotes,
    Index,
    MetricRow,
    cell,
    index_rows,
    legend,
    metric_cells,
    metric_columns,
)
from realitycheck.report._data import DatasetScores, ReportData, dataset_scores, shown_key
from realitycheck.report._document import (
    Block,
    Bullets,
    Fold,
    FoldEnd,
    Heading,
    Link,
    Paragraph,
    Table,
    fmt_ci,
    fmt_count,
    is_missing,
)
from realitycheck.report._figures import (
    PANEL_NAME,
    SHOWN,
    Curve,
    curves,
    figure_name,
    pick,
    render_pr,
    render_roc,
)

__all__ = [
    "agreement_section",
    "curves_section",
    "detector_order",
    "drawn_summary",
    "metrics_section",
]

RANKING = SCORE_METRICS
"""The metrics of a score on every response (AUROC, PR-AUC, PRR), columns of the main table."""
THRESHOLDED = (
    "balanced_accuracy",
    "f1_macro",
    "f1",
    "precision",
    "recall",
    "accuracy",
    "cohen_kappa",
    "f1_weighted",
)
AGREEMENT = (*AGREEMENT_METRICS, "auroc", "pr_auc")
CURVES_TITLE = "ROC, precision-recall, rejection and reliability curves"
BESIDE_DETECTORS = ("balanced_accuracy", "f1_macro", "cohen_kappa")
"""What a labeler's verdicts show beside the detectors' thresholded metrics."""
NAMES = {
    "auroc": "AUROC",
    "pr_auc": "PR-AUC",
    "prr": "PRR",
    "balanced_accuracy": "Bal. accuracy",
    "f1_macro": "F1-macro",
    "f1_weighted": "F1-weighted",
    "f1": "F1",
    "precision": "Precision",
    "recall": "Recall",
    "accuracy": "Accuracy",
    "cohen_kappa": "Cohen's kappa",
}


def _slices(df: pd.DataFrame) -> dict[str, list[str]]:
    """Group the slice names other than ``all`` by their prefix (``task``, ``model``…)."""
    groups: dict[str, list[str]] = {}
    for name in sorted(set(df["slice"]) - {"all"}):
        prefix = name.split("=", 1)[0] if "=" in name else "other"
        groups.setdefault(prefix, []).append(name)
    first = [p for p in ("task", "model") if p in groups]
    return {p: groups[p] for p in first + sorted(set(groups) - set(first))}


def _ordered(values: Sequence[str], first: str) -> list[str]:
    return ([first] if first in values else []) + sorted(v for v in values if v != first)


def detector_order(df: pd.DataFrame, reference: str) -> list[str]:
    """Return the detectors of a metric table, best AUROC against ``reference`` first."""
    auroc = df[(df["slice"] == "all") & (df["labeler"] == reference) & (df["metric"] == "auroc")]
    ranked = auroc.assign(v=auroc["value"].astype(float)).sort_values(
        ["v", "detector"], ascending=[False, True], na_position="last"
    )
    first = list(dict.fromkeys(ranked["detector"]))
    return first + sorted(set(df["detector"]) - set(first))


def _ranking_table(index: Index, dets: list[str], refs: list[str]) -> Table:
    notes = Footnotes()
    rows = []
    shown: list[tuple[str, str, str, str]] = []
    for det in dets:
        for ref in refs:
            found = [index.get(("all", det, ref, m)) for m in RANKING]
            base = next((r for r in found if r is not None), None)
            if base is None:
                continue
            shown.append(("all", det, ref, "auroc"))
            rows.append(
                (
                    det,
                    ref,
                    *metric_cells(RANKING, found),
                    fmt_count(base.n),
                    fmt_count(base.n_positive),
                    fmt_count(base.n_excluded),
                    notes.mark(base.note),
                )
            )
    names = metric_columns(RANKING, [NAMES[m] for m in RANKING])
    return notes.table(
        ("detector", "reference", *names, "n", "hallucinated", "excluded", "note"),
        rows,
        "ll" + "r" * len(names) + "rrrl",
        "All responses; value [CI]. Each detector against each reference labeler "
        "(the first row of a detector is the main reference). PRR: prediction-rejection "
        "ratio, 1 = rejecting by the score removes the hallucinated responses first, 0 = random. "
        + BASE_RATE_NOTE,
        legend(index, shown),
    )


def _threshold_table(index: Index, dets: list[str], reference: str, metrics: list[str]) -> Table:
    notes = Footnotes()
    rows = []
    for det in dets:
        found = [index.get(("all", det, reference, m)) for m in metrics]
        base = next((r for r in found if r is not None), None)
        if base is None:
            continue
        cells = [fmt_ci(r.value, r.ci_low, r.ci_high) if r else "" for r in found]
        threshold = "n/a" if is_missing(base.threshold) else f"{float(base.threshold):.4g}"
        rows.append(
            (det, threshold, *cells)
            + (fmt_count(base.n), fmt_count(base.n_positive), notes.mark(base.note))
        )
    columns = ("detector", "threshold", *(NAMES.get(m, m) for m in metrics))
    return notes.table(
        columns + ("n", "hallucinated", "note"),
        rows,
        "lr" + "r" * len(metrics) + "rrl",
        f"Thresholded metrics against {reference} labels, test split, all responses.",
    )


def _agreement_index(agreement: pd.DataFrame) -> Index:
    """Key agreement rows as :func:`index_rows` keys metric rows: (slice, measured, truth, metric).

    The one measured is the agreement table's ``labeler``, its ground truth its ``reference``.
    """
    return index_rows(agreement.rename(columns={"labeler": "detector", "reference": "labeler"}))


def _labelers_beside(agreement: pd.DataFrame, reference: str) -> Table | None:
    """The labelers' verdicts against ``reference`` (balanced accuracy, F1-macro, kappa)."""
    df = agreement[agreement["reference"] == reference]
    if df.empty:
        return None
    index = _agreement_index(df)
    rows = []
    for lab in sorted(set(df["labeler"]), key=lambda x: (-_kappa_of(index, x, reference), x)):
        found = [index.get(("all", lab, reference, m)) for m in BESIDE_DETECTORS]
        base = next((r for r in found if r is not None), None)
        if base is None:
            continue
        rows.append(_labeler_row(lab, BESIDE_DETECTORS, found, base))
    if not rows:
        return None
    return _labeler_table(
        metric_columns(BESIDE_DETECTORS, [NAMES[m] for m in BESIDE_DETECTORS]),
        rows,
        f"Labelers (LLM judges, recorded judges, lexical…) against {reference} labels, "
        "beside the detectors: their own verdicts, all responses (no threshold to choose, "
        "so no calibration split); value [CI].",
    )


def _slice_table(
    index: Index, names: list[str], slices: list[str], reference: str, metric: str, what: str
) -> Table:
    """One metric per slice; the longer of the two lists (slices, names) runs down the rows."""
    largest: dict[str, MetricRow] = {}
    for (sl, _, lab, _), row in index.items():
        if lab == reference and sl in slices and (sl not in largest or row.n > largest[sl].n):
            largest[sl] = row
    sizes = [
        f"{fmt_count(largest[s].n)} ({fmt_count(largest[s].n_positive)})" if s in largest else ""
        for s in slices
    ]
    caption = f"{NAMES.get(metric, metric)} against {reference} labels per slice."
    lines = legend(index, [(s, n, reference, metric) for s in slices for n in names])
    if len(slices) > len(names):
        rows = tuple(
            (s, size, *(cell(index, (s, n, reference, metric)) for n in names))
            for s, size in zip(slices, sizes, strict=True)
        )
        return Table(
            columns=("slice", "n (hallucinated)", *names),
            rows=rows,
            align="lr" + "r" * len(names),
            caption=caption,
            footnotes=lines,
        )
    body = [("n (hallucinated)", *sizes)]
    body += [(n, *(cell(index, (s, n, reference, metric)) for s in slices)) for n in names]
    return Table(
        columns=(what, *slices),
        rows=tuple(body),
        align="l" + "r" * len(slices),
        caption=caption,
        footnotes=lines,
    )


def _shown_detectors(data: ReportData, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each detector named as the report shows it (:func:`shown_key`)."""
    names = {d: shown_key(data, str(d)) for d in df["detector"].unique()}
    return df.assign(detector=df["detector"].map(names))


def metrics_section(data: ReportData, reference: str) -> list[Block]:
    """Build the detector-metrics section: ranking, thresholded and per-slice tables.

    A detector scored on a proxy model's reading is named with the model
    (:func:`~realitycheck.report._data.shown_key`); ``metrics.csv`` keeps the raw key.
    """
    out: list[Block] = [Heading("Detector metrics", 2)]
    if data.metrics.empty:
        out.append(
            Paragraph("Not available: the run has no metrics table (run the evaluate stage).")
        )
        return out
    for ds in sorted(set(data.metrics["dataset"])):
        df = _shown_detectors(data, data.metrics[data.metrics["dataset"] == ds])
        index = index_rows(df)
        dets = detector_order(df, reference)
        refs = _ordered(sorted(set(df["labeler"])), reference)
        out.append(Heading(ds, 3))
        if reference not in refs:
            out.append(Paragraph(f"No metric against {reference} labels on this dataset."))
        out.append(_ranking_table(index, dets, refs))
        out.append(
            Fold(f"Thresholded metrics, calibration (ECE, Brier) and AUROC per slice on {ds}")
        )
        thresholded = [m for m in THRESHOLDED if m in set(df["metric"])]
        shown = {*RANKING, *THRESHOLDED, *CALIBRATION_METRICS}
        thresholded += sorted(set(df["metric"]) - shown)
        # The reference and every other human protocol (e.g. FaithBench's worst-label
        # aggregation) get their thresholded table; automatic labelers stay in metrics.csv.
        human_refs = [r for r in refs if r == reference or LabelKey.parse(r).protocol is not None]
        verdicts = data.agreement[data.agreement["dataset"] == ds]
        if reference in refs and thresholded:
            for ref in human_refs:
                out.append(_threshold_table(index, dets, ref, thresholded))
                beside = _labelers_beside(verdicts, ref)
                if beside is not None:
                    out.append(beside)
            if len(refs) > len(human_refs):
                out.append(
                    Paragraph(
                        (
                            "Thresholded metrics against the automatic labelers: ",
                            Link("metrics.csv", "metrics.csv"),
                            ".",
                        )
                    )
                )
        calibration = calibration_table(index, dets, reference)
        if calibration is not None:
            out.append(calibration)
        for slices in _slices(df[df["labeler"] == reference]).values():
            out.append(_slice_table(index, dets, slices, reference, "auroc", "detector"))
        out.append(FoldEnd())
    return out


def curves_section(data: ReportData, reference: str) -> list[Block]:
    """Build the curves section: ROC, PR, rejection and reliability figures per dataset.

    All are drawn from the stored scores and labels, folded per dataset.
    """
    out: list[Block] = [Heading(CURVES_TITLE, 2)]
    if data.scores.empty:
        out.append(Paragraph("Not available: the run holds no detector scores."))
        return out
    if not (data.labels["labeler"] == reference).any():
        out.append(Paragraph(f"Not available: the run holds no {reference} labels."))
        return out
    scored = set(data.scores["response_id"])
    with_scores = data.responses["response_id"].isin(scored)
    names = sorted(set(data.responses.loc[with_scores, "dataset"].dropna()))
    for ds in names:
        order = detector_order(data.metrics[data.metrics["dataset"] == ds], reference)
        pivot = dataset_scores(data, ds, reference, order)  # once for every figure
        found, notes = curves(data, ds, reference, order, scored=pivot)
        out.append(Heading(ds, 3))
        if found:
            out.append(Fold(f"{CURVES_TITLE} on {ds}: {drawn_summary(found)}"))
            out.append(render_roc(found, ds, reference))
            out.append(render_pr(found, ds, reference, float(np.nanmean(pivot.y))))
            named = {figure_name(data, d, PANEL_NAME): v for d, v in pivot.scores.items()}
            out += selective_figures(
                data, ds, reference, list(named), scored=DatasetScores(pivot.rows, pivot.y, named)
            )
            out.append(FoldEnd())
        else:
            out.append(Paragraph(f"No curve: no detector has scores and {reference} labels here."))
        if notes:
            out.append(Bullets(tuple(notes)))
    return out


def drawn_summary(found: Sequence[Curve]) -> str:
    """What a dataset's curve figures draw (:func:`pick`'s detectors), for its fold's summary."""
    drawn, left = pick([c.detector for c in found], [c.auroc for c in found])
    if not left:
        return f"{len(drawn)} detectors"
    baseline = sum(is_baseline(found[i].detector) for i in drawn)
    if len(drawn) - baseline < SHOWN:  # only other length variants are left out
        which = "every detector but the other length variants"
    else:
        which = f"the {SHOWN} with the highest AUROC" + (
            " and the best length baseline" if baseline else ""
        )
    rest = "the other one is" if len(left) == 1 else f"the other {len(left)} are"
    return f"{len(drawn)} of {len(found)} detectors drawn ({which}); {rest} listed in the captions"


def _labeler_row(
    labeler: str, metrics: Sequence[str], found: Sequence[MetricRow | None], base: MetricRow
) -> tuple[str, ...]:
    """A labeler's row: each metric's value [CI] (n/a where absent), then ``base``'s item counts.

    A PR-AUC is followed by its own base rate (its items may be fewer than ``base``'s).
    """
    cells = metric_cells(metrics, found, missing="n/a")
    counts = (fmt_count(base.n), fmt_count(base.n_positive), fmt_count(base.n_excluded))
    return (labeler, *cells, *counts)


def _labeler_table(
    names: Sequence[str],
    rows: list[tuple[str, ...]],
    caption: str,
    footnotes: tuple[str, ...] = (),
) -> Table:
    """A table of :func:`_labeler_row` rows (metrics headed ``names``), saved as agreement.csv."""
    return Table(
        columns=("labeler", *names, "n", "hallucinated", "excluded"),
        rows=tuple(rows),
        align="l" + "r" * (len(names) + 3),
        csv="agreement.csv",
        caption=caption,
        footnotes=footnotes,
    )


def _agreement_table(index: Index, labelers: list[str], reference: str) -> Table:
    rows = []
    shown = []
    for lab in labelers:
        found = [index.get(("all", lab, reference, m)) for m in AGREEMENT]
        base = index.get(("all", lab, reference, "accuracy")) or next(
            (r for r in found if r is not None), None
        )
        if base is None:
            continue
        shown.append(("all", lab, reference, "auroc"))
        rows.append(_labeler_row(lab, AGREEMENT, found, base))
    names = [NAMES[m] if m != "accuracy" else "Agreement" for m in AGREEMENT]
    return _labeler_table(
        metric_columns(AGREEMENT, names),
        rows,
        f"Each automatic labeler against {reference} labels, all responses; "
        "value [CI]. Precision to kappa judge its verdicts; AUROC and PR-AUC its "
        "continuous score (n/a when it has none). n, hallucinated, excluded: verdict items. "
        + BASE_RATE_NOTE,
        legend(index, shown),
    )


def _kappa_of(index: Index, lab: str, reference: str) -> Any:
    row = index.get(("all", lab, reference, "cohen_kappa"))
    return float("-inf") if row is None or is_missing(row.value) else row.value


def agreement_section(data: ReportData, reference: str) -> list[Block]:
    """Build the labeler-agreement section: each labeler against each ground truth measured.

    The ground truths are the human keys, or the evaluate stage's reference.
    """
    title = "humans" if LabelKey.parse(reference).is_human else reference
    out: list[Block] = [Heading(f"Labeler agreement with {title}", 2)]
    if data.agreement.empty:
        out.append(
            Paragraph(
                f"Not available: the run has no agreement table (no other labeler "
                f"with {title} labels, or the evaluate stage has not run)."
            )
        )
        return out
    for ds in sorted(set(data.agreement["dataset"])):
        df = data.agreement[data.agreement["dataset"] == ds]
        index = _agreement_index(df)
        out.append(Heading(ds, 3))
        for ref in _ordered(sorted(set(df["reference"])), reference):
            found = set(df.loc[df["reference"] == ref, "labeler"])
            labs = [lab for _, lab in sorted((-_kappa_of(index, x, ref), x) for x in found)]
            out.append(_agreement_table(index, labs, ref))
            groups = list(_slices(df[df["reference"] == ref]).values())
            if groups:
                out.append(Fold(f"Cohen's kappa against {ref} per slice on {ds}"))
                for slices in groups:
                    out.append(_slice_table(index, labs, slices, ref, "cohen_kappa", "labeler"))
                out.append(FoldEnd())
    return out
