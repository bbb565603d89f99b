import warnings

import numpy as np
import pytest
import sklearn.metrics as skm

from realitycheck import metrics
from realitycheck.errors import InvalidInputError
from realitycheck.metrics import BootstrapResult, UndefinedMetricWarning, _resamples, bootstrap_ci
from realitycheck.metrics._bootstrap import bootstrap_distribution
from realitycheck.metrics._resamples import resample_indices


def defined(name, y_true, y_pred_or_score):
    """Whether realitycheck calls the metric defined on one resample."""
    if name in ("auroc", "balanced_accuracy"):
        return 0 < y_true.sum() < y_true.size
    if name == "pr_auc":
        return y_true.any()
    if name == "f1_macro":
        return (y_true | y_pred_or_score).any() and not (y_true & y_pred_or_score).all()
    raise AssertionError(name)


def sk_metric(name, y_true, y_pred_or_score):
    """sklearn on one resample, NaN where realitycheck calls the metric undefined."""
    if not defined(name, y_true, y_pred_or_score):
        return np.nan
    if name == "auroc":
        return skm.roc_auc_score(y_true, y_pred_or_score)
    if name == "pr_auc":
        return skm.average_precision_score(y_true, y_pred_or_score)
    if name == "balanced_accuracy":
        return skm.balanced_accuracy_score(y_true, y_pred_or_score)
    return skm.f1_score(y_true, y_pred_or_score, average="macro")


def make_scores(seed, n, k, prevalence):
    rng = np.random.default_rng(seed)
    y_true = rng.random(n) < prevalence
    y_true[:2] = [True, False]
    noise = np.linspace(0.5, 2.0, k)[:, None]
    scores = np.round(y_true + rng.normal(size=(k, n)) * noise, 1)
    return y_true, scores


@pytest.mark.parametrize("name", ["auroc", "pr_auc", "f1_macro", "balanced_accuracy"])
@pytest.mark.parametrize(("seed", "n", "prevalence"), [(0, 20, 0.0), (1, 120, 0.3), (2, 9, 0.5)])
def test_distribution_equals_sklearn_loop(name, seed, n, prevalence):
    y_true, scores = make_scores(seed, n, 2, prevalence)
    threshold = None if name in ("auroc", "pr_auc") else np.array([0.5, 0.3])
    values = bootstrap_distribution(
        name, y_true, scores, n_resamples=150, seed=seed, threshold=threshold
    )
    indices = np.concatenate(list(resample_indices(n, 150, seed)))
    inputs = scores if threshold is None else scores >= threshold[:, None]
    is_defined = np.array([[defined(name, y_true[i], row[i]) for i in indices] for row in inputs])
    np.testing.assert_array_equal(~np.isnan(values), is_defined)
    # sklearn (one call per resample and row: the bulk of the test's time) on every
    # one-class resample, every fourth and the last. The 150 resamples are one chunk and
    # one kernel call, so the others take no path of their own.
    one_class = np.array([y_true[i].all() or not y_true[i].any() for i in indices])
    checked = one_class | (np.arange(150) % 4 == 0)
    checked[-1] = True
    expected = np.array(
        [[sk_metric(name, y_true[i], row[i]) for i in indices[checked]] for row in inputs]
    )
    np.testing.assert_allclose(values[:, checked], expected, rtol=0, atol=1e-12)
    if seed == 0 and name != "f1_macro":
        # One hallucinated item in 20: about a third of the resamples miss it.
        assert 20 < np.isnan(values[0]).sum() < 100


@pytest.mark.parametrize("name", metrics._classification.CLASSIFICATION_METRICS)
def test_every_classification_metric_matches_its_function(name):
    y_true, scores = make_scores(3, 30, 1, 0.3)
    values = bootstrap_distribution(name, y_true, scores[0] >= 0.5, n_resamples=40, seed=5)
    indices = np.concatenate(list(resample_indices(30, 40, 5)))
    func = getattr(metrics, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        expected = [func(y_true[i], scores[0, i] >= 0.5) for i in indices]
    np.testing.assert_allclose(values[0], expected, rtol=0, atol=1e-12)


def test_chunked_resampling_gives_the_same_values(monkeypatch):
    y_true, scores = make_scores(4, 50, 3, 0.3)
    whole = bootstrap_distribution("auroc", y_true, scores, n_resamples=64, seed=9)
    monkeypatch.setattr(_resamples, "_CHUNK_ITEMS", 50 * 5)
    assert len(list(resample_indices(50, 64, 9))) == 13
    np.testing.assert_array_equal(
        bootstrap_distribution("auroc", y_true, scores, n_resamples=64, seed=9), whole
    )
    np.testing.assert_array_equal(
        bootstrap_distribution("f1", y_true, scores, n_resamples=64, seed=9, threshold=0.5),
        bootstrap_distribution("f1", y_true, scores >= 0.5, n_resamples=64, seed=9),
    )


@pytest.mark.parametrize(
    ("name", "threshold"), [("auroc", None), ("pr_auc", None), ("f1_weighted", [0.2, 0.5, 0.9])]
)
def test_rows_of_a_2d_call_equal_1d_calls(name, threshold):
    y_true, scores = make_scores(5, 80, 3, 0.25)
    result = bootstrap_ci(name, y_true, scores, n_resamples=200, seed=3, threshold=threshold)
    assert result.value.shape == result.ci_low.shape == result.n_resamples.shape == (3,)
    for k in range(3):
        row = bootstrap_ci(
            name,
            y_true,
            scores[k],
            n_resamples=200,
            seed=3,
            threshold=None if threshold is None else threshold[k],
        )
        assert isinstance(row.value, float) and isinstance(row.n_resamples, int)
        assert row.value == result.value[k]
        assert (row.ci_low, row.ci_high) == (result.ci_low[k], result.ci_high[k])
        assert row.n_resamples == result.n_resamples[k]


def test_interval_is_the_percentile_of_defined_resamples():
    y_true, scores = make_scores(0, 40, 1, 0.1)
    values = bootstrap_distribution("auroc", y_true, scores[0], n_resamples=300, seed=1)[0]
    result = bootstrap_ci("auroc", y_true, scores[0], n_resamples=300, seed=1, confidence=0.9)
    defined = values[~np.isnan(values)]
    assert 0 < defined.size < 300
    assert result.n_resamples == defined.size
    assert (result.ci_low, result.ci_high) == tuple(np.quantile(defined, [0.05, 0.95]))
    assert result.value == metrics.auroc(y_true, scores[0])
    assert 0 <= result.ci_low <= result.value <= result.ci_high <= 1
    assert result.confidence == 0.9


def test_callable_metric_equals_named_metric():
    y_true, scores = make_scores(6, 60, 2, 0.4)
    named = bootstrap_ci("auroc", y_true, scores, n_resamples=50, seed=2)
    looped = bootstrap_ci(skm.roc_auc_score, y_true, scores, n_resamples=50, seed=2)
    np.testing.assert_allclose(named.ci_low, looped.ci_low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(named.ci_high, looped.ci_high, rtol=0, atol=1e-12)
    np.testing.assert_allclose(named.value, looped.value, rtol=0, atol=1e-12)
    thresholded = bootstrap_ci(metrics.f1, y_true, scores, n_resamples=50, seed=2, threshold=0.5)
    reference = bootstrap_ci("f1", y_true, scores, n_resamples=50, seed=2, threshold=0.5)
    np.testing.assert_allclose(thresholded.ci_low, reference.ci_low, rtol=0, atol=1e-12)


def test_seed_controls_the_resamples():
    y_true, scores = make_scores(7, 50, 1, 0.3)
    first = bootstrap_ci("pr_auc", y_true, scores[0], n_resamples=100, seed=11)
    assert first == bootstrap_ci("pr_auc", y_true, scores[0], n_resamples=100, seed=11)
    assert first != bootstrap_ci("pr_auc", y_true, scores[0], n_resamples=100, seed=12)


def test_undefined_everywhere_gives_nan_and_warnings():
    with pytest.warns(UndefinedMetricWarning) as record:
        result = bootstrap_ci("auroc", [1, 1, 1], [0.2, 0.4, 0.1], n_resamples=20)
    messages = [str(warning.message) for warning in record]
    assert any("undefined on the full data" in message for message in messages)
    assert any("undefined on every resample" in message for message in messages)
    assert np.isnan(result.value) and np.isnan(result.ci_low) and np.isnan(result.ci_high)
    assert result.n_resamples == 0
    assert isinstance(result, BootstrapResult)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metric": "aurocc"}, r"'metric' parameter of bootstrap_ci .*Did you mean 'auroc'"),
        ({"metric": 3}, r"'metric' parameter of bootstrap_ci must be one of"),
        ({"n_resamples": 0}, r"'n_resamples' parameter of bootstrap_ci must be an int >= 1"),
        ({"n_resamples": 2.5}, r"'n_resamples' .* Got 2.5 instead"),
        ({"confidence": 1.0}, r"'confidence' parameter of bootstrap_ci must be a float in"),
        ({"seed": -1}, r"'seed' parameter of bootstrap_ci must be an int >= 0 or None"),
        ({"threshold": 0.5}, r"'threshold' parameter of bootstrap_ci must be None for"),
        ({"metric": "f1_macro"}, r"'threshold' parameter .* must be a number when 'y_score'"),
        (
            {"metric": "f1", "threshold": [0.1, 0.2, 0.3]},
            r"'threshold' .* one number per row of 'y_score' \(2\). Got shape \(3,\)",
        ),
        ({"metric": "f1", "threshold": np.nan}, r"'threshold' .* Got 1 NaN"),
        ({"y_score": np.zeros((2, 2, 5))}, r"'y_score' parameter of bootstrap_ci must be a 1-D"),
        ({"y_score": np.zeros((2, 4))}, r"'y_score' .* one value per item of 'y_true' \(5\)"),
        (
            {"y_true": [0, 1, 1, 0, 3]},
            r"'y_true' parameter of bootstrap_ci must be an array of 0/1",
        ),
    ],
)
def test_bad_arguments_are_rejected(kwargs, match):
    arguments = {
        "metric": "auroc",
        "y_true": [0, 1, 1, 0, 1],
        "y_score": np.array([[0.1, 0.8, 0.7, 0.3, 0.4], [0.2, 0.6, 0.6, 0.1, 0.9]]),
    }
    arguments.update(kwargs)
    metric, y_true, y_score = (
        arguments.pop("metric"),
        arguments.pop("y_true"),
        arguments.pop("y_score"),
    )
    with pytest.raises(InvalidInputError, match=match):
        bootstrap_ci(metric, y_true, y_score, **arguments)
