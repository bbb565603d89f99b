"""Tables, figures and the finding of the label-noise study."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from realitycheck.metrics import discordant_pairs, kendall_tau_b
from realitycheck.plots import new_figure, png_bytes
from realitycheck.store import StudyFigure, StudyTable
from realitycheck.studies.label_noise._raters import RaterTables

__all__ = ["Condition", "curve_figure", "effect_rows", "finding", "ranking_row", "tables"]

_METRICS = ("auroc", "pr_auc", "balanced_accuracy")


@dataclass(frozen=True)
class Condition:
    """One set of test labels: clean, or noisy by one source."""

    condition: str  # clean, random_flip, dissenting_worker, dissenting_label, weak_supervision
    source: str  # annotator / labeler / detector key, "" when none
    source_kind: str  # "annotator", "labeler", "detector" or ""
    draws: np.ndarray  # (R, n) labels, one row per draw
    natural_rate: float
    rate: float


def effect_rows(
    ds: str, cond: Condition, measured: pd.DataFrame, clean: pd.DataFrame
) -> pd.DataFrame:
    out = measured.copy()
    for metric in _METRICS:
        out[f"{metric}_change"] = out[metric].astype(float) - clean[metric].astype(float)
    out = out.rename_axis("detector").reset_index()
    out.insert(0, "dataset", ds)
    out.insert(1, "condition", cond.condition)
    out.insert(2, "source", cond.source)
    out.insert(3, "noise_rate", cond.rate)
    out["source_is_detector"] = out["detector"] == cond.source
    return out


def ranking_row(
    ds: str, cond: Condition, measured: pd.DataFrame, clean: pd.DataFrame
) -> dict[str, Any]:
    names = [d for d in clean.index if d != cond.source]
    a = clean.loc[names, "auroc"].astype(float).to_numpy()
    b = measured.loc[names, "auroc"].astype(float).to_numpy()
    change = b - a
    # Each reversed pair as (clean winner, clean loser).
    swaps = [(names[hi], names[lo]) for lo, hi in discordant_pairs(a, b)[0]]
    big = int(np.nanargmax(np.abs(change))) if np.isfinite(change).any() else None
    return {
        "dataset": ds,
        "condition": cond.condition,
        "source": cond.source,
        "source_kind": cond.source_kind,
        "natural_rate": cond.natural_rate,
        "noise_rate": cond.rate,
        "n_detectors": len(names),
        "mean_auroc_change": float(np.nanmean(change)) if np.isfinite(change).any() else np.nan,
        "largest_change_detector": "" if big is None else names[big],
        "largest_auroc_change": np.nan if big is None else float(change[big]),
        "kendall_tau": kendall_tau_b(a, b)[0],
        "n_swapped_pairs": len(swaps),
        "n_pairs": len(names) * (len(names) - 1) // 2,
        "swapped_pairs": "; ".join(f"{hi} > {lo}" for hi, lo in swaps),
    }


_EFFECT_COLUMNS = [
    "dataset",
    "condition",
    "source",
    "noise_rate",
    "detector",
    "auroc",
    "auroc_ci_low",
    "auroc_ci_high",
    "auroc_change",
    "pr_auc",
    "pr_auc_ci_low",
    "pr_auc_ci_high",
    "pr_auc_change",
    "balanced_accuracy",
    "balanced_accuracy_change",
    "threshold",
    "n",
    "n_positive",
    "interval",
    "source_is_detector",
]


def tables(
    effect: list[pd.DataFrame],
    ranking: list[dict[str, Any]],
    curves: list[pd.DataFrame],
    raters: RaterTables,
) -> list[StudyTable]:
    tables = []
    if effect:
        frame = pd.concat(effect, ignore_index=True).reindex(columns=_EFFECT_COLUMNS)
        frame["n"] = frame["n"].astype(int)
        frame["n_positive"] = frame["n_positive"].astype(float).round(1)
        tables += [
            StudyTable(
                "ranking_change",
                pd.DataFrame(ranking),
                "Per dataset and noisy label set: share of labels changed (natural = before "
                "the cap), mean AUROC change over detectors, Kendall's tau-b between the "
                "clean and noisy AUROC rankings and the pairs whose order reverses "
                "(listed as clean winner > clean loser).",
            ),
            StudyTable(
                "noise_effect",
                frame,
                "Every detector under every noisy label set: AUROC and PR-AUC with their "
                "interval (bootstrap over responses; for random flips the spread over the "
                "seeded draws, value = mean), balanced accuracy at a calibration-split "
                "threshold on the test split, and the change from clean labels.",
            ),
            StudyTable(
                "noise_curve",
                pd.concat(curves, ignore_index=True),
                "AUROC vs random-flip rate: mean, standard deviation and 2.5-97.5% range "
                "over the seeded draws.",
            ),
        ]
    if raters.raters:
        tables += [
            StudyTable(
                "rater_reliability",
                pd.DataFrame(raters.raters),
                "Each rater: items rated, share judged hallucinated, accuracy against the "
                "majority of the other raters and against the reference, and the "
                "Dawid-Skene sensitivity / specificity (reliability = their mean).",
            ),
            StudyTable(
                "aggregation",
                pd.DataFrame(raters.aggregation),
                "Majority vote (ties undecided) and Dawid-Skene vs each other and vs the "
                "reference labels: agreement and Cohen's kappa on items both decide.",
            ),
            StudyTable(
                "inter_rater_agreement",
                pd.DataFrame(raters.inter_rater),
                "Fleiss' kappa per number of ratings, Krippendorff's alpha (nominal) and "
                "the mean pairwise Cohen's kappa.",
            ),
            StudyTable(
                "pairwise_kappa",
                pd.concat(raters.pairwise, ignore_index=True),
                "Cohen's kappa and raw agreement of every pair of raters on the items both rated.",
            ),
        ]
    return tables


def curve_figure(ds: str, curve: pd.DataFrame, rate: float) -> StudyFigure:
    from matplotlib import colormaps

    fig, ax = new_figure(7.5, 4.2)
    palette = colormaps["tab20"]
    for i, (d, part) in enumerate(curve.groupby("detector", sort=True)):
        part = part.sort_values("rate")
        color = palette(i % 20)
        ax.plot(part["rate"], part["auroc_mean"], marker="o", ms=3, color=color, label=str(d))
        ax.fill_between(
            part["rate"], part["auroc_low"], part["auroc_high"], color=color, alpha=0.12, lw=0
        )
    ax.axvline(rate, color="grey", ls=":", lw=1)
    ax.axhline(0.5, color="black", lw=0.6)
    ax.set_xlabel("share of test labels flipped at random")
    ax.set_ylabel("AUROC")
    ax.set_title(f"{ds}: AUROC under random label flips")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return StudyFigure(
        f"noise_curve_{ds}",
        png_bytes(fig),
        f"{ds}: mean AUROC per detector vs the share of flipped test labels "
        "(band: 2.5-97.5% of the seeded draws).",
    )


def finding(ranking: list[dict[str, Any]], raters: RaterTables, rate: float) -> str:
    sentences = list(raters.sentences[:1])
    if not ranking:
        return " ".join(sentences) or "No dataset had reference labels and detector scores."
    frame = pd.DataFrame(ranking)
    flips = frame[frame["condition"] == "random_flip"]
    if len(flips):
        worst = (
            flips.iloc[int(np.nanargmin(flips["largest_auroc_change"].to_numpy(dtype=float)))]
            if flips["largest_auroc_change"].notna().any()
            else None
        )
        text = (
            f"Flipping {rate:.0%} of the test labels at random changes detector AUROC by "
            f"{flips['mean_auroc_change'].mean():+.3f} on average"
        )
        if worst is not None:
            text += (
                f" (at most {worst['largest_auroc_change']:+.3f}, "
                f"{worst['largest_change_detector']} on {worst['dataset']})"
            )
        text += (
            f" and reverses {int(flips['n_swapped_pairs'].sum())} of "
            f"{int(flips['n_pairs'].sum())} detector pairs."
        )
        sentences.append(text)
    weak = frame[
        (frame["condition"] == "weak_supervision")
        & (frame["source_kind"] == "labeler")  # a detector's own verdicts would be circular
        & frame["n_detectors"].gt(1)
        & frame["mean_auroc_change"].notna()
    ]
    if len(weak):
        top = weak.iloc[int(np.argmax(np.abs(weak["mean_auroc_change"].to_numpy(dtype=float))))]
        sentences.append(
            f"With {top['source']}'s verdicts as test labels on {top['dataset']} (weak "
            f"supervision, {top['noise_rate']:.0%} of labels changed), detector AUROC moves by "
            f"{top['mean_auroc_change']:+.3f} on average ({top['largest_change_detector']} "
            f"{top['largest_auroc_change']:+.3f}) and {int(top['n_swapped_pairs'])} of "
            f"{int(top['n_pairs'])} pairs reverse."
        )
    human = frame[frame["condition"].isin(["dissenting_worker", "dissenting_label"])]
    human = human[human["largest_auroc_change"].notna()]
    if len(human):
        top = human.iloc[int(np.argmax(human["n_swapped_pairs"].to_numpy(dtype=float)))]
        who = f"annotator {top['source']}" if top["source"] else "minority labels"
        sentences.append(
            f"Human noise (capped at {rate:.0%}) reverses at most {int(top['n_swapped_pairs'])} "
            f"of {int(top['n_pairs'])} pairs on {top['dataset']} ({who}, {top['noise_rate']:.0%} "
            f"of labels changed, Kendall tau {top['kendall_tau']:.2f})."
        )
    return " ".join(sentences)
