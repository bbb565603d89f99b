"""Parts of the labeler-agreement study: error causes, small tables, figures, the finding."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from realitycheck.plots import new_figure, png_bytes
from realitycheck.store import RunData, StudyFigure
from realitycheck.studies._shift_common import fmt

__all__ = [
    "CAUSES",
    "TABLES",
    "agreement_finding",
    "both_right",
    "empty_table",
    "error_causes",
    "label_distribution",
    "plot_errors",
    "plot_kappa",
    "reference_words",
]

CAUSES: tuple[tuple[str, str], ...] = (
    ("false positive", "long but correct"),
    ("false positive", "paraphrase with no overlap"),
    ("false positive", "other false positive"),
    ("false negative", "wrong answer with high overlap"),
    ("false negative", "other false negative"),
)
"""Every (error, cause) pair, in the order the rules are applied."""


def error_causes(
    *,
    words: pd.Series,
    truth: npt.NDArray[np.bool_],
    pred: npt.NDArray[np.bool_],
    similarity: pd.Series,
    reference_words: pd.Series,
    embedding_correct: pd.Series | None,
    long_cut: float,
    long_ratio: float,
    low_overlap: float,
    high_overlap: float,
) -> pd.DataFrame:
    """Give each error of a lexical labeler one cause (rules in ``LabelerAgreement``).

    Args:
        words: Word length of each item's response.
        truth: Reference labels, True = hallucinated.
        pred: The labeler's verdicts, True = hallucinated.
        similarity: The labeler's similarity (higher = closer), NaN if unknown.
        reference_words: Words of the item's longest reference answer, NaN if none.
        embedding_correct: Whether an embedding labeler judged the item correct,
            or None when no embedding labeler ran.
        long_cut: A response with more words than this is long.
        long_ratio: A response with more than this many times its reference's words is long.
        low_overlap: Similarity below which there is no overlap.
        high_overlap: Similarity from which the overlap is high.

    Returns:
        One row per (error, cause): ``error, cause, n, share_of_errors,
        share_of_items, n_errors, n_items``; every cause appears, with n = 0 if
        it never occurs.
    """
    w = words.to_numpy(dtype=float)
    sim = similarity.to_numpy(dtype=float)
    ref = reference_words.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        long = (w > long_cut) | (np.isfinite(ref) & (w > long_ratio * ref))
        low, high = sim < low_overlap, sim >= high_overlap
    semantic = (
        np.ones(w.size, dtype=bool)
        if embedding_correct is None
        else embedding_correct.to_numpy(dtype=bool)
    )
    fp, fn = pred & ~truth, ~pred & truth
    paraphrase = fp & ~long & low & semantic
    masks = [fp & long, paraphrase, fp & ~long & ~paraphrase, fn & high, fn & ~high]
    n_errors = int(fp.sum() + fn.sum())
    rows = []
    for (error, cause), mask in zip(CAUSES, masks, strict=True):
        n = int(mask.sum())
        rows.append(
            {
                "error": error,
                "cause": cause,
                "n": n,
                "share_of_errors": n / n_errors if n_errors else np.nan,
                "share_of_items": n / w.size if w.size else np.nan,
                "n_errors": n_errors,
                "n_items": int(w.size),
            }
        )
    return pd.DataFrame(rows)


def plot_kappa(agreement: pd.DataFrame, reference: str) -> StudyFigure:
    """Horizontal bars of Cohen's kappa (with CI) per dataset and labeler."""
    kappa = agreement[agreement["metric"] == "cohen_kappa"].sort_values(["dataset", "labeler"])
    fig, ax = new_figure(6.5, 0.9 + 0.35 * len(kappa))
    positions = np.arange(len(kappa))
    value = kappa["value"].to_numpy(dtype=float)
    low = np.nan_to_num(value - kappa["ci_low"].to_numpy(dtype=float))
    high = np.nan_to_num(kappa["ci_high"].to_numpy(dtype=float) - value)
    datasets = sorted(kappa["dataset"].unique())
    colors = [f"C{datasets.index(d) % 10}" for d in kappa["dataset"]]
    ax.barh(positions, value, xerr=[low, high], color=colors, capsize=3)
    names = [f"{d} / {lab}" for d, lab in zip(kappa["dataset"], kappa["labeler"], strict=True)]
    ax.set_yticks(positions, names)
    ax.invert_yaxis()
    ax.axvline(0, color="grey", linewidth=1)
    ax.set_xlabel(f"Cohen's kappa against {reference} (95% CI)")
    ax.set_title("Agreement of each labeler with the reference labels")
    return StudyFigure(
        "kappa",
        png_bytes(fig),
        f"Cohen's kappa of each automatic labeler against {reference}; 0 = chance agreement.",
    )


def plot_errors(errors: pd.DataFrame) -> StudyFigure:
    """Stacked bars: share of items per error cause, per dataset and lexical labeler."""
    table = errors.pivot_table(
        index=["dataset", "labeler"], columns="cause", values="share_of_items", sort=True
    )
    table = table[[c for _, c in CAUSES if c in table.columns]]
    fig, ax = new_figure(7.0, 0.9 + 0.4 * len(table))
    left = np.zeros(len(table))
    positions = np.arange(len(table))
    for k, cause in enumerate(table.columns):
        width = table[cause].to_numpy(dtype=float)
        ax.barh(positions, width, left=left, color=f"C{k}", label=cause)
        left += width
    ax.set_yticks(positions, [f"{d} / {lab}" for d, lab in table.index])
    ax.invert_yaxis()
    ax.set_xlabel("share of labelled items")
    ax.set_title("Errors of lexical labelers by cause")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.15), ncol=3)
    return StudyFigure(
        "errors",
        png_bytes(fig),
        "Each lexical labeler's errors against the reference, by cause, as a share of the "
        "items it labelled (rules in the errors table caption).",
    )


TABLES: dict[str, list[str]] = {
    "agreement": [
        "dataset",
        "labeler",
        "reference",
        "kind",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "n",
        "n_positive",
        "n_excluded",
    ],
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


def reference_words(data: RunData, frame: pd.DataFrame) -> pd.Series:
    """Words of each response's longest reference answer (NaN without references)."""
    refs = data.examples.set_index("example_id")["references"]
    longest = refs.map(lambda rs: max((len(r.split()) for r in rs), default=np.nan))
    return pd.Series(longest.reindex(frame["example_id"]).to_numpy(dtype=float), index=frame.index)


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
