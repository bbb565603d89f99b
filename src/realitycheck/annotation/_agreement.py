"""Annotators aggregated and compared: the aggregate rules, Dawid–Skene, agreement tables.

A rating matrix has one row per item and one column per annotator: 1.0
(hallucinated), 0.0 (faithful) or NaN (no verdict: can't tell, or not
annotated). The aggregate rules are those of the ``files`` dataset's
``aggregate`` parameter: ``majority`` (a tie is hallucinated), ``worst``
(hallucinated when any annotator says so) and ``dawid_skene`` (the label's
score is P(hallucinated | votes), hallucinated at 0.5 or above). The
statistics are :mod:`realitycheck.analysis`'s: Dawid–Skene (crowd-kit),
pairwise Cohen's kappa, Fleiss' kappa per number of ratings (statsmodels) and
Krippendorff's alpha (``krippendorff``), each in [-1, 1] (reliabilities in [0, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from realitycheck import analysis as A
from realitycheck.errors import InvalidInputError, MissingDependencyError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MIN_OVERLAP", "Agreement", "aggregate_votes", "agreement", "weakest"]

MIN_OVERLAP = 5
"""Pairs of annotators sharing fewer items than this get no Cohen's kappa."""


@dataclass
class Agreement:
    """How the annotators agree, and how reliable Dawid–Skene finds each.

    Attributes:
        annotators: One row per annotator: ``annotator, n_items,
            hallucinated_share, ds_sensitivity, ds_specificity, ds_reliability,
            dropped``.
        measures: ``measure, scope, value, n_items``: Krippendorff's alpha,
            Fleiss' kappa per number of ratings, mean pairwise Cohen's kappa.
        pairwise: ``rater_a, rater_b, n_overlap, agreement, cohen_kappa``.
        notes: What could not be computed, and why.
    """

    annotators: pd.DataFrame
    measures: pd.DataFrame
    pairwise: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def fit_or_none(matrix: np.ndarray, notes: list[str]) -> A.DawidSkeneFit | None:
    """Dawid–Skene on ``matrix``, or None (with a note) when crowd-kit is missing."""
    try:
        return A.dawid_skene(matrix)
    except MissingDependencyError as exc:
        notes.append(f"No Dawid-Skene reliabilities: {exc}")
        return None


def weakest(
    names: Sequence[str],
    fit: A.DawidSkeneFit,
    *,
    drop_weakest: int = 0,
    min_reliability: float | None = None,
) -> list[str]:
    """Return the annotators to leave out of the aggregate, least reliable first.

    Reliability is Dawid–Skene's (sensitivity + specificity) / 2. The
    ``drop_weakest`` least reliable go, and any below ``min_reliability``.

    Raises:
        InvalidInputError: Dawid–Skene cannot rank the annotators (one class
            only), or nobody would be left.
    """
    if not drop_weakest and min_reliability is None:
        return []
    reliability = (fit.sensitivity + fit.specificity) / 2
    if not np.isfinite(reliability).any():
        raise InvalidInputError(
            "Dawid-Skene cannot rank the annotators (their verdicts hold one class only), so "
            "none can be dropped: leave out --drop-weakest / --min-reliability."
        )
    order = sorted(
        (i for i in range(len(names)) if math.isfinite(reliability[i])),
        key=lambda i: (reliability[i], names[i]),
    )
    dropped = {names[i] for i in order[:drop_weakest]}
    if min_reliability is not None:
        dropped |= {names[i] for i in order if reliability[i] < min_reliability}
    if len(dropped) >= len(names):
        raise InvalidInputError(
            f"Dropping {len(dropped)} of {len(names)} annotators leaves none to aggregate: "
            "lower --drop-weakest or --min-reliability."
        )
    return [names[i] for i in order if names[i] in dropped]


def aggregate_votes(matrix: np.ndarray, aggregate: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the aggregate verdict per item (1.0 / 0.0 / NaN) and, for Dawid–Skene, its score.

    ``majority``: the majority verdict, a tie hallucinated (as the ``files``
    dataset); ``worst``: hallucinated when any annotator says so;
    ``dawid_skene``: P(hallucinated | votes), hallucinated at 0.5 or above.
    An item without a verdict gets NaN.
    """
    matrix = np.asarray(matrix, dtype=float)
    voted = (~np.isnan(matrix)).any(axis=1)
    if aggregate == "dawid_skene":
        posterior = A.dawid_skene(matrix).posterior
        return np.where(np.isnan(posterior), np.nan, (posterior >= 0.5).astype(float)), posterior
    if aggregate == "worst":
        any_yes = (matrix == 1.0).any(axis=1)
        return np.where(voted, any_yes.astype(float), np.nan), None
    majority = A.majority_vote(matrix)
    return np.where(voted & np.isnan(majority), 1.0, majority), None


def agreement(
    matrix: np.ndarray,
    names: Sequence[str],
    fit: A.DawidSkeneFit | None,
    dropped: Sequence[str],
    notes: list[str],
) -> Agreement:
    """Return the agreement tables of the annotators in ``names`` (the columns of ``matrix``)."""
    import pandas as pd

    matrix = np.asarray(matrix, dtype=float)
    given = ~np.isnan(matrix)
    nan = np.full(len(names), np.nan)
    sens = fit.sensitivity if fit is not None else nan
    spec = fit.specificity if fit is not None else nan
    annotators = pd.DataFrame(
        {
            "annotator": list(names),
            "n_items": given.sum(axis=0).astype(int),
            "hallucinated_share": [
                float(np.nanmean(matrix[:, r])) if given[:, r].any() else np.nan
                for r in range(len(names))
            ],
            "ds_sensitivity": sens,
            "ds_specificity": spec,
            "ds_reliability": (sens + spec) / 2,
            "dropped": [n in dropped for n in names],
        }
    )
    multi = int((given.sum(axis=1) >= 2).sum())
    rows: list[dict[str, object]] = []
    try:
        alpha = A.krippendorff_alpha(matrix)
        rows.append(
            {
                "measure": "krippendorff_alpha",
                "scope": "items with >= 2 verdicts (nominal, missing allowed)",
                "value": alpha,
                "n_items": multi,
            }
        )
    except MissingDependencyError as exc:
        notes.append(f"No Krippendorff's alpha: {exc}")
    try:
        for k, n_items, kappa in A.fleiss_by_count(matrix):
            rows.append(
                {
                    "measure": "fleiss_kappa",
                    "scope": f"items with exactly {k} verdicts",
                    "value": kappa,
                    "n_items": n_items,
                }
            )
    except MissingDependencyError as exc:
        notes.append(f"No Fleiss' kappa: {exc}")
    pairwise = A.pairwise_kappa(matrix, names, min_overlap=MIN_OVERLAP)
    kappas = pairwise["cohen_kappa"].dropna()
    rows.append(
        {
            "measure": "mean_pairwise_cohen_kappa",
            "scope": f"{len(pairwise)} annotator pairs sharing >= {MIN_OVERLAP} items",
            "value": float(kappas.mean()) if len(kappas) else np.nan,
            "n_items": multi,
        }
    )
    measures = pd.DataFrame(rows, columns=["measure", "scope", "value", "n_items"])
    return Agreement(annotators, measures, pairwise, notes)
