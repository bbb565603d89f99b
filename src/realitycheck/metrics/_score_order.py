"""AUROC, PR-AUC and PRR of many weightings from one pass over a detector's sorted scores.

The three rank-based metrics need the same two running sums of the item
weights (bootstrap multiplicities) in ascending score order:

- ``E[:, j]``, the total weight of the first ``j`` items of that order, and
- ``Q[:, j]``, the weight of the negative (not hallucinated) items among them.

For a positive (hallucinated) item whose run of tied scores occupies the
sorted positions ``a .. b - 1``, ``Q[:, a]`` is the negative weight scored
strictly below it, ``Q[:, b]`` the negative weight scored at or below it and
``E[:, a] - Q[:, a]`` the positive weight strictly below it. These are the
integers the separate kernels of ``_ranking`` (:func:`weighted_rank_metric`)
and ``_rejection`` (:func:`weighted_prr_sorted`) compute from their own
sorted copies, and the floating-point steps after them are the same, so the
values here are bit-identical to theirs; they are computed from one gather
and two running sums per detector instead of five.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.metrics._bootstrap_inputs import RANKING_METRICS
from realitycheck.metrics._classification import _ratio
from realitycheck.metrics._rejection import RejectionOrder, prr_from_running_sums

__all__ = ["SHARED_SORT_METRICS", "ScoreOrder", "sorted_metric_values"]

FloatArray = npt.NDArray[np.float64]

SHARED_SORT_METRICS: tuple[str, ...] = ("auroc", "pr_auc", "prr")
"""The metrics computed together by :func:`sorted_metric_values`."""

# Item positions per block of rows: a block's int32 running sums (about 1 MB
# each) stay in cache between the two running sums and the look-ups.
_BLOCK_ITEMS = 2**18


@dataclass(frozen=True)
class ScoreOrder:
    """One detector's scores sorted once against the labels, for every weighting.

    Attributes:
        rejection: The ascending stable order, the negative flags in that
            order and the ends of tied runs (see :class:`RejectionOrder`).
        negative: ``rejection.correct_items`` as 0/1 bytes.
        run_start: Per positive (original order), the sorted position where its
            run of tied scores starts.
        run_stop: Per positive, one past the sorted position where that run ends.
    """

    rejection: RejectionOrder
    negative: npt.NDArray[np.uint8]
    run_start: npt.NDArray[np.intp]
    run_stop: npt.NDArray[np.intp]

    @classmethod
    def build(cls, labels: npt.NDArray[np.bool_], scores: FloatArray) -> ScoreOrder:
        """Sort one detector's scores (ascending, stable) and locate each positive's tie run."""
        rejection = RejectionOrder.build(labels, scores)
        sorted_scores = scores[rejection.order]
        pos_scores = scores[np.flatnonzero(labels)]
        return cls(
            rejection=rejection,
            negative=rejection.correct_items.view(np.uint8),
            run_start=np.searchsorted(sorted_scores, pos_scores, side="left"),
            run_stop=np.searchsorted(sorted_scores, pos_scores, side="right"),
        )


def _running_sums(
    w: npt.NDArray[Any],
    negative: npt.NDArray[np.uint8],
    total: npt.NDArray[np.signedinteger[Any]],
    neg: npt.NDArray[np.signedinteger[Any]],
) -> None:
    """Fill ``total`` (``E``) and ``neg`` (``Q``), shape (B, n + 1), each after a zero column."""
    total[:, 0] = 0
    neg[:, 0] = 0
    np.cumsum(w, axis=1, dtype=total.dtype, out=total[:, 1:])
    np.cumsum(w * negative, axis=1, dtype=neg.dtype, out=neg[:, 1:])


def _ranking(
    order: ScoreOrder,
    total: npt.NDArray[Any],
    neg: npt.NDArray[Any],
    pos_weights: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """AUROC and average precision of each row from the running sums (see the module docstring)."""
    n_all = total[:, -1].astype(np.int64)
    n_neg = neg[:, -1].astype(np.int64)
    n_pos = n_all - n_neg
    below = np.take(neg, order.run_start, axis=1, mode="clip")
    # Twice the Mann-Whitney count: 2 per negative below, 1 per tied negative.
    pairs = np.take(neg, order.run_stop, axis=1, mode="clip")
    np.add(below, pairs, out=pairs)
    auroc_num = np.einsum("ij,ij->i", pos_weights, pairs, dtype=np.float64)
    auroc_den = (2 * n_pos * n_neg).astype(np.float64)
    # Positives at or above each positive's score, and everything at or above it.
    true_pos = np.take(total, order.run_start, axis=1, mode="clip")
    np.subtract(true_pos, below, out=true_pos)
    np.subtract(n_pos[:, None], true_pos, out=true_pos, casting="same_kind")
    predicted = np.subtract(n_neg[:, None], below, out=below, casting="same_kind")
    predicted += true_pos
    np.maximum(predicted, 1, out=predicted)
    ap_num = np.einsum("ij,ij->i", pos_weights, true_pos / predicted)
    ap_den = n_pos.astype(np.float64)
    return _ratio(auroc_num, auroc_den), _ratio(ap_num, ap_den)


def sorted_metric_values(
    orders: list[ScoreOrder],
    labels: npt.NDArray[np.bool_],
    counts: npt.NDArray[Any],
    *,
    prr: bool = True,
) -> dict[str, FloatArray]:
    """AUROC, PR-AUC and PRR of every detector for every row of ``counts``.

    The running sums are computed in blocks of rows small enough to stay in
    cache while AUROC and PR-AUC read them (integers: exact in any blocking);
    PRR then reads them whole, as its own kernel does (its float sums follow
    numpy's summation order, which depends on the arrays' shapes).

    Args:
        orders: One :class:`ScoreOrder` per detector, built on ``labels``.
        labels: Shape (n,), True = hallucinated.
        counts: Shape (B, n): non-negative integer multiplicities (any
            unsigned or signed integer type).
        prr: Whether to compute PRR too (about a third of the time); without
            it the result holds AUROC and PR-AUC only.

    Returns:
        ``{metric: values}`` for each of :data:`SHARED_SORT_METRICS`, values
        of shape (k, B); equal to ``weighted_rank_metric`` (AUROC in [0, 1],
        average precision in [0, 1]) and ``weighted_prr_sorted`` (PRR in
        [-1, 1]), NaN where they are undefined.
    """
    rows, n = counts.shape
    top = 2 * int(counts.sum(axis=1, dtype=np.int64).max()) if counts.size else 0
    dtype: type[np.signedinteger[Any]] = np.int32 if top < np.iinfo(np.int32).max else np.int64
    pos_weights = counts[:, labels].astype(np.float64)
    step = max(1, _BLOCK_ITEMS // max(1, n))
    total = np.empty((rows, n + 1), dtype=dtype)
    neg = np.empty((rows, n + 1), dtype=dtype)
    names = SHARED_SORT_METRICS if prr else RANKING_METRICS
    out = {name: np.empty((len(orders), rows)) for name in names}
    for k, order in enumerate(orders):
        w = np.take(counts, order.rejection.order, axis=1, mode="clip")
        for start in range(0, rows, step):
            here = slice(start, min(rows, start + step))
            _running_sums(w[here], order.negative, total[here], neg[here])
            out["auroc"][k, here], out["pr_auc"][k, here] = _ranking(
                order, total[here], neg[here], pos_weights[here]
            )
        if not prr:
            continue
        running_q = None if order.rejection.last is None else neg[:, 1:]
        out["prr"][k] = prr_from_running_sums(order.rejection, w, total[:, 1:], running_q)
    return out
