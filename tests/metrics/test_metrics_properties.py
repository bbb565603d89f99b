"""Every metric against scikit-learn / scipy (or exact arithmetic) on generated inputs.

Inputs include ties, huge (up to 1e308) and tiny (subnormal) magnitudes, integers
beyond 2**53, and a single class. The runs are derandomized: the same examples
every time, so a failure reproduces.
"""

import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics as skm
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from realitycheck import metrics
from realitycheck.metrics import UndefinedMetricWarning

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

_FINITE = {"allow_nan": False, "allow_infinity": False}
# One value: a tie-prone small integer, an ordinary, a huge or a tiny magnitude.
VALUE = st.one_of(
    st.integers(-3, 3).map(float),
    st.floats(-10, 10, **_FINITE),
    st.floats(-1e308, 1e308, **_FINITE),
    st.floats(-1e-300, 1e-300, **_FINITE),
    st.sampled_from([5e-324, -5e-324, 1e308, -1e308, 0.0]),
)
BIG_INT = st.integers(-(2**63), 2**63 - 1)
# The tests that call scikit-learn on every example (the bulk of this file's time) draw
# fewer; the edge cases that the strategies reach only now and then are explicit examples.
ORACLE_SETTINGS = settings(SETTINGS, max_examples=30)


def _pair(y_true, y_score):
    return np.array(y_true, dtype=bool), np.array(y_score)


# One item; one class only; ties across the classes at the largest magnitudes, at zero
# (0.0 and -0.0) and between subnormals.
EDGE_SCORES = [
    _pair([True], [0.0]),
    _pair([False], [-5e-324]),
    _pair([True, True, True], [1e308, -1.0, 1e308]),
    _pair([False, False, False], [2.0, 2.0, -1e-300]),
    _pair(
        [True, False, True, False, True, False, True, False],
        [1e308, 1e308, 5e-324, 5e-324, 0.0, -0.0, -5e-324, -1e308],
    ),
    _pair([False, True, False, True, True], [-1e308, -1e308, 1e-300, 3.0, -3.0]),
]
# Integers that float64 cannot tell apart (2**53 + 1 and 2**53, across the classes), the
# ends of int64, near-ties at 2**62, and one class only.
EDGE_INTS = [
    _pair([True, False, True, False], np.array([2**53 + 1, 2**53, 2**53, 2**53 - 1])),
    _pair(
        [True, False, False, True, False],
        np.array([2**63 - 1, 2**63 - 2, -(2**63), -(2**63) + 1, 2**63 - 1]),
    ),
    _pair([False, True, True, False], np.array([2**62 + 2, 2**62 + 1, -(2**62), -(2**62) + 1])),
    _pair([True, True], np.array([2**62, 2**62 + 1])),
    _pair([False], np.array([-(2**63)])),
]


@st.composite
def labelled(draw, values=VALUE, min_size=1):
    """``(y_true, y_score)``: labels (sometimes one class only) and scores of one length."""
    n = draw(st.integers(min_size, 25))
    y_true = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    scores = draw(st.lists(values, min_size=n, max_size=n))
    return y_true, np.array(scores)


@st.composite
def labelled_ints(draw):
    """Labels and int64 scores spread over the whole int64 range, with near-ties."""
    y_true, scores = draw(labelled(values=BIG_INT))
    offsets = draw(st.lists(st.integers(-2, 2), min_size=scores.size, max_size=scores.size))
    base = draw(st.sampled_from([0, 2**53, 2**62, -(2**62)]))
    near = np.array([base + o for o in offsets], dtype=np.int64)
    mix = draw(st.lists(st.booleans(), min_size=scores.size, max_size=scores.size))
    return y_true, np.where(mix, near, scores.astype(np.int64))


def _both_classes(y_true):
    return 0 < y_true.sum() < y_true.size


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = func(*args, **kwargs)
    return value, [w.category for w in caught]


# -- ranking metrics ------------------------------------------------------------------------


@ORACLE_SETTINGS
@given(labelled())
@example(EDGE_SCORES[0])
@example(EDGE_SCORES[1])
@example(EDGE_SCORES[2])
@example(EDGE_SCORES[3])
@example(EDGE_SCORES[4])
@example(EDGE_SCORES[5])
def test_auroc_and_pr_auc_equal_sklearn(data):
    y_true, scores = data
    value, caught = _quiet(metrics.auroc, y_true, scores)
    if _both_classes(y_true):
        assert value == pytest.approx(skm.roc_auc_score(y_true, scores), abs=1e-12)
        assert 0.0 <= value <= 1.0
    else:
        assert np.isnan(value) and UndefinedMetricWarning in caught
    value, caught = _quiet(metrics.pr_auc, y_true, scores)
    if y_true.any():
        assert value == pytest.approx(skm.average_precision_score(y_true, scores), abs=1e-12)
    else:
        assert np.isnan(value) and UndefinedMetricWarning in caught


@ORACLE_SETTINGS
@given(labelled_ints())
@example(EDGE_INTS[0])
@example(EDGE_INTS[1])
@example(EDGE_INTS[2])
@example(EDGE_INTS[3])
@example(EDGE_INTS[4])
def test_rank_metrics_of_huge_integers_equal_sklearn_on_exact_ranks(data):
    y_true, scores = data
    ranks = scipy.stats.rankdata(scores)  # exact on int64: compares the integers
    if _both_classes(y_true):
        assert metrics.auroc(y_true, scores) == pytest.approx(
            skm.roc_auc_score(y_true, ranks), abs=1e-12
        )
        assert metrics.auroc_many([y_true], [scores])[0, 0] == pytest.approx(
            skm.roc_auc_score(y_true, ranks), abs=1e-12
        )
    if y_true.any():
        assert metrics.pr_auc(y_true, scores) == pytest.approx(
            skm.average_precision_score(y_true, ranks), abs=1e-12
        )
    assert metrics.rankdata(scores).tolist() == ranks.tolist()


@ORACLE_SETTINGS
@given(labelled())
@example(EDGE_SCORES[4])
@example(EDGE_SCORES[5])
def test_curves_equal_sklearn(data):
    y_true, scores = data
    if not _both_classes(y_true):
        return
    for ours, theirs in zip(
        metrics.roc_curve(y_true, scores), skm.roc_curve(y_true, scores), strict=True
    ):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)
    for ours, theirs in zip(
        metrics.precision_recall_curve(y_true, scores),
        skm.precision_recall_curve(y_true, scores),
        strict=True,
    ):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)


@SETTINGS
@given(labelled())
def test_choose_threshold_reaches_the_best_f1_macro_of_any_score(data):
    y_true, scores = data
    if not _both_classes(y_true):
        return  # f1_macro over both classes is undefined with one class
    threshold, _ = _quiet(metrics.choose_threshold, y_true, scores, objective="f1_macro")
    assert threshold in scores

    def f1_macro(t):  # the textbook formula, both classes, for one threshold
        pred = scores >= t
        out = []
        for cls in (True, False):
            tp = np.sum((pred == cls) & (y_true == cls))
            wrong = np.sum(pred != y_true)
            out.append(2 * tp / (2 * tp + wrong))
        return np.mean(out)

    assert f1_macro(threshold) == pytest.approx(max(f1_macro(t) for t in scores), abs=1e-12)
    # Of the best thresholds, the smallest: ties go towards flagging more items.
    best = max(f1_macro(t) for t in scores)
    assert threshold == min(t for t in scores if f1_macro(t) >= best - 1e-12)


# -- classification metrics -----------------------------------------------------------------

REFERENCES = {
    "accuracy": skm.accuracy_score,
    "balanced_accuracy": skm.balanced_accuracy_score,
    "precision": lambda t, p: skm.precision_score(t, p, zero_division=np.nan),
    "recall": lambda t, p: skm.recall_score(t, p, zero_division=np.nan),
    "f1": lambda t, p: skm.f1_score(t, p, zero_division=np.nan),
    "f1_macro": lambda t, p: skm.f1_score(t, p, average="macro"),
    "f1_weighted": lambda t, p: skm.f1_score(t, p, average="weighted"),
    "cohen_kappa": skm.cohen_kappa_score,
}


@st.composite
def predictions(draw):
    n = draw(st.integers(1, 30))
    pair = st.lists(st.booleans(), min_size=n, max_size=n)
    return np.array(draw(pair)), np.array(draw(pair))


@pytest.mark.parametrize("name", sorted(REFERENCES))
@ORACLE_SETTINGS
@given(data=predictions())
# One item; one class in y_true, in y_pred, or in both (the same or opposite); perfect
# and all wrong.
@example(data=_pair([True], [True]))
@example(data=_pair([True], [False]))
@example(data=_pair([False], [True]))
@example(data=_pair([False], [False]))
@example(data=_pair([False, False, False], [False, False, False]))
@example(data=_pair([True, True, True], [True, True, True]))
@example(data=_pair([True, True], [False, False]))
@example(data=_pair([True, True, True], [True, False, True]))
@example(data=_pair([False, False, False], [False, True, False]))
@example(data=_pair([True, False, True], [False, False, False]))
@example(data=_pair([True, False, False], [True, True, True]))
@example(data=_pair([True, False, True, False], [True, False, True, False]))
@example(data=_pair([True, False, True, False], [False, True, False, True]))
def test_classification_metrics_equal_sklearn_where_defined(name, data):
    y_true, y_pred = data
    value, caught = _quiet(getattr(metrics, name), y_true, y_pred)
    if np.isnan(value):
        # Undefined (a zero division, one class): NaN always comes with the warning.
        assert UndefinedMetricWarning in caught
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = REFERENCES[name](y_true, y_pred)
    assert value == pytest.approx(expected, abs=1e-12)
    low = -1.0 if name == "cohen_kappa" else 0.0
    assert low <= value <= 1.0


# -- correlations ---------------------------------------------------------------------------


def _exact_pearson(x, y):
    """Pearson's r in rational arithmetic (exact up to the final rounding), NaN if constant."""
    fx, fy = [Fraction(v) for v in x], [Fraction(v) for v in y]
    mx, my = sum(fx) / len(fx), sum(fy) / len(fy)
    sxy = sum((a - mx) * (b - my) for a, b in zip(fx, fy, strict=True))
    sxx = sum((a - mx) ** 2 for a in fx)
    syy = sum((b - my) ** 2 for b in fy)
    if sxx == 0 or syy == 0:
        return float("nan")
    r = float(np.sqrt(float(sxy * sxy / (sxx * syy))))
    return r if sxy > 0 else -r


@st.composite
def paired(draw, values=VALUE):
    n = draw(st.integers(1, 15))
    column = st.lists(values, min_size=n, max_size=n)
    return np.array(draw(column)), np.array(draw(column))


@SETTINGS
@given(paired())
def test_pearson_equals_exact_arithmetic_and_never_clamps(data):
    x, y = data
    value, caught = _quiet(metrics.pearson, x, y)
    expected = _exact_pearson(x, y)
    if np.isnan(expected):
        assert np.isnan(value) and UndefinedMetricWarning in caught
        return
    assert value == pytest.approx(expected, abs=1e-9)
    assert -1.0 <= value <= 1.0
    if np.abs(np.r_[x, y]).max() < 1e150:  # scipy's own sums stay finite here
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = scipy.stats.pearsonr(x, y).statistic if x.size > 1 else np.nan
        if np.isfinite(theirs):
            assert value == pytest.approx(theirs, abs=1e-9)


@SETTINGS
@given(paired())
def test_spearman_and_kendall_equal_scipy(data):
    x, y = data
    value, caught = _quiet(metrics.spearman, x, y)
    constant = np.unique(x).size < 2 or np.unique(y).size < 2
    if constant:
        assert np.isnan(value) and UndefinedMetricWarning in caught
        assert all(np.isnan(metrics.kendall_tau_b(x, y)))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = scipy.stats.spearmanr(x, y).statistic
        tau = scipy.stats.kendalltau(x, y, variant="b").statistic
    assert value == pytest.approx(expected, abs=1e-12)
    assert metrics.kendall_tau_b(x, y)[0] == pytest.approx(tau, abs=1e-12)
    assert metrics.rankdata(x).tolist() == scipy.stats.rankdata(x).tolist()


# -- proportions ----------------------------------------------------------------------------


@SETTINGS
@given(st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_equals_scipy(counts):
    k, n = counts
    low, high = metrics.wilson_interval(k, n, confidence=0.9)
    ci = scipy.stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="wilson")
    assert (low, high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert 0.0 <= low <= k / n <= high <= 1.0
