import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from realitycheck.metrics._bootstrap import resample_indices
from realitycheck.studies._delong import auroc_bootstrap, delong
from realitycheck.studies._famd import famd_scores, fit_famd
from realitycheck.studies._tests import compare_groups, shapiro_check, wilson_interval

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


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (57, 300), (1, 1)])
def test_wilson_interval_matches_statsmodels(k, n):
    from statsmodels.stats.proportion import proportion_confint

    assert wilson_interval(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"))


def test_wilson_interval_of_no_items_is_nan():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


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


# -- DeLong and the paired bootstrap ---------------------------------------------------------


def _slow_delong(y, scores):
    """DeLong's covariance straight from the U-statistic kernel psi over all pairs."""
    pos, neg = scores[:, y == 1], scores[:, y == 0]
    m, n = pos.shape[1], neg.shape[1]
    k = scores.shape[0]
    v10, v01 = np.zeros((k, m)), np.zeros((k, n))
    for r in range(k):
        for i in range(m):
            for j in range(n):
                psi = 1.0 if pos[r, i] > neg[r, j] else 0.5 if pos[r, i] == neg[r, j] else 0.0
                v10[r, i] += psi / n
                v01[r, j] += psi / m
    s10 = (v10 - v10.mean(axis=1, keepdims=True)) @ (v10 - v10.mean(axis=1, keepdims=True)).T
    s01 = (v01 - v01.mean(axis=1, keepdims=True)) @ (v01 - v01.mean(axis=1, keepdims=True)).T
    return v10.mean(axis=1), s10 / (m - 1) / m + s01 / (n - 1) / n


@pytest.mark.parametrize("seed", range(4))
def test_fast_delong_equals_the_direct_u_statistic_and_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 60))
    y = (rng.random(n) < 0.4).astype(int)
    y[:2], y[2:4] = 1, 0
    scores = np.vstack(
        [
            np.round(y + rng.normal(size=n), 1),  # ties
            rng.integers(0, 4, size=n).astype(float),  # heavy ties
            np.round(0.5 * y + rng.normal(size=n), 2),
        ]
    )
    fast = delong(y, scores)
    areas, cov = _slow_delong(y, scores)
    np.testing.assert_allclose(fast.auroc, areas)
    np.testing.assert_allclose(fast.auroc, [roc_auc_score(y, s) for s in scores])
    np.testing.assert_allclose(fast.covariance, cov)
    z = (areas[0] - areas[1]) / math.sqrt(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    assert fast.z == pytest.approx(z)
    assert fast.p_value == pytest.approx(2 * stats.norm.sf(abs(z)))


@pytest.mark.parametrize(
    ("y", "scores", "note"),
    [
        ([0, 0, 0, 1], [[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], "fewer than 2"),
        ([0, 0, 1, 1, 0, 1], [[1, 2, 3, 4, 5, 6]] * 2, "zero variance"),
        ([0, 0, 1, 1, 0, 1], [[5.0] * 6, [5.0] * 6], "zero variance"),
    ],
)
def test_delong_is_nan_with_a_note_when_undefined(y, scores, note):
    result = delong(y, scores)
    assert math.isnan(result.p_value) and note in result.note


def test_paired_bootstrap_equals_a_loop_over_the_same_resamples():
    rng = np.random.default_rng(11)
    n = 80
    y = (rng.random(n) < 0.5).astype(int)
    a, b = y + rng.normal(size=n), np.round(y * 0.5 + rng.normal(size=n), 1)
    result = auroc_bootstrap(y, a, b, n_resamples=120, seed=3)
    diffs = []
    for chunk in resample_indices(n, 120, 3):
        for rows in chunk:
            if 0 < y[rows].sum() < n:
                diffs.append(roc_auc_score(y[rows], a[rows]) - roc_auc_score(y[rows], b[rows]))
    diffs = np.array(diffs)
    assert result.n_resamples == diffs.size
    assert result.difference == pytest.approx(roc_auc_score(y, a) - roc_auc_score(y, b))
    assert (result.ci_low, result.ci_high) == pytest.approx(
        tuple(np.quantile(diffs, [0.025, 0.975]))
    )
    side = min(np.mean(diffs <= 0), np.mean(diffs >= 0))
    assert result.p_value == pytest.approx(min(1.0, 2 * side))


def test_paired_bootstrap_of_identical_detectors_has_p_one():
    y = np.array([0, 1] * 20)
    s = np.linspace(0, 1, 40)
    result = auroc_bootstrap(y, s, s, n_resamples=50)
    assert result.difference == 0 and result.p_value == 1.0 and result.ci_low == result.ci_high == 0


# -- FAMD ----------------------------------------------------------------------------------


def _mixed(seed, n=120):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    return pd.DataFrame(
        {
            "recorded:a[x=1]": z + rng.normal(size=n),
            "b": np.exp(z + rng.normal(size=n)),
            "c": (z + rng.normal(size=n) > 0).astype(float),
            "d": (rng.random(n) < 0.3).astype(float),
        }
    )


def _famd_by_hand(frame, binary):
    """Standardise numeric columns; one-hot, centre and divide by sqrt(p) categories; SVD."""
    parts = []
    for c in frame.columns:
        x = frame[c].to_numpy()
        if c in binary:
            for value in (0.0, 1.0):
                indicator = (x == value).astype(float)
                p = indicator.mean()
                parts.append((indicator - p) / math.sqrt(p))
        else:
            parts.append((x - x.mean()) / x.std())
    z = np.column_stack(parts)
    u, s, vt = np.linalg.svd(z / math.sqrt(len(frame)), full_matrices=False)
    return s[0] ** 2, z @ vt[0], (s**2).sum()


@pytest.mark.parametrize("binary", [["c", "d"], [], ["c"]])
def test_famd_equals_a_hand_computation(binary):
    frame = _mixed(0)
    if not binary:
        frame = frame.drop(columns=["c", "d"])
    fit = fit_famd(frame, binary)
    eigenvalue, scores, total = _famd_by_hand(frame, binary)
    assert fit.eigenvalue == pytest.approx(eigenvalue)
    assert fit.inertia_share == pytest.approx(eigenvalue / total)
    got = famd_scores(fit, frame)
    np.testing.assert_allclose(np.abs(got), np.abs(scores), atol=1e-9)
    assert fit.contributions.sum() == pytest.approx(100)


def test_famd_matches_prince_on_the_fitted_rows():
    prince = pytest.importorskip("prince")
    frame = _mixed(1)
    fit = fit_famd(frame, ["c", "d"])
    table = frame[["recorded:a[x=1]", "b"]].join(frame[["c", "d"]].astype(int).astype(str))
    model = prince.FAMD(n_components=2, engine="scipy", categorical_columns=["c", "d"]).fit(table)
    np.testing.assert_allclose(famd_scores(fit, frame), model.row_coordinates(table)[0], atol=1e-10)
    np.testing.assert_allclose(
        fit.contributions / 100, model.variable_contributions_[0].loc[list(frame.columns)]
    )
    assert fit.engine == "prince.FAMD"


def test_famd_of_binary_signals_equals_pca_of_their_indicators():
    frame = _mixed(2)
    mixed = fit_famd(frame, ["c", "d"])
    as_numbers = fit_famd(frame, [])
    assert mixed.eigenvalue == pytest.approx(as_numbers.eigenvalue)
    np.testing.assert_allclose(
        np.abs(famd_scores(mixed, frame)), np.abs(famd_scores(as_numbers, frame)), atol=1e-9
    )


def test_famd_scores_an_item_the_same_alone_or_in_a_batch():
    frame = _mixed(3)
    fit = fit_famd(frame.iloc[:80], ["c", "d"])
    batch = famd_scores(fit, frame.iloc[80:])
    alone = [famd_scores(fit, frame.iloc[[i]])[0] for i in range(80, 120)]
    np.testing.assert_allclose(batch, alone)
