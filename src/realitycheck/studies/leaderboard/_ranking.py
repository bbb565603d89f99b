"""Ranks of generators, and judges that are also generators (self-preference).

Rankings are average ranks (rank 1 = lowest hallucination rate); judges are
matched to generators by a normalised model name, and a matched judge's
self-preference gets a percentile interval from resampling sources.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from realitycheck.metrics import rankdata

__all__ = [
    "cluster_bootstrap_self_preference",
    "describe_ties",
    "match_judges",
    "normalise_model_name",
    "rank_rates",
    "self_preference",
]

FloatArray = npt.NDArray[np.float64]


def rank_rates(rates: Sequence[float] | FloatArray) -> FloatArray:
    """Average ranks of rates: 1 = lowest rate (best); tied rates share the mean rank.

    NaN rates (a generator with nothing judged) get a NaN rank and are left out
    of the ranking of the others.
    """
    values = np.asarray(rates, dtype=float)
    ranks = np.full(values.shape, np.nan)
    finite = np.isfinite(values)
    if finite.any():
        ranks[finite] = rankdata(values[finite])
    return ranks


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
