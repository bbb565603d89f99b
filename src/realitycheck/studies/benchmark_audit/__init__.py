"""Benchmark audit: the seven desiderata of a trustworthy hallucination benchmark, per dataset.

Parts: ``_facts`` (documented facts per shipped dataset, and
:func:`benchmark_stats`, shared with the context-length study).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap
from realitycheck.params import Interval, param
from realitycheck.records.keys import LabelKey, is_human
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import Study, study
from realitycheck.studies.benchmark_audit._facts import FACTS, benchmark_stats, context_chars
from realitycheck.studies.plots import heatmap, legend_below, png_bytes

__all__ = [
    "DESIDERATA",
    "BenchmarkAudit",
    "benchmark_stats",
    "context_chars",
    "hallucination_types",
]

DESIDERATA: tuple[str, ...] = (
    "organic generations",
    "human-verified test labels",
    "realistic training-label noise",
    "RAG / long context",
    "faithfulness-type coverage",
    "several generators",
    "several domains",
)
"""The seven desiderata of paper 002, in its order."""

STATUSES = ("yes", "partial", "no", "unknown")
MIN_HUMAN_SHARE = 0.95
"""Share of responses with a human label above which test labels count as human-verified."""


def hallucination_types(raws: pd.Series) -> list[str]:
    """Hallucination types named in raw human annotations (JSON lists of span objects).

    A type is a span's ``label_type`` (RAGTruth: ``Evident Conflict``...) or a
    dotted sub-label in a span's ``label`` list (FaithBench: ``Unwanted.Intrinsic``).
    Text that is not a JSON list is ignored.
    """
    found: set[str] = set()
    for text in raws.dropna().tolist():
        if not isinstance(text, str) or not text.startswith("["):
            continue
        try:
            spans = json.loads(text)
        except json.JSONDecodeError:
            continue
        for span in spans if isinstance(spans, list) else []:
            if not isinstance(span, dict):
                continue
            if isinstance(span.get("label_type"), str) and span["label_type"]:
                found.add(span["label_type"])
            tags = span.get("label")
            if isinstance(tags, list):
                found.update(t for t in tags if isinstance(t, str) and "." in t)
    return sorted(found)


def _ladder(value: float, high: float, evidence: str) -> tuple[str, str]:
    if np.isnan(value) or value == 0:
        return "unknown", evidence
    return ("yes" if value >= high else "partial" if value >= 2 else "no"), evidence


@study("benchmark_audit")
@dataclass(frozen=True, kw_only=True)
class BenchmarkAudit(Study):
    """The seven desiderata of a trustworthy hallucination benchmark, checked per dataset.

    Follows paper 002 ("Rethinking Evaluation for LLM Hallucination Detection",
    Trivia++), which asks of a benchmark: organic generations (no injected or
    prompted errors), human-verified test labels, realistic training-label
    noise, RAG / long context, coverage of faithfulness types, several
    generators and several domains. Each is marked ``yes`` / ``partial`` /
    ``no`` / ``unknown`` with its evidence, measured from the run where it can
    be (generators, share of responses with a context and its mean length,
    label sources, annotators, hallucination types named in the human
    annotations, domains) and otherwise taken from the documented facts of
    the datasets realitycheck ships (a user's dataset gets ``unknown``).

    Rules: human-verified = a human label on >= 95% of responses (partial: on
    some); noise = per-annotator labels of >= 2 annotators (partial: only
    automatic labels, i.e. weak supervision); RAG / long context = a context
    on >= half of the responses with a mean of >= ``long_context`` characters
    (partial: shorter or rarer contexts); types = >= 2 hallucination types in
    the human annotations (partial: one); generators and domains: >=
    ``min_generators`` / ``min_domains`` (partial: two; unknown when the data
    does not record them).

    Args:
        reference: The labels counted as the test labels.
        long_context: Mean context length (characters) that counts as long.
        min_generators: Generators needed for a ``yes``.
        min_domains: Domains needed for a ``yes``.
    """

    long_context: float = param(5000, Interval(float, 0, float("inf"), closed="neither"))
    min_generators: int = param(3, Interval(int, 2))
    min_domains: int = param(3, Interval(int, 2))

    title: ClassVar[str] = "Benchmark audit: the seven desiderata per dataset"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Mark every dataset of the run against the seven desiderata."""
        measured, marks = [], []
        for ds in data.datasets:
            m = self._measure(data, ds)
            measured.append(m)
            marks += self._mark(ds, m)
        if not measured:
            return self._result("The run holds no responses to audit.")
        table = pd.DataFrame(marks)
        tables = [
            StudyTable(
                "desiderata",
                table,
                "Each dataset against the seven desiderata of paper 002: status, evidence and "
                "whether it was measured from the run or taken from the dataset's documentation.",
            ),
            StudyTable(
                "measurements",
                pd.DataFrame(measured),
                "What the audit measured per dataset.",
            ),
        ]
        return self._result(_finding(table), tables=tables, figures=[_grid(table)])

    def _measure(self, data: RunData, ds: str) -> dict[str, Any]:
        stats = benchmark_stats(data, ds, self.reference).iloc[0]
        ids = data.frame(ds).index
        labels = data.labels[data.labels["response_id"].isin(ids)]
        keys = labels["labeler"].unique()
        human = labels[labels["labeler"].isin([k for k in keys if is_human(k)])]
        annotators = sorted(k for k in human["labeler"].unique() if LabelKey.parse(k).is_annotator)
        per_response = human[human["labeler"].isin(annotators)].groupby("response_id").size()
        reference = labels[labels["labeler"] == self.reference]
        return {
            "dataset": ds,
            "n_responses": len(ids),
            "n_generators": int(stats["n_generators"]),
            "generators": stats["generators"],
            "share_with_context": stats["share_with_context"],
            "mean_context_chars": stats["mean_context_chars"],
            "max_context_chars": stats["max_context_chars"],
            "share_human_labelled": human["response_id"].nunique() / len(ids) if len(ids) else 0.0,
            "n_reference_verdicts": int(reference["hallucinated"].notna().sum()),
            "human_label_keys": ", ".join(
                sorted(k for k in human["labeler"].unique() if not LabelKey.parse(k).is_annotator)
            )
            or "none",
            "n_annotators": len(annotators),
            "annotators_per_response": (
                f"{per_response.min()}-{per_response.max()}" if len(per_response) else "0"
            ),
            "automatic_labelers": ", ".join(sorted(k for k in keys if not is_human(k))),
            "recorded_detectors": ", ".join(
                k for k in data.detectors_of(ds) if LabelKey.parse(k).is_recorded
            ),
            "hallucination_types": ", ".join(hallucination_types(human["raw"])),
            "n_domains": stats["n_domains"],
            "domain": stats["domain"],
        }

    def _mark(self, ds: str, m: dict[str, Any]) -> list[dict[str, str]]:
        facts = FACTS.get(ds)
        out = [
            (
                (facts.organic, facts.organic_evidence, "documented")
                if facts is not None
                else ("unknown", "not recorded in the run; a user dataset", "documented")
            )
        ]
        share = m["share_human_labelled"]
        verdict = "yes" if share >= MIN_HUMAN_SHARE else "partial" if share > 0 else "no"
        raters = (
            f"; {m['n_annotators']} annotators ({m['annotators_per_response']} per response)"
            if m["n_annotators"]
            else "; no per-annotator labels"
        )
        out.append(
            (
                verdict,
                f"human labels on {share:.0%} of {m['n_responses']} responses "
                f"({m['human_label_keys']}); {m['n_reference_verdicts']} decided "
                f"{self.reference!r} verdicts{raters}",
                "measured",
            )
        )
        weak = ", ".join(x for x in (m["automatic_labelers"], m["recorded_detectors"]) if x)
        if m["n_annotators"] >= 2:
            noise = ("yes", f"per-annotator labels of {m['n_annotators']} annotators")
        elif weak:
            noise = ("partial", f"only automatic labels (weak supervision): {weak}")
        else:
            noise = ("no", "no per-annotator or automatic labels in the run")
        out.append((*noise, "measured"))
        ctx, mean = m["share_with_context"], m["mean_context_chars"]
        if not ctx > 0:
            rag = ("no", "no response has a context")
        else:
            long = ctx >= 0.5 and mean >= self.long_context
            rag = (
                "yes" if long else "partial",
                f"context on {ctx:.0%} of responses, mean {mean:,.0f} / max "
                f"{m['max_context_chars']:,.0f} characters "
                f"(long = mean >= {self.long_context:,.0f})",
            )
        out.append((*rag, "measured"))
        types = [t for t in m["hallucination_types"].split(", ") if t]
        out.append(
            (
                "yes" if len(types) >= 2 else "partial" if types else "no",
                f"types in the human annotations: {', '.join(types)}"
                if types
                else "the human labels name no hallucination type",
                "measured",
            )
        )
        gens = m["n_generators"]
        out.append(
            (
                *_ladder(
                    float(gens),
                    self.min_generators,
                    f"{gens} generator{'s' if gens > 1 else ''}: {m['generators']}"
                    if gens
                    else "generators not recorded",
                ),
                "measured",
            )
        )
        doms = float(m["n_domains"])
        out.append(
            (
                *_ladder(
                    doms,
                    self.min_domains,
                    f"{doms:.0f} domains; domain = {m['domain']}"
                    if doms == doms
                    else str(m["domain"]),
                ),
                "measured" if doms == doms else "documented",
            )
        )
        return [
            {"dataset": ds, "desideratum": d, "status": s, "evidence": e, "basis": b}
            for d, (s, e, b) in zip(DESIDERATA, out, strict=True)
        ]


def _finding(table: pd.DataFrame) -> str:
    counts = table.pivot_table(
        index="dataset", columns="status", values="desideratum", aggfunc="count", fill_value=0
    ).reindex(columns=list(STATUSES), fill_value=0)
    full = counts.index[counts["yes"] == len(DESIDERATA)].tolist()
    score = list(zip(counts["yes"], counts["partial"], strict=True))
    leaders = [ds for ds, sc in zip(counts.index, score, strict=True) if sc == max(score)]
    best = str(leaders[0])
    if len(counts) == 1:
        text = f"{best} {'meets' if full else 'does not meet'} all seven desiderata."
    elif full:
        text = f"{len(full)} of {len(counts)} datasets meet all seven desiderata."
    else:
        text = f"None of the {len(counts)} datasets meets all seven desiderata."
    n_yes = int(counts["yes"].loc[best])
    if len(leaders) > 1:
        text += f" The closest are {' and '.join(map(str, leaders))} ({n_yes} of 7 each)."
    elif n_yes < len(DESIDERATA):
        missing = table[(table["dataset"] == best) & (table["status"] != "yes")]["desideratum"]
        lead = "It meets" if len(counts) == 1 else f"The closest is {best}:"
        text += f" {lead} {n_yes} of 7; not fully: {', '.join(missing)}."
    gaps = table[table["status"] != "yes"].groupby("desideratum").size()
    if len(gaps) and len(counts) > 1:
        worst = gaps.idxmax()
        text += f" The most common gap is {worst} ({gaps.max()} of {len(counts)} datasets)."
    return text


def _grid(table: pd.DataFrame) -> StudyFigure:
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    datasets = sorted(table["dataset"].unique())
    code = {s: i for i, s in enumerate(STATUSES)}
    grid = np.full((len(datasets), len(DESIDERATA)), np.nan)
    for ds, desideratum, status in zip(
        table["dataset"], table["desideratum"], table["status"], strict=True
    ):
        grid[datasets.index(str(ds)), DESIDERATA.index(str(desideratum))] = code[str(status)]
    colours = ["#4caf50", "#ffc107", "#e57373", "#bdbdbd"]
    fig = heatmap(
        grid,
        datasets,
        DESIDERATA,
        heading="Benchmark desiderata (paper 002)",
        cells=[[STATUSES[int(v)] for v in row] for row in grid],
        cmap=ListedColormap(colours),
        vmin=-0.5,
        vmax=3.5,
    )
    handles = [Patch(color=c) for c in colours]
    legend_below(fig, handles, list(STATUSES), cols=len(STATUSES))
    return StudyFigure(
        "desiderata_grid",
        png_bytes(fig),
        "Each dataset against the seven desiderata: yes (green), partial (amber), no (red), "
        "unknown (grey).",
    )
