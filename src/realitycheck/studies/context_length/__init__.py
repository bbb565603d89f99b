"""Context length: detector and labeler quality per context-length stratum; benchmark statistics.

Parts: ``_report`` (gain table, figure, finding); the benchmark statistics
are :func:`realitycheck.studies.benchmark_audit.benchmark_stats`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import (
    OBJECTIVES,
    Bootstrap,
    Measure,
    Where,
    choose_or_fix_threshold,
    group_by_mask,
    split_of,
)
from realitycheck.params import Interval, OneOf, Satisfies, SequenceOf, as_tuple, param
from realitycheck.records import MetricResult
from realitycheck.records.keys import is_human
from realitycheck.store import RunData, StudyResult, StudyTable
from realitycheck.studies import Study, study
from realitycheck.studies.benchmark_audit import benchmark_stats, context_chars
from realitycheck.studies.context_length._report import MIN_N, context_figure, finding, gains

__all__ = ["ContextLength", "stratum_names"]

THRESHOLDED = ("f1", "precision", "recall", "accuracy")


def _short(value: float) -> str:
    return f"{value / 1000:g}K" if value >= 1000 else f"{value:g}"


def _increasing(edges: tuple[float, ...]) -> bool:
    return all(a < b for a, b in zip(edges, edges[1:], strict=False))


def stratum_names(edges: tuple[float, ...]) -> list[str]:
    """Names of the strata cut at ``edges``: ``<1K``, ``1K-5K``, ``>5K`` for (1000, 5000).

    A stratum holds lengths from its lower edge (included) to its upper edge (excluded).
    """
    names = [f"<{_short(edges[0])}"]
    names += [f"{_short(a)}-{_short(b)}" for a, b in zip(edges, edges[1:], strict=False)]
    return [*names, f">{_short(edges[-1])}"]


@study("context_length")
@dataclass(frozen=True, kw_only=True)
class ContextLength(Study):
    """Detector and labeler quality per context-length stratum, and benchmark statistics.

    Follows the long-context stratification of paper 002 ("Rethinking
    Evaluation for LLM Hallucination Detection", Trivia++: F1 per context
    stratum < 1K, 1K-5K, > 5K characters, and the "long-context gain" = value on
    the longest stratum - value on the shortest, negative = worse on long
    contexts). Context length is the number of characters of the response's
    example context; responses without a context are left out (and counted).

    Per dataset (and per task where there are several), stratum and detector:
    AUROC on every labelled response of the stratum, and F1, precision, recall
    and accuracy on the *test*-split responses of the stratum at one threshold
    per detector, chosen on the calibration split of the whole dataset (binary
    detectors: 0.5), exactly as evaluate does. Per automatic labeler: the same
    four metrics of its verdicts against the reference, and the AUROC of its
    score. Every metric lies in [0, 1], higher = better, with a percentile
    bootstrap CI over responses (the run's bootstrap settings), n and the
    number of hallucinated responses.
    The benchmark statistics table (samples, mean / max context length,
    hallucination rate, generators, domains) covers every dataset of the run.

    Args:
        reference: The labels the detectors are measured against.
        edges: Increasing context lengths (characters) where strata are cut.
        threshold_objective: What the calibration-split threshold maximises.
        calibration_fraction: Share of examples in the calibration split.
    """

    edges: tuple[float, ...] = param(
        (1000, 5000),
        SequenceOf(Interval(float, 0, float("inf"), closed="neither"), min_length=1),
        Satisfies(_increasing, "strictly increasing"),
        convert=as_tuple,
    )
    threshold_objective: str = param("f1_macro", OneOf(OBJECTIVES))
    calibration_fraction: float = param(0.5, Interval(float, 0, 1, closed="neither"))

    title: ClassVar[str] = "Context length: quality per context-length stratum"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Measure every dataset with a context, stratum by stratum."""
        stats, counts, metrics, figures, skipped = [], [], [], [], []
        names = stratum_names(self.edges)
        for ds in data.datasets:
            rows = data.frame(ds)
            ctx = context_chars(data, rows)
            stats.append(benchmark_stats(data, ds, self.reference, rows=rows, context=ctx))
            has = ~np.isnan(ctx) & (ctx > 0)
            if not has.any():
                skipped.append(f"{ds}: no context (no stratum to measure)")
                continue
            ref = data.human_reference(ds, self.reference)
            if ref is None:
                skipped.append(f"{ds}: no {self.reference!r} labels")
                continue
            if not has.all():
                skipped.append(f"{ds}: {int((~has).sum())} responses without a context left out")
            stratum = np.where(has, np.digitize(np.where(has, ctx, 0), self.edges), -1)
            found = self._measure(data, ds, ref, rows, ctx, stratum, names, bootstrap)
            counts.append(found[0])
            metrics.append(found[1])
            figure = context_figure(ds, found[1], names)
            if figure is not None:
                figures.append(figure)
        return self._assemble(stats, counts, metrics, figures, skipped, names)

    def _measure(
        self,
        data: RunData,
        ds: str,
        ref: str,
        rows: pd.DataFrame,
        ctx: np.ndarray,
        stratum: np.ndarray,
        names: list[str],
        bootstrap: Bootstrap,
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        y = data.verdicts(ds)[ref].to_numpy()
        test = split_of(rows["example_id"].tolist(), self.calibration_fraction) == "test"
        frame = data.detector_scores(ds)
        scores = {d: frame[d].to_numpy() for d in data.detectors_of(ds)}
        thresholds = {}
        for d, s in scores.items():
            ok = ~np.isnan(y) & ~np.isnan(s) & ~test
            thresholds[d] = choose_or_fix_threshold(y[ok], s[ok], self.threshold_objective)[0]
        verdicts, label_scores = data.verdicts(ds), data.label_scores(ds)
        autos = [k for k in data.labelers_of(ds) if not is_human(k)]
        tasks = sorted(rows["task"].dropna().unique())
        measure = Measure(bootstrap)
        counts, results = [], []
        for task in ["all", *tasks] if len(tasks) > 1 else ["all"]:
            in_task = (
                np.ones(len(rows), bool) if task == "all" else (rows["task"] == task).to_numpy()
            )
            for k, name in enumerate(names):
                in_slice = in_task & (stratum == k)
                labelled = in_slice & ~np.isnan(y)
                counts.append(
                    {
                        "dataset": ds,
                        "task": task,
                        "stratum": name,
                        "n_responses": int(in_slice.sum()),
                        "n_labelled": int(labelled.sum()),
                        "n_positive": int(np.nansum(y[labelled])),
                        "hallucination_rate": float(y[labelled].mean())
                        if labelled.any()
                        else np.nan,
                        "mean_context_chars": float(ctx[in_slice].mean())
                        if in_slice.any()
                        else np.nan,
                    }
                )
                where = Where(labeler=ref, slice=f"{task}|{name}", dataset=ds, n_excluded=0)
                out: list[tuple[str, MetricResult]] = []
                valid = {d: labelled & ~np.isnan(s) for d, s in scores.items()}
                for keys, mask in group_by_mask(valid):
                    if mask.any():
                        stacked = np.vstack([scores[d][mask] for d in keys])
                        out += [
                            ("detector", r)
                            for r in measure.rows("auroc", keys, y[mask], stacked, where)
                        ]
                usable = {d: valid[d] & test for d in scores if not np.isnan(thresholds[d])}
                for keys, mask in group_by_mask(usable):
                    if not mask.any():
                        continue
                    stacked = np.vstack([scores[d][mask] for d in keys])
                    cut = [thresholds[d] for d in keys]
                    for metric in THRESHOLDED:
                        got = measure.rows(metric, keys, y[mask], stacked, where, thresholds=cut)
                        out += [("detector", r) for r in got]
                for lab in autos:
                    for metrics, values in (
                        (THRESHOLDED, verdicts[lab].to_numpy()),
                        (("auroc",), label_scores[lab].to_numpy()),
                    ):
                        mask = labelled & ~np.isnan(values)
                        if not mask.any():
                            continue
                        for metric in metrics:
                            got = measure.rows(metric, [lab], y[mask], values[mask][None, :], where)
                            out += [("labeler", r) for r in got]
                results += [_row(ds, task, name, kind, r) for kind, r in out]
        return pd.DataFrame(counts), pd.DataFrame(results)

    def _assemble(
        self,
        stats: list[pd.DataFrame],
        counts: list[pd.DataFrame],
        metrics: list[pd.DataFrame],
        figures: list[Any],
        skipped: list[str],
        names: list[str],
    ) -> StudyResult:
        tables = []
        if stats:
            tables.append(
                StudyTable(
                    "benchmark_statistics",
                    pd.concat(stats, ignore_index=True),
                    "Per dataset (and task): responses, examples, share with a context, mean and "
                    "max context length in characters (over responses with one), hallucination "
                    f"rate under {self.reference!r}, generators and domains (what a domain is "
                    "is stated per dataset; 'unknown' where the data does not say).",
                )
            )
        metric_frame = pd.concat(metrics, ignore_index=True) if metrics else pd.DataFrame()
        gain_frame = gains(metric_frame, names)
        if counts:
            tables += [
                StudyTable(
                    "strata",
                    pd.concat(counts, ignore_index=True),
                    "Responses, labelled responses, hallucinated responses and mean context "
                    "length per context-length stratum.",
                ),
                StudyTable(
                    "stratum_metrics",
                    metric_frame,
                    "Per stratum: detectors' AUROC (all labelled responses) and F1 / precision / "
                    "recall / accuracy (test split, threshold from the calibration split); "
                    "labelers' verdict metrics and score AUROC; bootstrap CIs over responses.",
                ),
                StudyTable(
                    "long_context_gain",
                    gain_frame,
                    "Value on the longest stratum minus value on the shortest (negative = worse "
                    "on long contexts), for F1 and AUROC, over strata measured on at least "
                    f"{MIN_N} responses.",
                ),
            ]
        text = finding(pd.concat(counts) if counts else pd.DataFrame(), gain_frame, names)
        return self._result(text, tables=tables, figures=figures, skipped=skipped)


def _row(ds: str, task: str, stratum: str, kind: str, r: MetricResult) -> dict[str, Any]:
    return {
        "dataset": ds,
        "task": task,
        "stratum": stratum,
        "kind": kind,
        "name": r.detector,
        "metric": r.metric,
        "value": r.value,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "n": r.n,
        "n_positive": r.n_positive,
        "threshold": r.threshold,
        "split": "test" if kind == "detector" and r.metric in THRESHOLDED else "all",
    }
