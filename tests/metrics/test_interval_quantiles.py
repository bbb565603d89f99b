"""bootstrap_ci's percentile interval: numpy's linear quantile, bit for bit, without np.quantile.

``_linear_quantiles`` replaces ``np.quantile`` (method "linear") in
``_bootstrap._intervals``; every comparison here is of bit patterns, stricter
than ``==`` (it also tells 0.0 from -0.0).
"""

import numpy as np
import pytest

from realitycheck.metrics import bootstrap_ci, bootstrap_distribution
from realitycheck.metrics._bootstrap import _linear_quantiles

CONFIDENCES = (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)


def quantiles_of(confidence):
    """The two quantiles bootstrap_ci asks for, computed as it does."""
    return ((1 - confidence) / 2, (1 + confidence) / 2)


def bits(x):
    return np.asarray(x, dtype=np.float64).view(np.int64)


def random_rows(rng, m, n, kind):
    """Shape (m, n) values of one kind: wide magnitudes of both signs, ties, signed zeros."""
    if kind == "wide":
        return rng.normal(size=(m, n)) * 10.0 ** rng.uniform(-8, 12, size=(m, 1))
    if kind == "negative":
        return -rng.random((m, n)) * 1e6 - 1e9
    if kind == "ties":
        return rng.integers(-3, 4, size=(m, n)) * 0.1
    if kind == "zeros":
        return rng.choice([0.0, -0.0, 0.5, -0.5], size=(m, n))
    return rng.random((m, n))


def naive_quantiles(values, quantiles):
    """The one-form interpolation ``a + (b - a) gamma``, which numpy does not use from 0.5."""
    ordered = np.sort(values, axis=1)
    n = values.shape[1]
    out = []
    for q in quantiles:
        virtual = (n - 1) * q
        first = min(int(np.floor(virtual)), n - 1)
        second = min(first + 1, n - 1)
        a, b = ordered[:, first], ordered[:, second]
        out.append(a + (b - a) * (virtual - first))
    return np.stack(out, axis=1)


KINDS = ("uniform", "wide", "negative", "ties", "zeros")


@pytest.mark.parametrize("kind", KINDS)
def test_rows_of_one_length_match_np_quantile(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    upper_weights = []
    for case in range(120):
        n = int(rng.integers(1, 2001)) if case % 3 else int(rng.integers(1, 12))
        values = random_rows(rng, int(rng.integers(1, 11)), n, kind)
        confidence = CONFIDENCES[case % len(CONFIDENCES)]
        got = _linear_quantiles(values, quantiles_of(confidence))
        want = np.quantile(values, quantiles_of(confidence), axis=1).T
        assert got.shape == want.shape
        np.testing.assert_array_equal(bits(got), bits(want))
        upper_weights.append(((n - 1) * quantiles_of(confidence)[1]) % 1)
    # The cases reach _lerp's second form (weight >= 0.5) as well as its first.
    assert any(w >= 0.5 for w in upper_weights)
    assert any(0 < w < 0.5 for w in upper_weights)


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_rows_of_different_lengths_match_np_quantile(confidence):
    """As in the per-row loop of _intervals: each row's defined values alone."""
    rng = np.random.default_rng(int(confidence * 1000))
    for case in range(60):
        row = random_rows(rng, 1, int(rng.integers(1, 2001)), KINDS[case % len(KINDS)])[0]
        got = _linear_quantiles(row[None, :], quantiles_of(confidence))[0]
        np.testing.assert_array_equal(bits(got), bits(np.quantile(row, quantiles_of(confidence))))


def test_signed_zeros_keep_numpys_sign():
    """An interval end on tied 0.0 and -0.0 takes the sign numpy's partition leaves there."""
    rng = np.random.default_rng(7)
    zero_ends = 0
    for _ in range(200):
        n = int(rng.integers(2, 400))
        values = rng.choice([0.0, -0.0, 1.0], p=[0.45, 0.45, 0.1], size=(3, n))
        got = _linear_quantiles(values, quantiles_of(0.9))
        want = np.quantile(values, quantiles_of(0.9), axis=1).T
        np.testing.assert_array_equal(bits(got), bits(want))
        zero_ends += int((want == 0).sum())
    assert zero_ends > 100


def test_cases_tell_numpys_lerp_from_the_naive_one():
    """The random cases above would catch ``a + (b - a) gamma`` used for every weight."""
    rng = np.random.default_rng(11)
    differs = 0
    for case in range(300):
        values = random_rows(rng, 4, int(rng.integers(2, 2001)), "wide")
        q = quantiles_of(CONFIDENCES[case % len(CONFIDENCES)])
        want = np.quantile(values, q, axis=1).T
        differs += int((bits(naive_quantiles(values, q)) != bits(want)).sum())
    assert differs > 0


def make_items(seed, n, k, positives):
    """Labels with ``positives`` hallucinated items and k rows of probabilities."""
    rng = np.random.default_rng(seed)
    y_true = np.zeros(n, dtype=int)
    y_true[rng.choice(n, size=positives, replace=False)] = 1
    scores = np.clip(0.35 * y_true + 0.65 * rng.random((k, n)), 0.0, 1.0)
    return y_true, scores


def reference_interval(metric, y_true, scores, n_resamples, seed, confidence, threshold):
    """np.quantile over each row's defined values of bootstrap_distribution."""
    values = bootstrap_distribution(
        metric, y_true, scores, n_resamples=n_resamples, seed=seed, threshold=threshold
    )
    bounds = np.full((values.shape[0], 2), np.nan)
    for k, row in enumerate(values):
        kept = row[~np.isnan(row)]
        if kept.size:
            bounds[k] = np.quantile(kept, quantiles_of(confidence))
    return bounds, (~np.isnan(values)).sum(axis=1)


METRICS = (
    ("auroc", None),
    ("pr_auc", None),
    ("prr", None),
    ("ece", None),
    ("brier", None),
    ("accuracy", 0.5),
    ("f1", 0.5),
)


@pytest.mark.parametrize(("metric", "threshold"), METRICS)
@pytest.mark.parametrize(
    ("n", "positives", "n_resamples", "confidence"),
    [(40, 12, 200, 0.95), (120, 30, 1000, 0.9), (400, 100, 20, 0.8), (25, 1, 300, 0.99)],
)
def test_bootstrap_ci_interval_is_np_quantile_of_its_distribution(
    metric, threshold, n, positives, n_resamples, confidence
):
    y_true, scores = make_items(n + positives, n, 3, positives)
    want, counts = reference_interval(metric, y_true, scores, n_resamples, 4, confidence, threshold)
    many = bootstrap_ci(
        metric,
        y_true,
        scores,
        n_resamples=n_resamples,
        seed=4,
        confidence=confidence,
        threshold=threshold,
    )
    np.testing.assert_array_equal(many.n_resamples, counts)
    np.testing.assert_array_equal(bits(many.ci_low), bits(want[:, 0]))
    np.testing.assert_array_equal(bits(many.ci_high), bits(want[:, 1]))
    one = bootstrap_ci(
        metric,
        y_true,
        scores[1],
        n_resamples=n_resamples,
        seed=4,
        confidence=confidence,
        threshold=threshold,
    )
    assert bits([one.ci_low, one.ci_high]).tolist() == bits(want[1]).tolist()


@pytest.mark.filterwarnings("ignore::realitycheck.metrics.UndefinedMetricWarning")
def test_rows_defined_on_different_resamples_match_np_quantile():
    """One hallucinated item in 25: auroc is undefined on the resamples that miss it, and
    f1 on those where a row also predicts nothing, so rows keep different numbers of values
    and both the batch and the per-row branch of _intervals run."""
    y_true, scores = make_items(3, 25, 3, 1)
    scores[0] *= 0.2  # predicts almost nothing above 0.5
    for metric, threshold in (("auroc", None), ("f1", 0.5)):
        want, counts = reference_interval(metric, y_true, scores, 400, 8, 0.95, threshold)
        result = bootstrap_ci(metric, y_true, scores, n_resamples=400, seed=8, threshold=threshold)
        assert (counts < 400).any()
        if metric == "f1":
            assert (counts == 400).any()
        np.testing.assert_array_equal(result.n_resamples, counts)
        np.testing.assert_array_equal(bits(result.ci_low), bits(want[:, 0]))
        np.testing.assert_array_equal(bits(result.ci_high), bits(want[:, 1]))
