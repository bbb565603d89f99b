import numpy as np
import pytest
import sklearn.metrics as skm

from realitycheck import metrics
from realitycheck.metrics import UndefinedMetricWarning


def sk_reference(name):
    return {
        "accuracy": skm.accuracy_score,
        "balanced_accuracy": skm.balanced_accuracy_score,
        "precision": skm.precision_score,
        "recall": skm.recall_score,
        "f1": skm.f1_score,
        "f1_macro": lambda t, p: skm.f1_score(t, p, average="macro"),
        "f1_weighted": lambda t, p: skm.f1_score(t, p, average="weighted"),
        "cohen_kappa": skm.cohen_kappa_score,
    }[name]


NAMES = [
    "accuracy",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "f1_macro",
    "f1_weighted",
    "cohen_kappa",
]
RANGES = {"cohen_kappa": (-1, 1)}


def make_data(seed, n, prevalence, agreement):
    rng = np.random.default_rng(seed)
    y_true = rng.random(n) < prevalence
    y_pred = np.where(rng.random(n) < agreement, y_true, rng.random(n) < 0.5)
    # Both classes in y_true and in y_pred: every metric is defined.
    y_true[:2] = [True, False]
    y_pred[:2] = [True, False]
    return y_true.astype(int), y_pred.astype(int)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("n", "prevalence"), [(2, 0.5), (25, 0.5), (300, 0.3), (2000, 0.03)])
@pytest.mark.parametrize("agreement", [0.0, 0.6, 0.95])
def test_equals_sklearn(name, seed, n, prevalence, agreement):
    y_true, y_pred = make_data(seed, n, prevalence, agreement)
    value = getattr(metrics, name)(y_true, y_pred)
    assert value == pytest.approx(sk_reference(name)(y_true, y_pred), abs=1e-12)
    low, high = RANGES.get(name, (0, 1))
    assert low <= value <= high


def test_kappa_is_negative_for_systematic_disagreement():
    y_true = np.array([1, 0, 1, 0, 1, 0])
    assert metrics.cohen_kappa(y_true, 1 - y_true) == -1.0
    assert metrics.cohen_kappa(y_true, y_true) == 1.0


@pytest.mark.parametrize(
    ("name", "y_true", "y_pred", "match"),
    [
        ("precision", [1, 0, 1], [0, 0, 0], "no item is predicted hallucinated"),
        ("recall", [0, 0, 0], [1, 0, 1], "no hallucinated item"),
        ("balanced_accuracy", [1, 1, 1], [1, 0, 1], "one class only"),
        ("balanced_accuracy", [0, 0], [0, 0], "one class only"),
        ("f1", [0, 0, 0], [0, 0, 0], "no item is hallucinated"),
        ("f1_macro", [0, 0, 0], [0, 0, 0], "neither"),
        ("f1_macro", [1, 1], [1, 1], "neither"),
        ("cohen_kappa", [1, 1, 1], [1, 1, 1], "same constant"),
        ("cohen_kappa", [0, 0], [0, 0], "same constant"),
    ],
)
def test_undefined_is_nan_with_warning(name, y_true, y_pred, match):
    with pytest.warns(UndefinedMetricWarning, match=match):
        assert np.isnan(getattr(metrics, name)(y_true, y_pred))


@pytest.mark.parametrize(
    ("y_true", "y_pred"),
    [([0, 0, 0], [0, 0, 0]), ([1, 1, 1], [1, 0, 1]), ([0, 0, 0], [1, 0, 0])],
)
def test_always_defined_metrics_match_sklearn_on_one_class(y_true, y_pred):
    assert metrics.accuracy(y_true, y_pred) == skm.accuracy_score(y_true, y_pred)
    expected = skm.f1_score(y_true, y_pred, average="weighted", zero_division=0)
    assert metrics.f1_weighted(y_true, y_pred) == pytest.approx(expected, abs=1e-12)


def test_f1_is_zero_not_nan_when_only_precision_is_undefined():
    assert metrics.f1([1, 0, 1], [0, 0, 0]) == 0.0
    # One class in y_true but both in y_pred: macro F1 and kappa stay defined.
    assert metrics.f1_macro([0, 0, 0, 0], [1, 0, 0, 0]) == pytest.approx((0 + 6 / 7) / 2)
    assert metrics.cohen_kappa([0, 0, 0, 0], [1, 0, 0, 0]) == 0.0
