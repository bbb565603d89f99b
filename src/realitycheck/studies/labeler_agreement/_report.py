"""Small tables, the kappa figure and the finding of the labeler-agreement study."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from realitycheck.analysis import INTERVAL_COLUMNS
from realitycheck.store import StudyFigure
from realitycheck.studies import fmt
from realitycheck.studies.plots import (
    NAME_WIDTH,
    PAGE_WIDTH,
    TEXT_SIZE,
    fit_pairs,
    new_figure,
    png_bytes,
    set_title,
    wrap,
)

__all__ = [
    "TABLES",
    "agreement_finding",
    "both_right",
    "empty_table",
    "label_distribution",
    "plot_kappa",
]

TABLES: dict[str, list[str]] = {
    "agreement": ["dataset", "labeler", "reference", "kind", *INTERVAL_COLUMNS],
    "threshold": [
        "dataset",
        "labeler",
        "own_rule",
        "f1_weighted_test_own",
        "threshold_on",
        "best_threshold",
        "best_rule",
        "f1_weighted_calibration",
        "f1_weighted_test",
        "n_calibration",
        "n_test",
        "note",
    ],
    "distribution": [
        "dataset",
        "labeler",
        "n",
        "share_hallucinated",
        "share_correct",
        "share_missing",
    ],
    "both_right": [
        "dataset",
        "labeler_a",
        "labeler_b",
        "n",
        "both_right",
        "only_a_right",
        "only_b_right",
        "both_wrong",
    ],
    "errors": [
        "dataset",
        "labeler",
        "error",
        "cause",
        "n",
        "share_of_errors",
        "share_of_items",
        "n_errors",
        "n_items",
    ],
}


def empty_table(table: str) -> pd.DataFrame:
    return pd.DataFrame(columns=TABLES[table])


def plot_kappa(agreement: pd.DataFrame, reference: str) -> StudyFigure:
    """Horizontal bars of Cohen's kappa (with CI) per dataset and labeler."""
    kappa = agreement[agreement["metric"] == "cohen_kappa"].sort_values(["dataset", "labeler"])
    fig, ax = new_figure(PAGE_WIDTH, 0.8 + 0.3 * len(kappa))
    positions = np.arange(len(kappa))
    value = kappa["value"].to_numpy(dtype=float)
    low = np.nan_to_num(value - kappa["ci_low"].to_numpy(dtype=float))
    high = np.nan_to_num(kappa["ci_high"].to_numpy(dtype=float) - value)
    datasets = sorted(kappa["dataset"].unique())
    colors = [f"C{datasets.index(d) % 10}" for d in kappa["dataset"]]
    ax.barh(positions, value, xerr=[low, high], color=colors, capsize=3)
    ax.set_yticks(positions, fit_pairs(zip(kappa["dataset"], kappa["labeler"], strict=True)))
    ax.invert_yaxis()
    ax.axvline(0, color="grey", linewidth=1)
    axis = (PAGE_WIDTH - NAME_WIDTH - 0.4) * 72
    xlabel = wrap(f"Cohen's kappa against {reference} (95% CI)", axis, TEXT_SIZE)
    ax.set_xlabel(xlabel, fontsize=TEXT_SIZE)
    set_title(fig, "Agreement of each labeler with the reference labels")
    return StudyFigure(
        "kappa",
        png_bytes(fig),
        f"Cohen's kappa of each automatic labeler against {reference}; 0 = chance agreement.",
    )


def label_distribution(dataset: str, verdicts: pd.DataFrame) -> pd.DataFrame:
    n = len(verdicts)
    return pd.DataFrame(
        {
            "dataset": dataset,
            "labeler": verdicts.columns,
            "n": n,
            "share_hallucinated": [(verdicts[c] == 1).sum() / n for c in verdicts.columns],
            "share_correct": [(verdicts[c] == 0).sum() / n for c in verdicts.columns],
            "share_missing": [verdicts[c].isna().sum() / n for c in verdicts.columns],
        }
    )


def both_right(dataset: str, y: pd.Series, verdicts: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for a, b in itertools.combinations(verdicts.columns, 2):
        ok = y.notna() & verdicts[a].notna() & verdicts[b].notna()
        right_a, right_b = verdicts.loc[ok, a] == y[ok], verdicts.loc[ok, b] == y[ok]
        n = int(ok.sum())
        shares = [
            float(s.sum() / n) if n else np.nan
            for s in (
                right_a & right_b,
                right_a & ~right_b,
                ~right_a & right_b,
                ~right_a & ~right_b,
            )
        ]
        rows.append([dataset, a, b, n, *shares])
    return pd.DataFrame(rows, columns=TABLES["both_right"])


def agreement_finding(frames: dict[str, pd.DataFrame], reference: str) -> str:
    agreement = frames["agreement"]
    if agreement.empty:
        return (
            f"No dataset has both {reference} labels and an automatic labeler, so no "
            "agreement could be measured."
        )
    sentences = []
    kappa = agreement[agreement["metric"] == "cohen_kappa"]
    accuracy = agreement[agreement["metric"] == "accuracy"].set_index(["dataset", "labeler"])
    biggest = kappa.groupby("dataset")["n"].max().sort_values(ascending=False).index[:2]
    for dataset in biggest:
        rows = kappa[kappa["dataset"] == dataset].sort_values("value", ascending=False)

        def said(r: Any, dataset: str = dataset) -> str:
            share = accuracy.loc[(dataset, r.labeler), "value"]
            return (
                f"{r.labeler} ({share:.0%} of responses, kappa {fmt(r.value, 2)} "
                f"[{fmt(r.ci_low, 2)}, {fmt(r.ci_high, 2)}])"
            )

        first, last = rows.iloc[0], rows.iloc[-1]
        if len(rows) == 1:
            text = f"{said(first)} agrees with {reference}"
        else:
            text = f"{said(first)} agrees best with {reference} and {said(last)} worst"
        sentences.append(f"On {dataset}, {text}.")
    errors = frames["errors"]
    if not errors.empty:
        totals = errors.groupby(["dataset", "labeler"], as_index=False)["n_errors"].first()
        row = totals.iloc[int(np.argmax(totals["n_errors"].to_numpy()))]
        dataset, labeler = row["dataset"], row["labeler"]
        mine = errors[(errors["dataset"] == dataset) & (errors["labeler"] == labeler)]
        top = mine.sort_values("n", ascending=False).iloc[:3]
        parts = [f"{r.share_of_errors:.0%} '{r.cause}'" for r in top.itertuples()]
        sentences.append(
            f"Of {labeler}'s {int(row['n_errors']):,} errors on {dataset}, "
            + ", ".join(parts)
            + "."
        )
    threshold = frames["threshold"].dropna(subset=["f1_weighted_test", "f1_weighted_test_own"])
    if not threshold.empty:
        gain = threshold["f1_weighted_test"] - threshold["f1_weighted_test_own"]
        r = threshold.iloc[int(np.argmax(gain.to_numpy(dtype=float)))]
        sentences.append(
            f"Re-tuning {r['labeler']} on {r['dataset']}'s calibration split ({r['best_rule']}) "
            f"moves its weighted F1 on the test split from {fmt(r['f1_weighted_test_own'])} to "
            f"{fmt(r['f1_weighted_test'])}."
        )
    return " ".join(sentences[:5])
