"""The demo's headline findings: two or three sentences read from its evaluation's tables.

They say in words what the report's key findings show first: whether the
best detector ranks hallucinations better than response length, dataset by
dataset; which labeler agrees least with the reference labels; and which
scores rank the responses the wrong way round (:func:`~realitycheck.analysis.wrong_way`,
the report's and the command line's rule). Every number is read from the
metrics and agreement tables, but for the difference from length: given the
run, it is the report's, a paired bootstrap over the responses both scored
(:func:`~realitycheck.metrics.paired_auroc_bootstrap`, the run's bootstrap
settings), and a detector beats length only where its interval lies above 0.
The sentences name components, models and datasets: untrusted text that
whoever prints them escapes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from realitycheck.analysis import Bootstrap, wrong_way
from realitycheck.errors import InvalidInputError
from realitycheck.metrics import PairedBootstrap, paired_auroc_bootstrap
from realitycheck.store import RunData, RunStore

if TYPE_CHECKING:
    import pandas as pd

    from realitycheck.pipeline import Evaluation

__all__ = ["headline_findings"]

BASELINE = "length"
"""The baseline detector's name, as the report's key findings read it (every ``length[...]``)."""
NAMED = 3
"""Datasets or scores named in one sentence; the others are counted."""


def _number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _with_ci(row: Any) -> str:
    """``0.712 [0.690, 0.733]``, or the value alone when it has no interval."""
    value, low, high = (_number(row[c]) for c in ("value", "ci_low", "ci_high"))
    if value is None:
        return "n/a"
    if low is None or high is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def _names(items: list[str]) -> str:
    """``a, b and c``; past :data:`NAMED`, ``a, b, c and 2 more``."""
    shown, more = items[:NAMED], len(items) - NAMED
    if more > 0:
        return f"{', '.join(shown)} and {more} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _best(rows: pd.DataFrame) -> Any | None:
    """The row of the highest AUROC (ties: the first key), ``None`` when none has a value."""
    rows = rows[rows["value"].notna()]
    if rows.empty:
        return None
    ranked = rows.assign(_v=rows["value"].astype(float)).sort_values(
        ["_v", "detector"], ascending=[False, True]
    )
    return ranked.iloc[0]


def _signed(paired: PairedBootstrap) -> str:
    """``+0.064 [-0.012, +0.139]``: the difference and its paired interval, as the report."""
    text = f"{paired.difference:+.3f}"
    if math.isnan(paired.ci_low) or math.isnan(paired.ci_high):
        return text
    return f"{text} [{paired.ci_low:+.3f}, {paired.ci_high:+.3f}]"


def _versus(best: Any, length: Any, paired: PairedBootstrap | None = None) -> str:
    text = f"{best['detector']} {_with_ci(best)} against {length['detector']} {_with_ci(length)}"
    return text + (f", difference {_signed(paired)}" if paired is not None else "")


def _bootstrap(store: RunStore) -> Bootstrap:
    """The run's bootstrap settings (the manifest's evaluate entry), else the defaults."""
    config = store.read_manifest().get("config")
    evaluate = config.get("evaluate") if isinstance(config, Mapping) else None
    settings = evaluate.get("bootstrap") if isinstance(evaluate, Mapping) else None
    try:
        return Bootstrap(**settings) if isinstance(settings, Mapping) else Bootstrap()
    except (TypeError, InvalidInputError):
        return Bootstrap()


class _Pairs:
    """The paired difference of two detectors' AUROC per dataset, read from a run's records."""

    def __init__(self, store: RunStore, reference: str) -> None:
        self.data, self.reference, self.boot = RunData(store), reference, _bootstrap(store)

    def __call__(self, dataset: str, best: str, baseline: str) -> PairedBootstrap | None:
        """None where the run has not both scores, or no two classes of labels on them."""
        verdicts = self.data.verdicts(dataset)
        scores = self.data.detector_scores(dataset)
        if self.reference not in verdicts or not {best, baseline} <= set(scores.columns):
            return None
        y = verdicts[self.reference].to_numpy(float)
        a, b = scores[best].to_numpy(float), scores[baseline].to_numpy(float)
        keep = np.isfinite(y) & np.isfinite(a) & np.isfinite(b)
        if not keep.any() or y[keep].min() == y[keep].max():
            return None
        boot = self.boot
        return paired_auroc_bootstrap(
            y[keep],
            a[keep],
            b[keep],
            n_resamples=boot.n_resamples,
            confidence=boot.confidence,
            seed=boot.seed,
        )


def _beats(gap: float, paired: PairedBootstrap | None) -> bool:
    """Above length: the paired interval wholly above 0 where there is one, else the values."""
    if paired is None or math.isnan(paired.ci_low):
        return gap > 0
    return paired.ci_low > 0


def _against_length(
    metrics: pd.DataFrame, reference: str, pairs: _Pairs | None = None
) -> str | None:
    """Per dataset, the best detector's AUROC against the best length baseline's.

    With ``pairs`` (the run's records), their difference has its paired
    interval and a detector beats length only where that lies above 0.
    """
    if metrics.empty:
        return None
    auroc = metrics[
        (metrics["slice"] == "all")
        & (metrics["labeler"] == reference)
        & (metrics["metric"] == "auroc")
    ]
    compared: list[tuple[float, str, Any, Any, PairedBootstrap | None]] = []
    for ds in sorted(set(auroc["dataset"].astype(str))):
        part = auroc[auroc["dataset"].astype(str) == ds]
        base = part["detector"].astype(str).map(lambda k: k.split("[", 1)[0] == BASELINE)
        best, length = _best(part[~base]), _best(part[base])
        if best is not None and length is not None:
            gap = float(best["value"]) - float(length["value"])
            paired = None if pairs is None else pairs(ds, best["detector"], length["detector"])
            compared.append(
                (gap if paired is None else paired.difference, ds, best, length, paired)
            )
    if not compared:
        return None
    head = "Best detector against the response-length baseline"
    how = f"AUROC against {reference} labels, all responses"
    if any(c[4] is not None for c in compared):
        how += "; difference with a paired bootstrap interval"
    if len(compared) == 1:
        gap, ds, best, length, paired = compared[0]
        text = f"{head} on {ds} ({how}): {_versus(best, length, paired)}"
        if _beats(gap, paired):
            return text + "."
        if paired is not None and not math.isnan(paired.ci_low):
            return (
                f"{text}; it is not shown to beat length (the interval holds 0 or lies below "
                "it): it may only measure length."
            )
        return text + "; it does not beat length: it may only measure it."
    ahead = [c for c in compared if _beats(c[0], c[4])]
    behind = [c[1] for c in compared if not _beats(c[0], c[4])]
    paired_any = any(c[4] is not None for c in compared)
    above = "shown to beat it (the whole interval above 0)" if paired_any else "higher"
    text = f"{head} ({how}): {above} on {len(ahead)} of {len(compared)} datasets"
    if ahead:
        gap, ds, best, length, paired = max(ahead, key=lambda c: (c[0], c[1]))
        text += f", by most on {ds}: {_versus(best, length, paired)}"
    if behind:
        text += (
            f"; not on {_names(behind)}, where no detector "
            f"{'is shown to beat' if paired_any else 'beats'} length: "
            "there they may only measure length"
        )
    return text + "."


def _least_agreeing(agreement: pd.DataFrame, reference: str) -> str | None:
    """The labeler whose Cohen's kappa with ``reference`` is lowest, and the highest one."""
    if agreement.empty:
        return None
    kappa = agreement[
        (agreement["slice"] == "all")
        & (agreement["reference"] == reference)
        & (agreement["metric"] == "cohen_kappa")
        & agreement["value"].notna()
    ]
    if kappa.empty:
        return None
    ranked = kappa.assign(_v=kappa["value"].astype(float)).sort_values(["_v", "labeler", "dataset"])
    low = ranked.iloc[0]
    text = (
        f"The labeler that agrees least with {reference} labels: {low['labeler']} on "
        f"{low['dataset']}, Cohen's kappa {_with_ci(low)} (n = {int(low['n']):,}; "
        "0 = chance agreement, 1 = perfect)"
    )
    if len(ranked) > 1:
        high = ranked.iloc[-1]
        text += (
            f"; the most: {high['labeler']} on {high['dataset']}, kappa {_with_ci(high)}, of "
            f"{len(ranked)} labeler-dataset pairs"
        )
    return text + "."


def _wrong_way(evaluation: Evaluation, reference: str) -> str | None:
    """The detectors and labelers' scores whose whole AUROC interval lies below 0.5."""
    found: list[tuple[str, str, Any]] = []  # (what, dataset, row), all responses first
    for measured, truth, table in (
        ("detector", "labeler", evaluation.metrics),
        ("labeler", "reference", evaluation.agreement),
    ):
        if table is None or table.empty:
            continue
        rows = table[(table[truth] == reference) & (table["metric"] == "auroc")]
        for row in rows.to_dict("records"):
            if wrong_way("auroc", row["value"], row["ci_low"], row["ci_high"]):
                what = row[measured] if measured == "detector" else f"labeler {row[measured]}"
                found.append((str(what), str(row["dataset"]), row))
    if not found:
        return None
    found.sort(key=lambda f: (f[0], f[1], f[2]["slice"] != "all", str(f[2]["slice"])))
    first: dict[tuple[str, str], Any] = {}  # each score on each dataset: all responses first
    for what, ds, row in found:
        first.setdefault((what, ds), row)
    shown = []  # those flagged on all responses first
    for (what, ds), row in sorted(first.items(), key=lambda item: item[1]["slice"] != "all"):
        where = "all responses" if row["slice"] == "all" else f"slice {row['slice']}"
        shown.append(f"{what} on {ds} (AUROC {_with_ci(row)}, {where})")
    count = f"{len(first)} scores: " if len(first) > 1 else ""
    return (
        f"Ranked the wrong way round against {reference} labels, the whole AUROC interval "
        f"below 0.5: {count}{_names(shown)}. Check the sign of "
        f"{'each' if len(first) > 1 else 'its'} score before reading its other numbers."
    )


def headline_findings(evaluation: Evaluation, store: RunStore | None = None) -> tuple[str, ...]:
    """Two or three sentences that say what the evaluation found, read from its tables.

    Against ``evaluation.reference`` on all responses: the best detector
    against the length baseline per dataset (where it leads by most, where
    it does not lead), the labeler that agrees least with the reference
    (Cohen's kappa) and the one that agrees most, and, when there are any,
    the scores ranked the wrong way round (on any slice). A sentence with
    nothing to say is left out. Names in them are untrusted.

    Given the run (``store``), the difference from length is the report's key
    table's: with its paired bootstrap interval, a detector beating length
    only where that interval lies above 0. Without it, the two AUROCs are
    compared by value.
    """
    reference = evaluation.reference
    pairs = None if store is None else _Pairs(store, reference)
    sentences = (
        _against_length(evaluation.metrics, reference, pairs),
        _least_agreeing(evaluation.agreement, reference),
        _wrong_way(evaluation, reference),
    )
    return tuple(s for s in sentences if s)
