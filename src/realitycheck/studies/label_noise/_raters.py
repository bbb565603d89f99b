"""The rater tables of the label-noise study: reliabilities, aggregation and agreement."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from realitycheck import analysis as A
from realitycheck import metrics as M

__all__ = ["MIN_OVERLAP", "RaterTables", "rater_tables"]

MIN_OVERLAP = 10
"""Pairs of raters sharing fewer items than this get no Cohen's kappa."""


@dataclass
class RaterTables:
    """Rows of the four rater tables, accumulated over datasets."""

    raters: list[dict[str, object]] = field(default_factory=list)
    aggregation: list[dict[str, object]] = field(default_factory=list)
    inter_rater: list[dict[str, object]] = field(default_factory=list)
    pairwise: list[pd.DataFrame] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)


def _compare(a: np.ndarray, b: np.ndarray) -> tuple[float, float, int]:
    both = ~np.isnan(a) & ~np.isnan(b)
    n = int(both.sum())
    if n == 0:
        return float("nan"), float("nan"), 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        kappa = float(M.cohen_kappa(a[both], b[both]))
    return float((a[both] == b[both]).mean()), kappa, n


def rater_tables(
    out: RaterTables,
    dataset: str,
    kind: str,
    names: Sequence[str],
    matrix: np.ndarray,
    reference: np.ndarray,
    reference_key: str,
) -> None:
    """Append one dataset's rater rows to ``out``.

    Args:
        out: Where the rows go.
        dataset: The dataset name.
        kind: ``"annotators"`` or ``"automatic labelers"``.
        names: One name per column of ``matrix``.
        matrix: Ratings, items x raters, 1.0 / 0.0 / NaN.
        reference: The reference label per item (1.0 / 0.0 / NaN).
        reference_key: The reference labeler's key, for the tables.
    """
    ds_fit = A.dawid_skene(matrix)
    majority = A.majority_vote(matrix)
    for r, name in enumerate(names):
        own = matrix[:, r]
        others = A.leave_one_out_majority(matrix, r)
        acc_maj, _, n_maj = _compare(own, others)
        acc_ref, kappa_ref, n_ref = _compare(own, reference)
        sens, spec = ds_fit.sensitivity[r], ds_fit.specificity[r]
        out.raters.append(
            {
                "dataset": dataset,
                "rater_kind": kind,
                "rater": name,
                "n_items": int((~np.isnan(own)).sum()),
                "hallucinated_share": float(np.nanmean(own)) if (~np.isnan(own)).any() else np.nan,
                "accuracy_vs_others_majority": acc_maj,
                "n_vs_others_majority": n_maj,
                "accuracy_vs_reference": acc_ref,
                "kappa_vs_reference": kappa_ref,
                "n_vs_reference": n_ref,
                "ds_sensitivity": sens,
                "ds_specificity": spec,
                "ds_reliability": (sens + spec) / 2,
            }
        )
    for label, a, b in (
        ("dawid_skene vs majority_vote", ds_fit.labels, majority),
        (f"dawid_skene vs {reference_key}", ds_fit.labels, reference),
        (f"majority_vote vs {reference_key}", majority, reference),
    ):
        agreement, kappa, n = _compare(a, b)
        out.aggregation.append(
            {
                "dataset": dataset,
                "rater_kind": kind,
                "comparison": label,
                "agreement": agreement,
                "cohen_kappa": kappa,
                "n": n,
                "n_with_a": int((~np.isnan(a)).sum()),
                "n_with_b": int((~np.isnan(b)).sum()),
            }
        )
    base = {"dataset": dataset, "rater_kind": kind, "n_raters": len(names)}
    fleiss = A.fleiss_by_count(matrix)
    for k, n_items, kappa in fleiss:
        out.inter_rater.append(
            base
            | {
                "measure": "fleiss_kappa",
                "scope": f"items with exactly {k} ratings",
                "value": kappa,
                "n_items": n_items,
            }
        )
    alpha = A.krippendorff_alpha(matrix)
    n_multi = int(((~np.isnan(matrix)).sum(axis=1) >= 2).sum())
    out.inter_rater.append(
        base
        | {
            "measure": "krippendorff_alpha",
            "scope": "items with >= 2 ratings (nominal, missing allowed)",
            "value": alpha,
            "n_items": n_multi,
        }
    )
    pairs = A.pairwise_kappa(matrix, names, min_overlap=MIN_OVERLAP)
    out.inter_rater.append(
        base
        | {
            "measure": "mean_pairwise_cohen_kappa",
            "scope": f"{len(pairs)} rater pairs sharing >= {MIN_OVERLAP} items",
            "value": float(pairs["cohen_kappa"].mean()) if len(pairs) else np.nan,
            "n_items": n_multi,
        }
    )
    out.pairwise.append(pairs.assign(dataset=dataset, rater_kind=kind))
    out.sentences.append(_sentence(dataset, kind, names, ds_fit, alpha, fleiss, majority))


def _sentence(
    dataset: str,
    kind: str,
    names: Sequence[str],
    fit: A.DawidSkeneFit,
    alpha: float,
    fleiss: list[tuple[int, int, float]],
    majority: np.ndarray,
) -> str:
    agreement, _, n = _compare(fit.labels, majority)
    text = f"On {dataset}, the {len(names)} {kind} reach Krippendorff's alpha {alpha:.2f}"
    if fleiss:
        k, n_items, kappa = max(fleiss, key=lambda t: t[1])
        text += f" (Fleiss' kappa {kappa:.2f} on the {n_items} items with {k} ratings)"
    if n:
        text += f"; Dawid–Skene agrees with the majority vote on {agreement:.0%} of {n} items"
    reliability = (fit.sensitivity + fit.specificity) / 2
    if np.isfinite(reliability).any():
        worst = int(np.nanargmin(reliability))
        text += (
            f", and rates {names[worst]} least reliable (sensitivity "
            f"{fit.sensitivity[worst]:.2f}, specificity {fit.specificity[worst]:.2f})"
        )
    return text + "."
