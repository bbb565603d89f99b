"""Statistics shared by the leaderboard and QA-accuracy studies.

Proportions get Wilson score intervals; rankings are average ranks (rank 1 =
lowest hallucination rate); agreement between two rankings is counted in
discordant pairs and Kendall's tau-b; refusals are short (or stock-phrase)
responses; judges are matched to generators by a normalised model name.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

__all__ = [
    "cluster_bootstrap_self_preference",
    "describe_ties",
    "discordant_pairs",
    "kendall_tau_b",
    "match_judges",
    "normalise_model_name",
    "paired_difference_ci",
    "rank_rates",
    "refusal_mask",
    "self_preference",
    "wilson_interval",
]

FloatArray = npt.NDArray[np.float64]


def wilson_interval(successes: Any, n: Any, confidence: float = 0.95) -> tuple[Any, Any]:
    """Wilson score interval of a binomial proportion (vectorised).

    Args:
        successes: Counts of successes, scalar or array.
        n: Numbers of trials (same shape); 0 gives NaN bounds.
        confidence: Nominal coverage in (0, 1).

    Returns:
        ``(low, high)`` in [0, 1], scalars for scalar inputs.
    """
    k = np.asarray(successes, dtype=float)
    total = np.asarray(n, dtype=float)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / total
        denom = 1 + z**2 / total
        centre = (p + z**2 / (2 * total)) / denom
        half = z * np.sqrt(p * (1 - p) / total + z**2 / (4 * total**2)) / denom
    low = np.where(total > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(total > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def rank_rates(rates: Sequence[float] | FloatArray) -> FloatArray:
    """Average ranks of rates: 1 = lowest rate (best); tied rates share the mean rank.

    NaN rates (a generator with nothing judged) get a NaN rank and are left out
    of the ranking of the others.
    """
    values = np.asarray(rates, dtype=float)
    ranks = np.full(values.shape, np.nan)
    finite = np.isfinite(values)
    if finite.any():
        ranks[finite] = stats.rankdata(values[finite], method="average")
    return ranks


def discordant_pairs(
    reference: Sequence[float] | FloatArray, other: Sequence[float] | FloatArray
) -> tuple[list[tuple[int, int]], int]:
    """Pairs ordered one way by ``reference`` and the other way by ``other``.

    A pair tied in either sequence is neither concordant nor discordant.

    Args:
        reference: Values (e.g. human hallucination rates) per item.
        other: Values of the same items under another judge.

    Returns:
        ``(pairs, n_tied)``: the discordant pairs as ``(i, j)`` with
        ``reference[i] < reference[j]`` (``i`` better under the reference), and
        the number of pairs tied in at least one sequence.
    """
    a = np.asarray(reference, dtype=float)
    b = np.asarray(other, dtype=float)
    pairs: list[tuple[int, int]] = []
    n_tied = 0
    for i in range(a.size):
        for j in range(i + 1, a.size):
            sign = np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
            if sign == 0:
                n_tied += 1
            elif sign < 0:
                pairs.append((i, j) if a[i] < a[j] else (j, i))
    return pairs, n_tied


def kendall_tau_b(
    reference: Sequence[float] | FloatArray, other: Sequence[float] | FloatArray
) -> tuple[float, float]:
    """Kendall's tau-b (ties corrected) and its two-sided p-value, via scipy.

    Returns ``(nan, nan)`` when fewer than two items or either sequence is constant.
    """
    a = np.asarray(reference, dtype=float)
    b = np.asarray(other, dtype=float)
    if a.size < 2 or np.unique(a).size < 2 or np.unique(b).size < 2:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = stats.kendalltau(a, b, variant="b")
    return float(result.statistic), float(result.pvalue)


def describe_ties(names: Sequence[str], values: Sequence[float] | FloatArray) -> str:
    """Name the groups of tied values, e.g. ``"a = b (0.12)"``; empty when none."""
    groups: dict[float, list[str]] = {}
    for name, value in zip(names, np.asarray(values, dtype=float), strict=True):
        groups.setdefault(float(value), []).append(name)
    return "; ".join(
        f"{' = '.join(members)} ({value:.3g})"
        for value, members in sorted(groups.items())
        if len(members) > 1
    )


def refusal_mask(
    texts: pd.Series, max_words: int, phrases: Sequence[str] = ()
) -> npt.NDArray[np.bool_]:
    """Whether each response is a refusal.

    A refusal has at most ``max_words`` whitespace-separated words (the
    answer-rate rule of HHEM-style leaderboards), or contains one of
    ``phrases`` (case-insensitive substring).
    """
    words = texts.map(lambda t: len(str(t).split())).to_numpy()
    mask = words <= max_words
    if phrases:
        pattern = "|".join(re.escape(p.lower()) for p in phrases)
        mask |= texts.str.lower().str.contains(pattern, regex=True).to_numpy(dtype=bool)
    return np.asarray(mask, dtype=bool)


_PARAMS = re.compile(r"\[(.*)\]\s*$")


def normalise_model_name(key: str) -> str:
    """A judge or generator name reduced to a comparable form.

    Steps: take the ``model=`` parameter of a component key if it has one
    (``llm_judge[model=openai/gpt-4o]``), else drop any ``[...]`` parameters;
    drop a family prefix ending in ``:`` (``recorded:``); drop an organisation
    prefix ending in ``/``; lower-case; treat ``_``, ``.`` and whitespace as ``-``.
    So ``recorded:gpt_4o`` and ``openai/gpt-4o`` both become ``gpt-4o``, and
    ``recorded:gpt-3.5-turbo`` and ``openai/GPT-3.5-Turbo`` become ``gpt-3-5-turbo``.
    """
    name = key.strip()
    params = _PARAMS.search(name)
    if params:
        found = re.search(r"(?:^|,)\s*model\s*=\s*([^,]+)", params.group(1))
        name = found.group(1) if found else name[: params.start()]
    name = name.rsplit(":", 1)[-1].rsplit("/", 1)[-1].lower()
    return re.sub(r"[-_.\s]+", "-", name).strip("-")


def match_judges(judges: Sequence[str], generators: Sequence[str]) -> dict[str, str]:
    """Map each judge to the generator of the same normalised name (exact match only)."""
    by_name: dict[str, str] = {}
    for g in generators:
        by_name.setdefault(normalise_model_name(g), g)
    out = {}
    for judge in judges:
        hit = by_name.get(normalise_model_name(judge))
        if hit is not None:
            out[judge] = hit
    return out


def paired_difference_ci(
    a: npt.NDArray[np.bool_],
    b: npt.NDArray[np.bool_],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Difference of two paired proportions ``mean(a) - mean(b)``, percentile-bootstrap CI.

    Resampling items with replacement only changes the counts of the four
    (a, b) cells, so each resample is one multinomial draw of those counts,
    which is the ordinary item bootstrap computed in O(resamples).

    Returns:
        ``(difference, low, high)``; NaN for no items.
    """
    n = int(a.size)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    n10 = int(np.sum(a & ~b))
    n01 = int(np.sum(~a & b))
    cells = np.array([n10, n01, n - n10 - n01], dtype=float) / n
    draws = np.random.default_rng(seed).multinomial(n, cells, size=n_resamples)
    diffs = (draws[:, 0] - draws[:, 1]) / n
    low, high = np.quantile(diffs, [(1 - confidence) / 2, (1 + confidence) / 2])
    return (n10 - n01) / n, float(low), float(high)


def cluster_bootstrap_self_preference(
    judge: FloatArray,
    human: FloatArray,
    is_self: npt.NDArray[np.bool_],
    group: npt.NDArray[np.int64],
    cluster: npt.NDArray[np.int64],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile CI of the self-preference statistic, resampling clusters (sources).

    The statistic is ``(judge rate - human rate)`` on the judge's own generator
    minus the mean of that difference over the other generators (see
    :func:`self_preference`); items are responses with 0/1 verdicts, ``group``
    the generator index of each, ``cluster`` the source index of each.

    Returns:
        ``(low, high)``; NaN when a resample left a generator empty every time.
    """
    n_groups = int(group.max()) + 1
    n_clusters = int(cluster.max()) + 1
    draws = np.random.default_rng(seed).integers(0, n_clusters, (n_resamples, n_clusters))
    offsets = (np.arange(n_resamples) * n_clusters)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=n_resamples * n_clusters)
    weights = counts.reshape(n_resamples, n_clusters).astype(float)[:, cluster]
    onehot = np.zeros((group.size, n_groups))
    onehot[np.arange(group.size), group] = 1.0
    totals = weights @ onehot
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = (weights @ (onehot * (judge - human)[:, None])) / totals
    self_index = int(group[is_self][0])
    others = np.delete(diff, self_index, axis=1)
    values = diff[:, self_index] - np.nanmean(others, axis=1)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(values, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def self_preference(
    judge_rates: FloatArray, human_rates: FloatArray, self_index: int
) -> tuple[float, float, float]:
    """How much more leniently a judge rates its own generator than others, vs humans.

    Returns:
        ``(bias_self, bias_others, preference)`` with ``bias = judge rate -
        human rate``; ``bias_self`` on the judge's own generator, ``bias_others``
        the mean over the other generators, and ``preference = bias_self -
        bias_others``. Negative = the judge finds fewer hallucinations in its own
        outputs than humans do, beyond its usual offset on others (self-preference);
        range [-2, 2].
    """
    bias = np.asarray(judge_rates, float) - np.asarray(human_rates, float)
    others = np.delete(bias, self_index)
    bias_self = float(bias[self_index])
    bias_others = float(np.mean(others)) if others.size else float("nan")
    return bias_self, bias_others, bias_self - bias_others
