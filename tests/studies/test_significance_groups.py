"""The significance study's group comparison: normality check, test choice, post-hoc tests.

Each test's statistic and p-value is checked against scipy, statsmodels or
scikit-posthocs (or a hand computation) on seeded random samples.
"""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from realitycheck.studies.significance._groups import compare_groups, shapiro_check

# -- helpers ------------------------------------------------------------------------------


def _long(matrix, names=None, seed=0):
    """A blocks x groups matrix as shuffled long rows (value, group, block)."""
    n, k = matrix.shape
    names = names or [f"g{j}" for j in range(k)]
    frame = pd.DataFrame(
        {
            "value": matrix.ravel(),
            "group": np.tile(names, n),
            "block": np.repeat([f"e{i}" for i in range(n)], k),
        }
    )
    frame = frame.sample(frac=1, random_state=seed)  # pairing must follow blocks, not positions
    return frame["value"].to_numpy(), frame["group"].to_numpy(), frame["block"].to_numpy()


def _normal_shape(rng, n):
    """n values whose sample quantiles are the normal quantiles, shuffled (Shapiro p ~ 1)."""
    return rng.permutation(stats.norm.ppf((np.arange(n) + 0.5) / n))


def _unmatched(samples):
    values = np.concatenate(samples)
    groups = np.concatenate([[f"g{j}"] * len(s) for j, s in enumerate(samples)])
    blocks = np.array([f"e{i}" for i in range(values.size)])
    return values, groups, blocks


def _pairs(result):
    return {(r.group_a, r.group_b): r for r in result.posthoc.itertuples()}


# -- normality and proportions ------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_shapiro_check_equals_scipy(seed):
    x = np.random.default_rng(seed).normal(size=40) ** (seed + 1)
    check = shapiro_check(x, alpha=0.05)
    ref = stats.shapiro(x)
    assert check.w == pytest.approx(ref.statistic) and check.p_value == pytest.approx(ref.pvalue)
    assert check.normal is bool(ref.pvalue >= 0.05)


@pytest.mark.parametrize(
    ("values", "note"),
    [([1.0, 2.0], "n = 2 < 3"), ([3.0] * 10, "constant"), ([], "n = 0")],
)
def test_shapiro_check_cannot_check_tiny_or_constant_samples(values, note):
    check = shapiro_check(values)
    assert check.normal is None and math.isnan(check.p_value) and note in check.note


def test_shapiro_check_subsamples_beyond_5000():
    check = shapiro_check(np.random.default_rng(0).normal(size=6000))
    assert check.n == 6000 and "subsample of 5000" in check.note and check.normal is not None


# -- two groups -----------------------------------------------------------------------------


def test_two_matched_normal_groups_use_the_paired_t_test():
    rng = np.random.default_rng(0)
    a = rng.normal(size=30)
    matrix = np.column_stack([a, a + 0.4 + _normal_shape(rng, 30) * 0.5])
    result = compare_groups(*_long(matrix))
    ref = stats.ttest_rel(matrix[:, 0], matrix[:, 1])
    assert result.test == "paired t-test" and result.design == "matched"
    assert result.statistic == pytest.approx(ref.statistic)
    assert result.p_value == pytest.approx(ref.pvalue)
    assert result.n_blocks == 30 and result.normality["sample"].tolist() == ["g0 - g1"]


def test_two_matched_skewed_groups_with_ties_use_wilcoxon():
    rng = np.random.default_rng(1)
    a = np.round(rng.exponential(size=40), 1)
    b = np.round(a + rng.exponential(size=40) ** 3, 1)  # skewed differences, ties
    result = compare_groups(*_long(np.column_stack([a, b])))
    ref = stats.wilcoxon(a, b)
    assert result.test == "Wilcoxon signed-rank"
    assert result.p_value == pytest.approx(ref.pvalue) and "not checkable" in result.why


@pytest.mark.parametrize("normal", [True, False])
def test_two_unmatched_groups_use_welch_or_mann_whitney(normal):
    rng = np.random.default_rng(2)
    if normal:
        a, b = _normal_shape(rng, 25), _normal_shape(rng, 40) * 2 + 0.5
    else:
        a, b = rng.exponential(size=25) ** 3, rng.exponential(size=40) ** 3 + 0.5
    result = compare_groups(*_unmatched([a, b]))
    if normal:
        ref = stats.ttest_ind(a, b, equal_var=False)
        assert result.test == "Welch t-test"
    else:
        ref = stats.mannwhitneyu(a, b, alternative="two-sided")
        assert result.test == "Mann-Whitney U"
    assert result.design == "unmatched" and result.n_values == 65
    assert result.statistic == pytest.approx(ref.statistic)
    assert result.p_value == pytest.approx(ref.pvalue)


# -- more than two groups -------------------------------------------------------------------


def test_matched_normal_groups_use_repeated_measures_anova_by_hand():
    rng = np.random.default_rng(3)
    n, k = 20, 4
    matrix = np.column_stack([_normal_shape(rng, n) + 0.3 * j for j in range(k)])
    result = compare_groups(*_long(matrix))
    grand = matrix.mean()
    ss_groups = n * ((matrix.mean(axis=0) - grand) ** 2).sum()
    ss_blocks = k * ((matrix.mean(axis=1) - grand) ** 2).sum()
    ss_error = ((matrix - grand) ** 2).sum() - ss_groups - ss_blocks
    f = (ss_groups / (k - 1)) / (ss_error / ((k - 1) * (n - 1)))
    assert result.test == "repeated-measures ANOVA"
    assert result.statistic == pytest.approx(f)
    assert result.p_value == pytest.approx(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))
    pairs = _pairs(result)
    for i, j in itertools.combinations(range(k), 2):
        ref = stats.ttest_rel(matrix[:, i], matrix[:, j])
        row = pairs[(f"g{i}", f"g{j}")]
        assert row.p_value == pytest.approx(ref.pvalue)
        assert row.p_adjusted == pytest.approx(min(1.0, 6 * ref.pvalue))


def test_matched_skewed_groups_use_friedman_and_nemenyi():
    sp = pytest.importorskip("scikit_posthocs")
    rng = np.random.default_rng(4)
    matrix = np.round(rng.exponential(size=(25, 4)) ** 2 + np.arange(4) * 0.4, 1)
    result = compare_groups(*_long(matrix, names=["a", "b", "c", "d"]))
    ref = stats.friedmanchisquare(*matrix.T)
    assert result.test == "Friedman" and result.p_value == pytest.approx(ref.pvalue)
    nemenyi = sp.posthoc_nemenyi_friedman(matrix).to_numpy()
    # Nemenyi by hand: mean ranks' difference over sqrt(k (k + 1) / (6 n)), studentized range.
    ranks = stats.rankdata(matrix, axis=1).mean(axis=0)
    for (i, a), (j, b) in itertools.combinations(enumerate("abcd"), 2):
        q = abs(ranks[i] - ranks[j]) / math.sqrt(4 * 5 / (6 * 25)) * math.sqrt(2)
        by_hand = stats.studentized_range.sf(q, 4, np.inf)
        assert _pairs(result)[(a, b)].p_adjusted == pytest.approx(nemenyi[i, j])
        assert nemenyi[i, j] == pytest.approx(min(1.0, by_hand), abs=1e-6)


def test_unmatched_normal_groups_use_anova_and_tukey_like_statsmodels():
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    rng = np.random.default_rng(5)
    samples = [_normal_shape(rng, n) + m for m, n in ((0, 20), (0.8, 25), (0.3, 30))]
    values, groups, blocks = _unmatched(samples)
    result = compare_groups(values, groups, blocks)
    assert result.test == "one-way ANOVA"
    assert result.p_value == pytest.approx(stats.f_oneway(*samples).pvalue)
    tukey = pairwise_tukeyhsd(values, groups)
    pairs = _pairs(result)
    for (a, b), p in zip(itertools.combinations(tukey.groupsunique, 2), tukey.pvalues, strict=True):
        assert pairs[(a, b)].p_adjusted == pytest.approx(p, abs=1e-3)


def test_unmatched_skewed_groups_use_kruskal_and_bonferroni_mann_whitney():
    sp = pytest.importorskip("scikit_posthocs")
    rng = np.random.default_rng(6)
    samples = [np.round(rng.exponential(size=n) ** 2 + m, 1) for m, n in ((0, 15), (1, 20), (0, 2))]
    values, groups, blocks = _unmatched(samples)
    result = compare_groups(values, groups, blocks)
    assert result.test == "Kruskal-Wallis"  # g2 has 2 values: normality not checkable
    assert result.p_value == pytest.approx(stats.kruskal(*samples).pvalue)
    assert result.normality.set_index("sample").loc["g2", "note"] == "not checked: n = 2 < 3"
    frame = pd.DataFrame({"value": values, "group": groups})
    ref = sp.posthoc_mannwhitney(frame, "value", "group", p_adjust="bonferroni")
    for row in result.posthoc.itertuples():
        assert row.p_adjusted == pytest.approx(ref.loc[row.group_a, row.group_b])


def test_binary_matched_values_skip_normality_and_friedman_equals_cochrans_q():
    from statsmodels.stats.contingency_tables import cochrans_q

    rng = np.random.default_rng(7)
    matrix = (rng.random((40, 5)) < np.linspace(0.2, 0.7, 5)).astype(float)
    result = compare_groups(*_long(matrix))
    ref = cochrans_q(matrix)
    assert result.test.startswith("Friedman") and "0/1 values" in result.why
    assert result.statistic == pytest.approx(ref.statistic)
    assert result.p_value == pytest.approx(ref.pvalue)
    assert (result.normality["note"] == "not checked: 0/1 values").all()
    assert len(result.normality) == 5 and "no normality check" in result.why


def test_several_items_of_a_group_in_a_block_are_averaged():
    rng = np.random.default_rng(8)
    matrix = rng.normal(size=(12, 3))
    values, groups, blocks = _long(matrix)
    # A second, larger value for g0 in every block: the test must see their mean.
    extra = matrix[:, 0] + 1.0
    values = np.concatenate([values, extra])
    groups = np.concatenate([groups, ["g0"] * 12])
    blocks = np.concatenate([blocks, [f"e{i}" for i in range(12)]])
    result = compare_groups(values, groups, blocks, paired="yes")
    averaged = matrix.copy()
    averaged[:, 0] += 0.5
    expected = compare_groups(*_long(averaged), paired="yes")
    assert result.statistic == pytest.approx(expected.statistic)


# -- edge cases ------------------------------------------------------------------------------


def test_one_group_is_not_applicable():
    result = compare_groups([0.1, 0.5, 0.9], ["m", "m", "m"], ["a", "b", "c"])
    assert result.test == "not applicable" and math.isnan(result.p_value)
    assert result.why == "not applicable: only 1 group (m)" and result.posthoc.empty


def test_constant_values_are_not_applicable_with_the_reason():
    result = compare_groups([1.0] * 6, list("aabbcc"), list("xyzxyz"))
    assert result.test == "not applicable" and math.isnan(result.statistic)
    assert "all 6 values equal 1" in result.why


def test_matched_pairs_equal_everywhere_are_not_applicable():
    matrix = np.tile(np.arange(5.0)[:, None], (1, 2))
    result = compare_groups(*_long(matrix))
    assert result.test == "not applicable" and "equal on every one of 5 blocks" in result.why


def test_forced_matching_without_complete_blocks_is_not_applicable():
    values, groups, blocks = _unmatched([np.arange(5.0), np.arange(5.0) + 1])
    result = compare_groups(values, groups, blocks, paired="yes")
    assert result.test == "not applicable" and "only 0 complete blocks" in result.why


def test_auto_design_is_unmatched_when_few_blocks_are_complete():
    values, groups, blocks = _unmatched([np.arange(6.0), np.arange(6.0) + 2])
    blocks[6] = blocks[0]  # one shared block out of eleven
    result = compare_groups(values, groups, blocks)
    assert result.design == "unmatched" and result.n_values == 12


def test_missing_values_and_groups_are_left_out():
    rng = np.random.default_rng(9)
    a, b = rng.normal(size=20), rng.normal(size=20) + 1
    values, groups, blocks = _unmatched([a, b])
    values = np.concatenate([values, [np.nan, 5.0]])
    groups = np.concatenate([groups, ["g0", None]])
    blocks = np.concatenate([blocks, ["x", "y"]])
    result = compare_groups(values, groups, blocks)
    assert result.n_values == 40
    assert result.p_value == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)
