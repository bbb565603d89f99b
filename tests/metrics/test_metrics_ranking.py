import warnings

import numpy as np
import pytest
import sklearn.metrics as skm

from realitycheck.metrics import (
    UndefinedMetricWarning,
    auroc,
    pr_auc,
    precision_recall_curve,
    roc_curve,
)


def make_data(seed, n, prevalence, decimals):
    """Random labels with both classes and noisy scores, rounded to create ties."""
    rng = np.random.default_rng(seed)
    y_true = rng.random(n) < prevalence
    y_true[:2] = [True, False]
    scores = y_true * 0.7 + rng.normal(size=n)
    if decimals is not None:
        scores = np.round(scores, decimals)
    return y_true, scores


CASES = [
    (seed, n, prevalence, decimals)
    for seed in (0, 1, 2)
    for n, prevalence in ((2, 0.5), (17, 0.5), (200, 0.3), (1000, 0.05))
    for decimals in (None, 1, 0)
]


@pytest.mark.parametrize(("seed", "n", "prevalence", "decimals"), CASES)
def test_areas_equal_sklearn(seed, n, prevalence, decimals):
    y_true, scores = make_data(seed, n, prevalence, decimals)
    assert auroc(y_true, scores) == pytest.approx(skm.roc_auc_score(y_true, scores), abs=1e-12)
    expected = skm.average_precision_score(y_true, scores)
    assert pr_auc(y_true, scores) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("seed", "n", "prevalence", "decimals"), CASES)
def test_curves_equal_sklearn(seed, n, prevalence, decimals):
    y_true, scores = make_data(seed, n, prevalence, decimals)
    for ours, theirs in zip(roc_curve(y_true, scores), skm.roc_curve(y_true, scores), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    pairs = zip(
        precision_recall_curve(y_true, scores),
        skm.precision_recall_curve(y_true, scores),
        strict=True,
    )
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_ranges_and_orientation(seed):
    y_true, scores = make_data(seed, 50, 0.4, 1)
    value = auroc(y_true, scores)
    assert 0 <= value <= 1
    # Reversing the scores mirrors AUROC around 0.5 (ties stay ties).
    assert auroc(y_true, -scores) == pytest.approx(1 - value, abs=1e-12)
    assert y_true.mean() - 1e-12 <= pr_auc(y_true, np.zeros(50)) <= 1
    assert auroc(y_true, y_true.astype(float)) == 1.0
    assert pr_auc(y_true, y_true.astype(float)) == 1.0
    fpr, tpr, thresholds = roc_curve(y_true, scores)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert thresholds[0] == np.inf and np.all(np.diff(thresholds) < 0)
    precision, recall, pr_thresholds = precision_recall_curve(y_true, scores)
    assert np.all((precision >= 0) & (precision <= 1)) and np.all(np.diff(recall) <= 0)
    assert np.all(np.diff(pr_thresholds) > 0)


def test_constant_scores_are_chance():
    y_true = [1, 0, 0, 1, 0]
    assert auroc(y_true, [0.3] * 5) == 0.5
    assert pr_auc(y_true, [0.3] * 5) == pytest.approx(0.4)


def test_accepts_lists_and_bools():
    assert auroc([True, False, True], [0.9, 0.1, 0.5]) == 1.0
    assert auroc([1.0, 0.0, 1.0], [3, 1, 2]) == 1.0


@pytest.mark.parametrize("label", [0, 1])
def test_auroc_one_class_is_nan_with_warning(label):
    with pytest.warns(UndefinedMetricWarning, match="one class"):
        assert np.isnan(auroc([label] * 4, [0.1, 0.2, 0.3, 0.4]))


def test_pr_auc_without_positives_is_nan_with_warning():
    with pytest.warns(UndefinedMetricWarning, match="no positive"):
        assert np.isnan(pr_auc([0, 0, 0], [0.1, 0.2, 0.3]))


def test_pr_auc_with_only_positives_is_one_like_sklearn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pr_auc([1, 1, 1], [0.1, 0.2, 0.3]) == 1.0
    assert skm.average_precision_score([1, 1, 1], [0.1, 0.2, 0.3]) == 1.0


def test_roc_curve_one_class_gives_nan_rate():
    with pytest.warns(UndefinedMetricWarning, match="no negative"):
        fpr, tpr, _ = roc_curve([1, 1, 1], [0.1, 0.2, 0.3])
    assert np.isnan(fpr).all() and not np.isnan(tpr).any()
    with pytest.warns(UndefinedMetricWarning, match="no positive"):
        fpr, tpr, _ = roc_curve([0, 0, 0], [0.1, 0.2, 0.3])
    assert np.isnan(tpr).all() and not np.isnan(fpr).any()


def test_precision_recall_curve_without_positives_has_nan_recall():
    with pytest.warns(UndefinedMetricWarning, match="recall is NaN"):
        precision, recall, _ = precision_recall_curve([0, 0], [0.1, 0.2])
    np.testing.assert_array_equal(precision, [0.0, 0.0, 1.0])
    assert np.isnan(recall[:-1]).all() and recall[-1] == 0
