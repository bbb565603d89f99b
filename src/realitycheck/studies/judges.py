"""LLM judges as measured things: how the examples a judge is shown change its verdicts.

The study reads what every judge writes in a label's ``raw`` JSON (see
:class:`realitycheck.labelers.Judge`) and the labels' keys; it calls no model.
How stable a judge's repeats are is :mod:`realitycheck.studies.judge_stability`.
A run without judges gives empty tables and one skipped line per dataset.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap, confusion_ci
from realitycheck.errors import InvalidInputError
from realitycheck.registry import parse_key
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import Study, automatic_labelers, fmt, quiet, study
from realitycheck.studies.judge_stability import raw_json
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    TEXT_SIZE,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
)

__all__ = [
    "LEAKAGE",
    "LEAVE_ONE_OUT",
    "JudgeExamples",
    "reference_verdicts",
]

_CURVE_COLUMNS = [
    "dataset",
    "family",
    "labeler",
    "k",
    "sees_own_annotation",
    "point",
    "reference",
    "balanced_accuracy",
    "ci_low",
    "ci_high",
    "sensitivity",
    "sensitivity_ci_low",
    "sensitivity_ci_high",
    "specificity",
    "specificity_ci_low",
    "specificity_ci_high",
    "n",
    "n_positive",
    "n_negative",
    "n_excluded",
]
_CONFUSION_COLUMNS = [
    "dataset",
    "family",
    "labeler",
    "k",
    "sees_own_annotation",
    "category",
    "reference_verdict",
    "n",
]
LEAKAGE = "sees its own annotation (leakage)"
"""The ``point`` of a judge shown the annotation of the response it judges."""
LEAVE_ONE_OUT = "leave-one-out"
"""The ``point`` of a judge shown only other responses' annotations."""
_TERNARY = {
    "consistent": "consistent",
    "benign": "benign",
    "questionable": "benign",
    "unwanted": "unwanted",
}


def reference_verdicts(data: RunData, dataset: str, reference: str) -> pd.Series:
    """The reference's verdict per response of ``dataset``, by id, for a confusion matrix.

    A category naming a ternary verdict (``Consistent``, ``Benign`` or
    ``Questionable``, ``Unwanted``) gives ``consistent`` / ``benign`` /
    ``unwanted``; otherwise the binary verdict gives ``hallucinated`` or
    ``faithful``; no verdict at all gives ``none``.
    """
    ids = data.frame(dataset).index
    labels = data.labels[data.labels["labeler"] == reference].set_index("response_id")
    labels = labels[~labels.index.duplicated(keep="last")].reindex(ids)
    out = []
    for category, hallucinated in zip(labels["category"], labels["hallucinated"], strict=True):
        ternary = _TERNARY.get(str(category).strip().lower()) if isinstance(category, str) else None
        if ternary is not None:
            out.append(ternary)
        elif hallucinated is True or hallucinated == 1:
            out.append("hallucinated")
        elif hallucinated is False or hallucinated == 0:
            out.append("faithful")
        else:
            out.append("none")
    return pd.Series(out, index=ids, dtype=object)


def _families(data: RunData, keys: list[str]) -> dict[str, list[tuple[int, bool, str]]]:
    """Group labeler keys that differ only in ``k`` and ``include_self``.

    Returns ``{key without them: [(k, include_self, key), …]}``, sorted, for
    families with at least two points. Each is read from the key, or from the
    labels' recorded spec when the key leaves it at its default (a spec
    without ``include_self``, from before the option, means ``False``).
    """
    groups: dict[str, list[tuple[int, bool, str]]] = {}
    for key in keys:
        try:
            name, params = parse_key(key)
        except InvalidInputError:
            continue
        k = params.pop("k", None)
        leak = params.pop("include_self", None)
        spec = _spec_params(data, key) if k is None or leak is None else {}
        k = spec.get("k") if k is None else k
        leak = spec.get("include_self", False) if leak is None else leak
        if not isinstance(k, int) or isinstance(k, bool) or not isinstance(leak, bool):
            continue
        rest = ",".join(f"{p}={params[p]}" for p in sorted(params))
        groups.setdefault(f"{name}[{rest}]" if rest else name, []).append((k, leak, key))
    return {
        family: sorted(members)
        for family, members in groups.items()
        if len({(k, leak) for k, leak, _ in members}) >= 2
    }


def _spec_params(data: RunData, key: str) -> dict[str, Any]:
    specs = data.labels.loc[data.labels["labeler"] == key, "spec"]
    for text in specs.head(1):
        params = raw_json(text).get("params")
        if isinstance(params, dict):
            return params
    return {}


def _rates(
    truth: np.ndarray, said: np.ndarray, bootstrap: Bootstrap
) -> dict[str, tuple[float, float, float]]:
    """Balanced accuracy, sensitivity and specificity of ``said`` against ``truth``, with CIs.

    Sensitivity is the recall of the hallucinated class, specificity the
    recall of the faithful one: the same resamples (same ``n`` and seed) give
    all three intervals.
    """
    with quiet():
        out = confusion_ci(truth, said, ["balanced_accuracy", "recall"], bootstrap)
        (specificity,) = confusion_ci(~truth, ~said, ["recall"], bootstrap).values()
    return {
        "balanced_accuracy": out["balanced_accuracy"],
        "sensitivity": out["recall"],
        "specificity": specificity,
    }


@study("judge_examples")
@dataclass(frozen=True, kw_only=True)
class JudgeExamples(Study):
    """Balanced accuracy, sensitivity and specificity of a few-shot judge per number of examples.

    The #examples curve of FaithJudge (seed paper 003, Figure 2): the labelers
    of a run that share a name and all parameters but ``k`` and
    ``include_self`` (``faithjudge[…,k=0]``, ``[…,k=3]``, ``[…,k=9]``,
    ``[…,k=10,include_self=true]``) form a family; for each point, per
    dataset, against the reference's verdicts on the responses both labelled
    (``n``, of which ``n_positive`` hallucinated and ``n_negative`` not;
    ``n_excluded`` = the reference's verdicts the judge left out): the
    balanced accuracy (``ci_low`` / ``ci_high``), the sensitivity (recall on
    hallucinated) and the specificity (recall on faithful), each in [0, 1]
    with the run's bootstrap CI (higher = closer to the reference; balanced
    accuracy 0.5 = chance). A judge shown the annotation of the response it
    judges (``include_self=true``; the paper's "10*") is the ``point`` "sees
    its own annotation (leakage)", an upper bound rather than a point of the
    leave-one-out curve: the figure draws it as a separate star, not joined
    to the line. The ``confusion`` table crosses each point's category
    (``consistent`` / ``benign`` / ``unwanted`` / ``invalid``) with the
    reference's verdict (ternary where its category names one, else
    hallucinated / faithful).

    Args:
        reference: The labeler taken as ground truth.
    """

    title: ClassVar[str] = (
        "Judge examples: balanced accuracy, sensitivity and specificity against the number "
        "of examples shown"
    )

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Measure every family of judges differing in ``k`` on every dataset."""
        curve, confusion, skipped = [], [], []
        all_categories: pd.DataFrame | None = None  # every label's category, pivoted once
        for dataset in data.datasets:
            have = data.labelers_of(dataset)
            if self.reference not in have:
                skipped.append(f"{dataset}: no {self.reference!r} labels")
                continue
            keys = automatic_labelers(have, self.reference)
            families = _families(data, keys)
            if not families:
                skipped.append(f"{dataset}: no labelers that differ only in k")
                continue
            verdicts = data.verdicts(dataset)
            truth = verdicts[self.reference]
            ternary = reference_verdicts(data, dataset, self.reference)
            ids = data.frame(dataset).index
            if all_categories is None:
                all_categories = data.labels.pivot_table(
                    index="response_id", columns="labeler", values="category", aggfunc="last"
                )
            categories = all_categories.reindex(ids)
            for family, members in families.items():
                for k, leak, key in members:
                    both = truth.notna() & verdicts[key].notna()
                    y_true = truth[both].to_numpy() == 1
                    rates = _rates(y_true, verdicts.loc[both, key].to_numpy() == 1, bootstrap)
                    curve.append(
                        [
                            dataset,
                            family,
                            key,
                            k,
                            leak,
                            LEAKAGE if leak else LEAVE_ONE_OUT,
                            self.reference,
                            *rates["balanced_accuracy"],
                            *rates["sensitivity"],
                            *rates["specificity"],
                            int(both.sum()),
                            int(y_true.sum()),
                            int((~y_true).sum()),
                            int((truth.notna() & verdicts[key].isna()).sum()),
                        ]
                    )
                    said = categories[key].where(categories[key].notna(), "none")
                    labelled = data.labels.loc[data.labels["labeler"] == key, "response_id"]
                    mask = ids.isin(labelled)
                    counts = Counter(zip(said[mask], ternary[mask], strict=True))
                    for (category, ref), n in sorted(counts.items()):
                        confusion.append(
                            [dataset, family, key, k, leak, category or "none", ref, n]
                        )
        curve_frame = pd.DataFrame(curve, columns=_CURVE_COLUMNS)
        confusion_frame = pd.DataFrame(confusion, columns=_CONFUSION_COLUMNS)
        tables = [
            StudyTable(
                "curve",
                curve_frame,
                f"Balanced accuracy (ci_low / ci_high), sensitivity (recall on hallucinated) "
                f"and specificity (recall on faithful) of each judge against {self.reference}, "
                f"per number of annotated examples shown (k), with {bootstrap.confidence:.0%} "
                f"bootstrap CIs ({bootstrap.n_resamples} resamples, seed {bootstrap.seed}); "
                f"balanced accuracy 0.5 = chance. point = '{LEAKAGE}': the judge was also shown "
                "the annotation of the response it judges (include_self), an upper bound, "
                "not a leave-one-out point.",
            ),
            StudyTable(
                "confusion",
                confusion_frame,
                f"Each judge's category (per k; sees_own_annotation = the leakage point) "
                f"against the verdict of {self.reference} (ternary where its category names "
                "one); n = responses.",
            ),
        ]
        figures = [] if curve_frame.empty else [_curve_figure(curve_frame, self.reference)]
        return self._result(
            _examples_finding(curve_frame, self.reference),
            tables=tables,
            figures=figures,
            skipped=skipped,
        )


_PANELS = (
    ("balanced_accuracy", "ci_low", "ci_high", "balanced accuracy"),
    ("sensitivity", "sensitivity_ci_low", "sensitivity_ci_high", "sensitivity"),
    ("specificity", "specificity_ci_low", "specificity_ci_high", "specificity"),
)


def _bars(group: pd.DataFrame, value: str, low: str, high: str) -> tuple[Any, Any, Any]:
    y = group[value].astype(float).to_numpy()
    below = y - group[low].astype(float).to_numpy()
    above = group[high].astype(float).to_numpy() - y
    return group["k"].to_numpy(), y, np.vstack([below, above])


def _curve_figure(curve: pd.DataFrame, reference: str) -> StudyFigure:
    """Balanced accuracy, sensitivity and specificity against k: three panels, one above another.

    Each judge family and dataset keeps one colour in every panel and is named
    once in the legend beneath; a star (one legend entry) marks a leakage point.
    """
    from matplotlib.lines import Line2D

    fig, axes = new_figure(PAGE_WIDTH, 6.6, rows=len(_PANELS))
    leaked_any = bool(curve["sees_own_annotation"].astype(bool).any())
    handles: dict[str, Any] = {}
    for ax, (value, low, high, name) in zip(axes, _PANELS, strict=True):
        for i, ((dataset, family), group) in enumerate(curve.groupby(["dataset", "family"])):
            color = f"C{i % 10}"
            leak = group["sees_own_annotation"].astype(bool)
            line = group[~leak].sort_values("k")
            if len(line):
                x, y, err = _bars(line, value, low, high)
                drawn = ax.errorbar(x, y, yerr=err, marker="o", capsize=3, color=color)
                handles.setdefault(f"{family} / {dataset}", drawn)
            if leak.any():
                x, y, err = _bars(group[leak].sort_values("k"), value, low, high)
                ax.errorbar(
                    x, y, yerr=err, marker="*", markersize=12, capsize=3, linestyle="none",
                    color=color,
                )  # fmt: skip
        if value == "balanced_accuracy":
            ax.axhline(0.5, color="grey", linestyle="--", linewidth=1)
        ax.set_ylabel(name, fontsize=TEXT_SIZE)
        ax.set_ylim(-0.02, 1.02)
    axes[-1].set_xlabel("annotated examples shown (k)", fontsize=TEXT_SIZE)
    set_title(fig, f"Judges against the number of examples shown, against {reference}")
    if leaked_any:
        star = Line2D([], [], color="black", marker="*", markersize=12, linestyle="none")
        handles[f"star: the judge {LEAKAGE}"] = star
    legend_below(fig, list(handles.values()), list(handles), heading="judge / dataset")
    caption = (
        f"Balanced accuracy, sensitivity (recall on hallucinated) and specificity (recall on "
        f"faithful) against {reference} (y) of each judge family per number of annotated "
        "examples shown (x), with bootstrap CI bars; the dashed line is chance."
    )
    if leaked_any:
        caption += (
            f" A star is the point where the judge also {LEAKAGE.replace('sees', 'saw')}: "
            "it was shown the annotation of the response it judged."
        )
    return StudyFigure("examples-curve", png_bytes(fig), caption)


def _examples_finding(curve: pd.DataFrame, reference: str) -> str:
    values = curve["balanced_accuracy"].astype(float)
    defined = curve[np.isfinite(values)]
    if defined.empty:
        return (
            f"No dataset has {reference} labels and judges that differ only in k with a defined "
            "balanced accuracy, so no #examples curve could be drawn."
        )
    sentences = []
    for (dataset, family), group in defined.groupby(["dataset", "family"], sort=True):
        leak = group["sees_own_annotation"].astype(bool)
        line = group[~leak].sort_values("k")
        text = f"On {dataset}, {family}"
        if len(line):
            first, last = line.iloc[0], line.iloc[-1]
            text += (
                f" goes from {fmt(first['balanced_accuracy'])} at k = {first['k']} to "
                f"{fmt(last['balanced_accuracy'])} at k = {last['k']} (balanced accuracy "
                f"against {reference}; sensitivity {fmt(first['sensitivity'])} to "
                f"{fmt(last['sensitivity'])}, specificity {fmt(first['specificity'])} to "
                f"{fmt(last['specificity'])})"
            )
        if leak.any():
            top = group[leak].sort_values("k").iloc[-1]
            text += (
                f"{';' if len(line) else ''} shown the annotation of the response it judges "
                f"(k = {top['k']}, leakage) it reaches {fmt(top['balanced_accuracy'])} "
                f"(sensitivity {fmt(top['sensitivity'])}, specificity "
                f"{fmt(top['specificity'])})"
            )
        sentences.append(text + ".")
    return " ".join(sentences[:4])
