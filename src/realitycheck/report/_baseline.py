"""The key table of the report: the best detector against the response-length baseline.

Per dataset, against the reference labels on all responses: the detector with
the highest AUROC and the best ``length`` variant, each with its interval
(read from the metrics table), and their difference with a *paired* bootstrap
interval, computed here from the stored scores and labels: both AUROCs on the
same resamples of the responses both scored (the run's bootstrap settings),
so that a detector is said to beat length only where that interval lies above
0. A side with no AUROC says why (nothing scored, scores missing, every AUROC
undefined, or not evaluated), in a numbered note under the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap
from realitycheck.errors import InvalidInputError
from realitycheck.metrics import PairedBootstrap, paired_auroc_bootstrap
from realitycheck.report._cells import WRONG_WAY_NOTE, metric_text, wrong_way
from realitycheck.report._data import ReportData, dataset_scores, shown_key
from realitycheck.report._document import Inline, Table
from realitycheck.report._html import CardTable
from realitycheck.report._numbers import fmt_count, fmt_diff_ci, is_missing

__all__ = [
    "BASELINE",
    "Paired",
    "baseline_table",
    "beats_length",
    "bootstrap_of",
    "is_baseline",
    "paired_difference",
]

BASELINE = "length"
"""Name of the baseline detector (every ``length[...]`` variant counts)."""


def is_baseline(detector: str) -> bool:
    """Whether ``detector`` is a variant of the length baseline (``length``, ``length[...]``)."""
    return detector.split("[", 1)[0] == BASELINE


def _best(rows: pd.DataFrame) -> pd.Series | None:
    rows = rows[rows["value"].notna()]
    if rows.empty:
        return None
    ranked = rows.assign(v=rows["value"].astype(float)).sort_values(
        ["v", "detector"], ascending=[False, True]
    )
    return ranked.iloc[0]


def bootstrap_of(data: ReportData) -> Bootstrap:
    """The run's bootstrap settings (the manifest's evaluate entry), else the defaults."""
    config = data.manifest.get("config")
    evaluate = config.get("evaluate") if isinstance(config, Mapping) else None
    settings = evaluate.get("bootstrap") if isinstance(evaluate, Mapping) else None
    try:
        return Bootstrap(**settings) if isinstance(settings, Mapping) else Bootstrap()
    except (TypeError, InvalidInputError):
        return Bootstrap()


class Paired(NamedTuple):
    """``AUROC(best) - AUROC(baseline)`` on the responses both scored, with its paired interval."""

    result: PairedBootstrap
    n: int


def paired_difference(
    data: ReportData, dataset: str, reference: str, best: str, baseline: str, boot: Bootstrap
) -> Paired | str:
    """The paired-bootstrap difference of two detectors' AUROC on one dataset, or why there is none.

    The responses are those of ``dataset`` with a ``reference`` verdict and a
    finite score from both detectors; both AUROCs are computed on the same
    resamples of them (:func:`~realitycheck.metrics.paired_auroc_bootstrap`,
    the run's ``boot`` settings), so the interval accounts for their
    correlation, which the two separate intervals do not.
    """
    pivot = dataset_scores(data, dataset, reference, [best, baseline])
    a, b = pivot.scores.get(best), pivot.scores.get(baseline)
    if a is None or b is None:
        return "the scores it was computed from are not stored"
    keep = np.isfinite(pivot.y) & np.isfinite(a) & np.isfinite(b)
    y = pivot.y[keep]
    if y.size == 0 or y.min() == y.max():
        return f"no response has both scores and {reference} labels of both classes"
    result = paired_auroc_bootstrap(
        y,
        a[keep],
        b[keep],
        n_resamples=boot.n_resamples,
        confidence=boot.confidence,
        seed=boot.seed,
    )
    return Paired(result, int(keep.sum()))


def beats_length(paired: Paired) -> str:
    """``yes`` when the whole interval lies above 0, ``no: below`` under it, else ``not shown``."""
    low, high = paired.result.ci_low, paired.result.ci_high
    if is_missing(low) or is_missing(high):
        return "n/a"
    if low > 0:
        return "yes"
    return "no: below" if high < 0 else "not shown (CI holds 0)"


def _scored(data: ReportData, dataset: str) -> dict[str, bool]:
    """Each detector with a score record on ``dataset``: whether any of them has a value."""
    ids = set(data.responses.loc[data.responses["dataset"] == dataset, "response_id"])
    rows = data.scores[data.scores["response_id"].isin(ids)]
    return {str(d): bool(part["value"].notna().any()) for d, part in rows.groupby("detector")}


def _names(keys: list[str], shown: int = 3) -> str:
    more = len(keys) - shown
    return ", ".join(keys[:shown]) + (f" and {more} more" if more > 0 else "")


def _why_none(data: ReportData, ds: str, reference: str, rows: pd.DataFrame, base: bool) -> str:
    """Why a side of the key table (the length baseline, or the other detectors) has no AUROC."""
    what = "length baseline" if base else "detector other than the length baseline"
    if not rows.empty:  # measured, but every AUROC is undefined
        notes = sorted({str(n) for n in rows["note"] if not is_missing(n) and str(n)})
        one_class = (rows["n_positive"] == 0).all() or (rows["n_positive"] == rows["n"]).all()
        why = (
            f"the {reference} labels of the responses scored hold one class only"
            if one_class
            else "; ".join(notes) or "too few responses scored"
        )
        return f"{ds}: the AUROC of every {what} against {reference} is undefined ({why})."
    scored = {k: v for k, v in _scored(data, ds).items() if is_baseline(k) == base}
    if not scored:
        elsewhere = sorted(
            {str(d) for d in data.scores["detector"].dropna() if is_baseline(str(d)) == base}
        )
        where = (
            f" ({_names(elsewhere)} {'was' if len(elsewhere) == 1 else 'were'} scored on other "
            "datasets only)"
            if elsewhere
            else ""
        )
        return f"{ds}: no {what} was scored on this dataset{where}."
    valued = sorted(k for k, v in scored.items() if v)
    if not valued:
        return f"{ds}: every score of {_names(sorted(scored))} is missing (the notes give why)."
    return (
        f"{ds}: {_names(valued)} {'has' if len(valued) == 1 else 'have'} scores but no AUROC "
        f"against {reference} (the evaluate stage left it out, or ran before it was scored)."
    )


def baseline_table(data: ReportData, reference: str) -> Table | None:
    """The key table (see the module docstring); ``None`` when nothing is measured."""
    m = data.metrics
    if m.empty:
        return None
    auroc = m[(m["slice"] == "all") & (m["labeler"] == reference) & (m["metric"] == "auroc")]
    boot = bootstrap_of(data)
    rows: list[tuple[Inline, ...]] = []
    reasons: dict[str, int] = {}

    def mark(reason: str) -> str:
        return f"[{reasons.setdefault(reason, len(reasons) + 1)}]"

    flagged = False
    for ds in sorted(set(auroc["dataset"])):
        part = auroc[auroc["dataset"] == ds]
        base = part["detector"].map(is_baseline)
        best, length = _best(part[~base]), _best(part[base])
        cells: list[Inline] = [ds]
        for row, side in ((best, False), (length, True)):
            if row is None:
                why = mark(_why_none(data, ds, reference, part[base == side], side))
                cells += [f"none measured {why}", "n/a"]
            else:
                cells += [
                    shown_key(data, str(row["detector"])),
                    metric_text("auroc", row["value"], row["ci_low"], row["ci_high"]),
                ]
        gap: list[Inline] = ["n/a", "n/a", "n/a"]
        if best is not None and length is not None:
            found = paired_difference(
                data, ds, reference, str(best["detector"]), str(length["detector"]), boot
            )
            if isinstance(found, Paired):
                r = found.result
                gap = [fmt_diff_ci(r.difference, r.ci_low, r.ci_high)]
                gap += [beats_length(found), fmt_count(found.n)]
            else:
                gap = [f"n/a {mark(f'{ds}: no paired difference: {found}.')}", "n/a", "n/a"]
        rows.append((*cells, *gap))
        flagged |= any(
            row is not None and wrong_way("auroc", row["value"], row["ci_low"], row["ci_high"])
            for row in (best, length)
        )
    if not rows:
        return None
    level = f"{100 * boot.confidence:g}%"
    return CardTable(
        columns=(
            "dataset",
            "best detector",
            "its AUROC [CI]",
            "length baseline",
            "baseline AUROC [CI]",
            "difference [paired CI]",
            "beats length?",
            "n paired",
        ),
        rows=tuple(rows),
        align="llrlrrlr",
        caption=f"Best detector against the response-length baseline, AUROC against {reference} "
        "labels on all responses (0.5 = chance). Difference: the best detector's AUROC minus "
        "the baseline's on the n responses both scored, with a paired bootstrap "
        f"{level} interval (both AUROCs on the same {boot.n_resamples:,} resamples, seed "
        f"{boot.seed}). A detector whose interval holds 0 is not shown to beat length: it may "
        "only be measuring length.",
        footnotes=((WRONG_WAY_NOTE,) if flagged else ())
        + tuple(f"[{k}] {reason}" for reason, k in reasons.items()),
    )
