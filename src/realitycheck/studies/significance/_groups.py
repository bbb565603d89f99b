"""Comparing a value across groups: normality check, choice of test, post-hoc comparisons.

The group comparison follows the decision tree of Kulkarni et al. (*The Mirage
of Hallucination Detection*, appendix A.4): check normality with Shapiro–Wilk;
two groups → paired t-test or Wilcoxon signed-rank when matched, Welch t-test
or Mann–Whitney U otherwise; more groups → repeated-measures ANOVA or Friedman
when matched (post-hoc: Bonferroni-corrected paired t-tests or Nemenyi),
one-way ANOVA or Kruskal–Wallis otherwise (post-hoc: Tukey HSD or
Bonferroni-corrected Mann–Whitney U). Values that are all 0/1 skip the
normality check and take the rank-based branch (on 0/1 values Friedman's
statistic equals Cochran's Q).
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from realitycheck.analysis import require_module

__all__ = ["NOT_APPLICABLE", "GroupTest", "Normality", "compare_groups", "shapiro_check"]

FloatArray = npt.NDArray[np.float64]
SHAPIRO_MIN, SHAPIRO_MAX = 3, 5000
MATCHED_SHARE = 0.5
NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class Normality:
    """Outcome of a Shapiro–Wilk check; ``normal`` is None when it could not be run."""

    n: int
    w: float
    p_value: float
    normal: bool | None
    note: str = ""


def shapiro_check(values: Any, *, alpha: float = 0.05, seed: int = 0) -> Normality:
    """Shapiro–Wilk normality check, defined for 3 to 5,000 values.

    More than 5,000 values are checked on a seeded random subsample of 5,000
    (scipy's p-value is not accurate beyond that); fewer than 3, or constant
    values, cannot be checked and give ``normal=None`` with the reason.
    """
    from scipy import stats

    x = np.asarray(values, dtype=float)
    n = x.size
    if n < SHAPIRO_MIN:
        return Normality(n, np.nan, np.nan, None, f"not checked: n = {n} < {SHAPIRO_MIN}")
    if np.ptp(x) == 0:
        return Normality(n, np.nan, np.nan, None, "not checked: constant values")
    note = ""
    if n > SHAPIRO_MAX:
        x = np.random.default_rng(seed).choice(x, SHAPIRO_MAX, replace=False)
        note = f"checked on a random subsample of {SHAPIRO_MAX}"
    w, p = stats.shapiro(x)
    return Normality(n, float(w), float(p), bool(p >= alpha), note)


@dataclass(frozen=True)
class GroupTest:
    """Which test was run across groups, why, and its post-hoc comparisons.

    Attributes:
        test: Name of the test, or ``"not applicable"``.
        statistic: Its statistic (t, W, U, F, chi-square or H); NaN if not run.
        p_value: Two-sided p-value; NaN if not run.
        design: ``"matched"`` (paired on blocks) or ``"unmatched"``.
        n_groups: Groups with at least one value.
        n_values: Values the test used.
        n_blocks: Complete blocks used by a matched test (0 otherwise).
        why: Why this test (design, normality, value type) or why none.
        normality: One row per checked sample: ``sample, n, shapiro_w,
            shapiro_p, normal, note``.
        posthoc: Pairwise comparisons: ``group_a, group_b, method, statistic,
            p_value, p_adjusted`` (empty for two groups).
    """

    test: str
    statistic: float
    p_value: float
    design: str
    n_groups: int
    n_values: int
    n_blocks: int
    why: str
    normality: pd.DataFrame = field(default_factory=pd.DataFrame)
    posthoc: pd.DataFrame = field(default_factory=pd.DataFrame)


def _normality_frame(checks: dict[str, Normality]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"sample": k, "n": c.n, "shapiro_w": c.w, "shapiro_p": c.p_value}
            | {"normal": c.normal, "note": c.note}
            for k, c in checks.items()
        ],
        columns=["sample", "n", "shapiro_w", "shapiro_p", "normal", "note"],
    )


def _matched(frame: pd.DataFrame, names: list[str], paired: str) -> bool:
    """Whether the design is matched: most blocks were answered by every group."""
    if paired != "auto":
        return paired == "yes"
    per_block = frame[frame["group"].isin(names)].groupby("block")["group"].nunique()
    return bool(len(per_block) and (per_block == len(names)).mean() >= MATCHED_SHARE)


@dataclass(frozen=True)
class _Design:
    matched: bool
    samples: list[FloatArray]
    n_blocks: int
    note: str = ""


def _design(frame: pd.DataFrame, names: list[str], paired: str) -> _Design | str:
    """The samples to test (one per group), or why no test applies."""
    used = frame[frame["value"].notna()]
    if _matched(frame, names, paired):
        table = used.pivot_table(index="block", columns="group", values="value", aggfunc="mean")
        table = table.reindex(columns=names).dropna()
        if len(table) >= SHAPIRO_MIN:
            samples = [table[g].to_numpy(dtype=float) for g in names]
            if len(names) == 2 and not np.any(samples[0] != samples[1]):
                return f"the two groups are equal on every one of {len(table)} blocks"
            return _Design(True, samples, len(table))
        if paired == "yes":
            return f"only {len(table)} complete blocks (at least {SHAPIRO_MIN} needed)"
        note = f"only {len(table)} complete blocks, so unmatched; "
    else:
        note = ""
    samples = [used.loc[used["group"] == g, "value"].to_numpy(dtype=float) for g in names]
    return _Design(False, samples, 0, note)


def compare_groups(
    values: Any, groups: Any, blocks: Any, *, alpha: float = 0.05, paired: str = "auto"
) -> GroupTest:
    """Choose and run the test comparing ``values`` across ``groups``.

    Args:
        values: One value per item; NaN where missing (kept to judge the design).
        groups: The group of each item; None/NaN items are left out.
        blocks: The block (example id) of each item, used to match groups;
            several items of one group in one block are averaged.
        alpha: Level of the normality checks (a sample is normal iff p >= alpha).
        paired: ``"auto"`` (matched iff at least half of the blocks hold an
            item of every group; the test then uses the complete blocks),
            ``"yes"`` or ``"no"``.

    Returns:
        A :class:`GroupTest`. One group, all-identical values, or too few
        complete blocks for a forced matched design give a ``"not applicable"``
        result with the reason, never an exception.
    """
    frame = pd.DataFrame({"value": values, "group": groups, "block": blocks})
    frame = frame[frame["group"].notna()].astype({"group": str})
    x = frame["value"].dropna().to_numpy(dtype=float)
    names = sorted(frame.loc[frame["value"].notna(), "group"].unique())
    if not names:
        return _not_applicable("no item has both a value and a group", 0, x.size)
    if len(names) < 2:
        return _not_applicable(f"only 1 group ({names[0]})", 1, x.size)
    if np.ptp(x) == 0:
        why = f"all {x.size} values equal {x[0]:g}, so no test can separate the groups"
        return _not_applicable(why, len(names), x.size)
    design = _design(frame, names, paired)
    if isinstance(design, str):
        return _not_applicable(design, len(names), x.size, "matched")
    samples, matched = design.samples, design.matched
    binary = bool(np.isin(x, (0.0, 1.0)).all())
    if matched and len(names) == 2:
        checked = {f"{names[0]} - {names[1]}": samples[0] - samples[1]}
    else:
        checked = dict(zip(names, samples, strict=True))
    skip = Normality(0, np.nan, np.nan, None, "not checked: 0/1 values")
    checks = {
        k: replace(skip, n=v.size) if binary else shapiro_check(v, alpha=alpha)
        for k, v in checked.items()
    }
    normal = not binary and all(c.normal for c in checks.values())
    if binary:
        why_norm = "0/1 values, so no normality check and a rank-based test"
    elif normal:
        why_norm = f"Shapiro-Wilk p >= {alpha:g} in every sample"
    else:
        failed = sum(not c.normal for c in checks.values())
        why_norm = (
            f"Shapiro-Wilk p < {alpha:g} (or not checkable) in {failed} of {len(checks)} samples"
        )
    label = "matched" if matched else "unmatched"
    blocks_note = f" on {design.n_blocks} complete blocks" if matched else ""
    why = f"{design.note}{len(names)} groups, {label}{blocks_note}; {why_norm}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test, stat, p, posthoc = _run(samples, names, matched, normal, binary)
    if posthoc is not None:
        why += f"; post-hoc {posthoc['method'].iloc[0]}"
    return GroupTest(
        test, stat, p, label, len(names), sum(v.size for v in samples), design.n_blocks, why,
        _normality_frame(checks), posthoc if posthoc is not None else _posthoc([]),
    )  # fmt: skip


def _not_applicable(why: str, n_groups: int, n_values: int, design: str = "-") -> GroupTest:
    return GroupTest(
        NOT_APPLICABLE, np.nan, np.nan, design, n_groups, n_values, 0, f"not applicable: {why}",
        _normality_frame({}), _posthoc([]),
    )  # fmt: skip


def _run(
    samples: list[FloatArray], names: list[str], matched: bool, normal: bool, binary: bool
) -> tuple[str, float, float, pd.DataFrame | None]:
    from scipy import stats

    if len(samples) == 2:
        a, b = samples
        if matched:
            r = stats.ttest_rel(a, b) if normal else stats.wilcoxon(a, b)
            name = "paired t-test" if normal else "Wilcoxon signed-rank"
        else:
            if normal:
                r, name = stats.ttest_ind(a, b, equal_var=False), "Welch t-test"
            else:
                r, name = stats.mannwhitneyu(a, b, alternative="two-sided"), "Mann-Whitney U"
        return name, float(r.statistic), float(r.pvalue), None
    if matched:
        matrix = np.column_stack(samples)
        if normal:
            stat, p = _anova_rm(matrix)
            return "repeated-measures ANOVA", stat, p, _pairwise(samples, names, paired=True)
        r = stats.friedmanchisquare(*samples)
        name = "Friedman (= Cochran's Q on 0/1 values)" if binary else "Friedman"
        return name, float(r.statistic), float(r.pvalue), _nemenyi(matrix, names)
    if normal:
        r = stats.f_oneway(*samples)
        return "one-way ANOVA", float(r.statistic), float(r.pvalue), _tukey(samples, names)
    r = stats.kruskal(*samples)
    posthoc = _pairwise(samples, names, paired=False)
    return "Kruskal-Wallis", float(r.statistic), float(r.pvalue), posthoc


def _anova_rm(matrix: FloatArray) -> tuple[float, float]:
    """Repeated-measures ANOVA (statsmodels AnovaRM) on a blocks x groups matrix."""
    anova = require_module("statsmodels.stats.anova", "statsmodels", "repeated-measures ANOVA")
    n, k = matrix.shape
    long = pd.DataFrame(
        {
            "value": matrix.ravel(),
            "block": np.repeat(np.arange(n), k),
            "group": np.tile(np.arange(k), n),
        }
    )
    row = anova.AnovaRM(long, "value", "block", within=["group"]).fit().anova_table.iloc[0]
    return float(row["F Value"]), float(row["Pr > F"])


def _pairs(names: list[str]) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(len(names)), 2))


def _posthoc(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["group_a", "group_b", "method", "statistic", "p_value", "p_adjusted"]
    )


def _pairwise(samples: list[FloatArray], names: list[str], *, paired: bool) -> pd.DataFrame:
    """Every pair of groups by a paired t-test (matched) or Mann-Whitney U, Bonferroni-adjusted."""
    from scipy import stats

    pairs = _pairs(names)
    method = "paired t-test, Bonferroni" if paired else "Mann-Whitney U, Bonferroni"
    rows = []
    for i, j in pairs:
        if paired:
            r = stats.ttest_rel(samples[i], samples[j])
        else:
            r = stats.mannwhitneyu(samples[i], samples[j], alternative="two-sided")
        p = float(r.pvalue)
        rows.append(
            {"group_a": names[i], "group_b": names[j], "method": method}
            | {
                "statistic": float(r.statistic),
                "p_value": p,
                "p_adjusted": min(1.0, p * len(pairs)),
            }
        )
    return _posthoc(rows)


def _nemenyi(matrix: FloatArray, names: list[str]) -> pd.DataFrame:
    sp = require_module("scikit_posthocs", "scikit-posthocs", "the Nemenyi post-hoc test")
    pvalues = sp.posthoc_nemenyi_friedman(matrix).to_numpy()
    return _posthoc(
        [
            {"group_a": names[i], "group_b": names[j], "method": "Nemenyi"}
            | {"statistic": np.nan, "p_value": pvalues[i, j], "p_adjusted": pvalues[i, j]}
            for i, j in _pairs(names)
        ]
    )


def _tukey(samples: list[FloatArray], names: list[str]) -> pd.DataFrame:
    from scipy import stats

    result = stats.tukey_hsd(*samples)
    return _posthoc(
        [
            {"group_a": names[i], "group_b": names[j], "method": "Tukey HSD"}
            | {"statistic": float(result.statistic[i, j])}
            | {"p_value": float(result.pvalue[i, j]), "p_adjusted": float(result.pvalue[i, j])}
            for i, j in _pairs(names)
        ]
    )
