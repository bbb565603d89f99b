"""Ranks of generators, and judges that are also generators (self-preference).

Rankings are average ranks (rank 1 = lowest hallucination rate), and rank
ranges say which of those ranks the intervals can tell apart; judges are
matched to generators by a normalised model name, and a matched judge's
self-preference gets a percentile interval from resampling sources.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.analysis import Bootstrap
from realitycheck.errors import InvalidInputError
from realitycheck.metrics import rankdata
from realitycheck.registry import parse_key
from realitycheck.text import model_parts

__all__ = [
    "cluster_bootstrap_self_preference",
    "describe_ties",
    "match_judges",
    "model_of",
    "normalise_model_name",
    "rank_ranges",
    "rank_rates",
    "self_preference",
]

FloatArray = npt.NDArray[np.float64]


_DEFAULTS = Bootstrap()
"""The bootstrap settings' defaults, declared once at :class:`Bootstrap`'s fields."""


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


def rank_ranges(
    low: Sequence[float] | FloatArray, high: Sequence[float] | FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The ranks each rate could take, given the intervals ``[low, high]`` of all of them.

    One rate is ranked above another (lower = better) only when their
    intervals do not overlap (touching ends overlap): a rate whose interval
    lies wholly below ``k`` others' and wholly above ``m`` others' ranks from
    ``m + 1`` to ``n - k``, ``n`` the rates with an interval. Rates whose
    intervals overlap are a tie group: they share the ranks between them. The
    strict rank (:func:`rank_rates`) of a rate lies in its range when every
    interval holds its rate (a Wilson interval does). Two rates ranked apart
    this way differ at least at the intervals' level: disjoint intervals are a
    stricter test than one of the difference.

    Returns:
        ``(best, worst)`` rank per rate, whole numbers in [1, n] with ``best <=
        worst``; NaN where an end of the interval is missing (left out of the
        others' ranges).
    """
    lo, hi = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    best, worst = np.full(lo.shape, np.nan), np.full(lo.shape, np.nan)
    known = np.isfinite(lo) & np.isfinite(hi)
    if known.any():
        a, b = lo[known], hi[known]
        below = (b[None, :] < a[:, None]).sum(axis=1)  # others wholly below each one
        above = (a[None, :] > b[:, None]).sum(axis=1)  # others wholly above each one
        best[known] = 1 + below
        worst[known] = known.sum() - above
    return best, worst


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


# The record families whose keys put a prefix before the model (``recorded:gpt_4o``,
# ``human:ann1``). Any other ``:`` is part of the model's name (``llama3.1:8b``).
_FAMILY_PREFIXES = ("recorded:", "human:")


def model_of(key: str) -> str:
    """The model a judge or generator name stands for, before normalisation.

    A name that is not a component key (``openai/gpt-4o``, ``Llama 3 8B``) is
    the model itself. A key is read with the registry's own parser
    (:func:`realitycheck.registry.parse_key`): its ``model=`` parameter if it
    has one (``llm_judge[model=openai/gpt-4o]``, a generator's
    ``openai[model=gpt-4o]``); else the ``model`` of the components nested in
    it, at any depth (a judge's backend,
    ``faithjudge[judge=openai[base_url=http://h/v1,model=gpt-4o]]``, or a
    panel's members); else the component's name. A key that nests several
    different models (a panel of two LLMs) stands for no one model: ``""``.
    """
    text = key.strip()
    try:
        name, params = parse_key(text)
    except InvalidInputError:
        return text
    models = {normalise_model_name(m): m for m in _models(params)}
    if len(models) > 1:
        return ""
    return next(iter(models.values()), name)


def _models(params: dict[str, Any]) -> list[str]:
    """The ``model`` of a parsed key's parameters, or those of the keys nested in them."""
    if params.get("model") not in (None, ""):
        return [str(params["model"])]
    found = []
    for value in params.values():
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str) or "[" not in item:
                continue
            try:
                _, inner = parse_key(item)
            except InvalidInputError:
                continue
            found += _models(inner)
    return found


def normalise_model_name(key: str) -> str:
    """A judge or generator name reduced to a comparable form.

    Steps: take the model the name stands for (:func:`model_of`: a key's
    ``model=`` parameter, else the ``model`` of its nested backend, so
    ``qa_judge[judge=openai[model=openai/gpt-4o]]`` stands for ``openai/gpt-4o``);
    drop a record-family prefix (``recorded:``, ``human:``); drop an
    organisation or folder prefix (its path parts, :func:`model_parts`: a ``/``
    inside ``org/<b>x</b>``'s last part is no separator); lower-case; treat ``_``,
    ``.`` and whitespace as ``-``. So ``recorded:gpt_4o`` and ``openai/gpt-4o``
    both become ``gpt-4o``, and ``recorded:gpt-3.5-turbo`` and
    ``openai/GPT-3.5-Turbo`` become ``gpt-3-5-turbo``. A key that nests several
    models gives ``""``, which matches nothing.
    """
    name = model_of(key) if "[" in key else key.strip()
    for prefix in _FAMILY_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
    name = model_parts(name)[-1].lower()
    return re.sub(r"[-_.\s]+", "-", name).strip("-")


def match_judges(judges: Sequence[str], generators: Sequence[str]) -> dict[str, str]:
    """Map each judge to the generator of the same normalised name (exact match only).

    A judge stands for the model of its nested backend (:func:`model_of`), so
    ``qa_judge[judge=openai[model=org/Tiny-Llama]]`` matches the generator
    ``org/tiny_llama``.
    """
    by_name: dict[str, str] = {}
    for g in generators:
        by_name.setdefault(normalise_model_name(g), g)
    by_name.pop("", None)
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
    n_resamples: int = _DEFAULTS.n_resamples,
    confidence: float = _DEFAULTS.confidence,
    seed: int = _DEFAULTS.seed,
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
