"""Tables, figures and the finding of the label-noise study."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from realitycheck.metrics import discordant_pairs, kendall_tau_b
from realitycheck.store import StudyFigure, StudyTable
from realitycheck.studies.label_noise._raters import RaterTables
from realitycheck.studies.label_noise._signals import DETECTOR, LABELER, Signals
from realitycheck.studies.plots import (
    PAGE_WIDTH,
    TEXT_SIZE,
    heatmap,
    legend_below,
    new_figure,
    png_bytes,
    set_title,
)

__all__ = [
    "Condition",
    "curve_figure",
    "effect_rows",
    "finding",
    "rank_figure",
    "ranking_row",
    "tables",
]

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
    ds: str, cond: Condition, measured: pd.DataFrame, clean: pd.DataFrame, signals: Signals
) -> pd.DataFrame:
    out = measured.copy()
    for metric in _METRICS:
        out[f"{metric}_change"] = out[metric].astype(float) - clean[metric].astype(float)
    out = out.rename_axis("signal").reset_index()
    out.insert(0, "dataset", ds)
    out.insert(1, "condition", cond.condition)
    out.insert(2, "source", cond.source)
    out.insert(3, "noise_rate", cond.rate)
    out["signal_kind"] = out["signal"].map(signals.kind)
    out["score_used"] = out["signal"].map(signals.score_used)
    out["is_noise_source"] = out["signal"] == cond.source
    return out


def _mean(values: np.ndarray) -> float:
    return float(np.nanmean(values)) if np.isfinite(values).any() else np.nan


def ranking_row(
    ds: str,
    cond: Condition,
    measured: pd.DataFrame,
    clean: pd.DataFrame,
    kinds: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Compare the clean and noisy AUROC rankings of every signal but the noise source.

    ``kinds`` maps each signal to ``detector`` or ``labeler`` (None: all detectors).
    """
    kinds = kinds or {}
    names = [d for d in clean.index if d != cond.source]
    kind = np.array([kinds.get(d, DETECTOR) for d in names])
    a = clean.loc[names, "auroc"].astype(float).to_numpy()
    b = measured.loc[names, "auroc"].astype(float).to_numpy()
    change = b - a
    # Each reversed pair as (clean winner, clean loser).
    pairs = discordant_pairs(a, b)[0]
    swaps = [(names[hi], names[lo]) for lo, hi in pairs]
    mixed = sum(kind[lo] != kind[hi] for lo, hi in pairs)
    big = int(np.nanargmax(np.abs(change))) if np.isfinite(change).any() else None
    return {
        "dataset": ds,
        "condition": cond.condition,
        "source": cond.source,
        "source_kind": cond.source_kind,
        "natural_rate": cond.natural_rate,
        "noise_rate": cond.rate,
        "n_ranked": len(names),
        "n_detectors": int((kind == DETECTOR).sum()),
        "n_labelers": int((kind == LABELER).sum()),
        "mean_auroc_change": _mean(change),
        "mean_auroc_change_detectors": _mean(change[kind == DETECTOR]),
        "mean_auroc_change_labelers": _mean(change[kind == LABELER]),
        "largest_change_signal": "" if big is None else names[big],
        "largest_auroc_change": np.nan if big is None else float(change[big]),
        "kendall_tau": kendall_tau_b(a, b)[0],
        "n_swapped_pairs": len(swaps),
        "n_swapped_detector_labeler": int(mixed),
        "n_pairs": len(names) * (len(names) - 1) // 2,
        "swapped_pairs": "; ".join(f"{hi} > {lo}" for hi, lo in swaps),
    }


_EFFECT_COLUMNS = [
    "dataset",
    "condition",
    "source",
    "noise_rate",
    "signal",
    "signal_kind",
    "score_used",
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
    "is_noise_source",
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
                "the cap), mean AUROC change over the ranked detectors and labelers (and over "
                "each kind), Kendall's tau-b between the clean and noisy AUROC rankings of "
                "detectors and labelers together, and the pairs whose order reverses (listed "
                "as clean winner > clean loser; n_swapped_detector_labeler = those between a "
                "detector and a labeler). The noise source is left out of its own ranking.",
            ),
            StudyTable(
                "noise_effect",
                frame,
                "Every detector and labeler (signal_kind) under every noisy label set, ranked "
                "by a detector's value or a labeler's continuous score, else its verdict as a "
                "0/1 score (score_used): AUROC and PR-AUC with their interval (bootstrap over "
                "responses; for random flips the spread over the seeded draws, value = mean), "
                "balanced accuracy at a calibration-split threshold on the test split (0.5 "
                "for a 0/1 score), and the change from clean labels.",
            ),
            StudyTable(
                "noise_curve",
                pd.concat(curves, ignore_index=True),
                "AUROC of every detector and labeler vs random-flip rate: mean, standard "
                "deviation and 2.5-97.5% range over the seeded draws.",
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

    fig, ax = new_figure(PAGE_WIDTH, 3.6)
    palette = colormaps["tab20"]
    for i, ((kind, d), part) in enumerate(curve.groupby(["signal_kind", "signal"], sort=True)):
        part = part.sort_values("rate")
        color = palette(i % 20)
        ax.plot(
            part["rate"], part["auroc_mean"], marker="o" if kind == DETECTOR else "s", ms=3,
            color=color, ls="-" if kind == DETECTOR else "--", label=f"{d} ({kind})",
        )  # fmt: skip
        ax.fill_between(
            part["rate"], part["auroc_low"], part["auroc_high"], color=color, alpha=0.12, lw=0
        )
    ax.axvline(rate, color="grey", ls=":", lw=1)
    ax.axhline(0.5, color="black", lw=0.6)
    ax.set_xlabel("share of test labels flipped at random", fontsize=TEXT_SIZE)
    ax.set_ylabel("AUROC", fontsize=TEXT_SIZE)
    set_title(fig, f"{ds}: AUROC under random label flips")
    legend_below(fig, *ax.get_legend_handles_labels())
    return StudyFigure(
        f"noise_curve_{ds}",
        png_bytes(fig),
        f"{ds}: mean AUROC per detector (solid) and labeler (dashed) vs the share of "
        "flipped test labels (band: 2.5-97.5% of the seeded draws).",
    )


def rank_figure(ds: str, effect: pd.DataFrame) -> StudyFigure | None:
    """Each signal's AUROC rank (1 = best) under the clean and every noisy label set.

    Signals (detectors, then labelers, by clean rank) one way, label sets the
    other, the longer list down the side. A signal is blank where it is the
    noise source (left out of that ranking).
    """
    mine = effect[effect["dataset"] == ds]
    if mine["signal"].nunique() < 2:
        return None
    column = np.where(
        mine["source"] != "", mine["condition"] + ": " + mine["source"], mine["condition"]
    )
    mine = mine.assign(column=column)
    ranked = mine[~mine["is_noise_source"].astype(bool)]
    ranks = ranked.assign(
        rank=ranked.groupby("column")["auroc"].rank(ascending=False, method="min")
    ).pivot(index="signal", columns="column", values="rank")
    columns = list(dict.fromkeys(mine["column"]))
    kinds = mine.drop_duplicates("signal").set_index("signal")["signal_kind"]
    ranks = ranks.reindex(columns=columns)
    ranks = ranks.assign(_kind=kinds.reindex(ranks.index) != DETECTOR)
    ranks = ranks.sort_values(["_kind", "clean"]).drop(columns="_kind")
    change = ranks.sub(ranks["clean"], axis=0)
    limit = max(
        1.0, float(np.nanmax(np.abs(change.to_numpy()))) if change.notna().any().any() else 1
    )
    signals = list(ranks.index)
    values, shift = ranks.to_numpy(float), change.to_numpy(float)
    across = len(columns) > len(signals)  # the longer list down the side: the figure grows taller
    if across:
        values, shift = values.T, shift.T
    cells = [[f"{v:.0f}" if np.isfinite(v) else "" for v in row] for row in values]
    fig = heatmap(
        np.ma.masked_invalid(shift),
        columns if across else signals,
        signals if across else columns,
        heading=f"{ds}: AUROC rank of detectors and labelers per label set",
        cells=cells,
        colorbar="rank change from clean (+ = worse)",
        cmap="RdBu_r",
        vmin=-limit,
        vmax=limit,
    )
    n_detectors = int((kinds.reindex(signals) == DETECTOR).sum())
    if 0 < n_detectors < len(signals):  # detectors first, then labelers, split by a line
        split = fig.axes[0].axvline if across else fig.axes[0].axhline
        split(n_detectors - 0.5, color="black", linewidth=1.5)
    return StudyFigure(
        f"noise_ranks_{ds}",
        png_bytes(fig),
        f"{ds}: AUROC rank (1 = best; number in the cell where it fits) of every detector and "
        "labeler (detectors first, then labelers after the black line) under the clean labels "
        "and each noisy label set (colour: change from the clean rank, red = worse); blank "
        "where the signal is the noise source and is left out of that ranking.",
    )


def _who(n_detectors: int, n_labelers: int) -> str:
    parts = [f"{n_detectors} detector(s)"] if n_detectors else []
    parts += [f"{n_labelers} labeler(s)"] if n_labelers else []
    return " and ".join(parts) or "no signal"


def finding(ranking: list[dict[str, Any]], raters: RaterTables, rate: float) -> str:
    sentences = list(raters.sentences[:1])
    if not ranking:
        return (
            " ".join(sentences)
            or "No dataset had reference labels and detectors or labelers to rank."
        )
    frame = pd.DataFrame(ranking)
    flips = frame[frame["condition"] == "random_flip"]
    if len(flips):
        worst = (
            flips.iloc[int(np.nanargmin(flips["largest_auroc_change"].to_numpy(dtype=float)))]
            if flips["largest_auroc_change"].notna().any()
            else None
        )
        text = (
            f"Flipping {rate:.0%} of the test labels at random changes the AUROC of "
            f"{_who(int(flips['n_detectors'].max()), int(flips['n_labelers'].max()))} by "
            f"{flips['mean_auroc_change'].mean():+.3f} on average"
        )
        if worst is not None:
            text += (
                f" (at most {worst['largest_auroc_change']:+.3f}, "
                f"{worst['largest_change_signal']} on {worst['dataset']})"
            )
        text += (
            f" and reverses {int(flips['n_swapped_pairs'].sum())} of "
            f"{int(flips['n_pairs'].sum())} pairs"
        )
        if flips["n_labelers"].gt(0).any() and flips["n_detectors"].gt(0).any():
            text += (
                f" ({int(flips['n_swapped_detector_labeler'].sum())} between a detector and "
                "a labeler)"
            )
        sentences.append(text + ".")
    weak = frame[
        (frame["condition"] == "weak_supervision")
        & (frame["source_kind"] == "labeler")  # a detector's own verdicts would be circular
        & frame["n_ranked"].gt(1)
        & frame["mean_auroc_change"].notna()
    ]
    if len(weak):
        top = weak.iloc[int(np.argmax(np.abs(weak["mean_auroc_change"].to_numpy(dtype=float))))]
        text = (
            f"With {top['source']}'s verdicts as test labels on {top['dataset']} (weak "
            f"supervision, {top['noise_rate']:.0%} of labels changed), AUROC moves by "
            f"{top['mean_auroc_change']:+.3f} on average"
        )
        if top["n_detectors"] and top["n_labelers"]:
            text += (
                f" (detectors {top['mean_auroc_change_detectors']:+.3f}, the other labelers "
                f"{top['mean_auroc_change_labelers']:+.3f})"
            )
        text += (
            f", {top['largest_change_signal']} {top['largest_auroc_change']:+.3f}, and "
            f"{int(top['n_swapped_pairs'])} of {int(top['n_pairs'])} pairs reverse."
        )
        sentences.append(text)
        mixed = weak[weak["n_detectors"].gt(0) & weak["n_labelers"].gt(0)]
        gap = (mixed["mean_auroc_change_labelers"] - mixed["mean_auroc_change_detectors"]).dropna()
        if len(gap) and gap.max() > 0:
            row = mixed.loc[gap.index[int(np.argmax(gap.to_numpy()))]]
            sentences.append(
                f"Weak labels favour the other labelers most with {row['source']}'s verdicts "
                f"on {row['dataset']}: they gain {row['mean_auroc_change_labelers']:+.3f} AUROC "
                f"on average against {row['mean_auroc_change_detectors']:+.3f} for detectors "
                "(paper 002 finds LLM weak labels overrating LLM-based detectors)."
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
