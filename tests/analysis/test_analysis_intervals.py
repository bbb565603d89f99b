"""Bootstrap tables of many confusion metrics or many detectors: equal to ``bootstrap_ci``.

``confusion_ci`` and ``ranking_ci`` draw the resamples of
:func:`realitycheck.metrics.bootstrap_ci` once for many metrics or detectors;
their values are checked against scikit-learn and their intervals against
``bootstrap_ci`` called on each metric or column alone, on seeded random data.
"""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from realitycheck.analysis import (
    INTERVAL_COLUMNS,
    RANKING_CI_COLUMNS,
    Bootstrap,
    confusion_ci,
    ranking_ci,
)
from realitycheck.metrics import bootstrap_ci
from realitycheck.records import MetricResult

METRICS = ("precision", "recall", "f1", "accuracy", "cohen_kappa", "f1_weighted")


@pytest.mark.parametrize("metric", [*METRICS, "balanced_accuracy", "f1_macro"])
@pytest.mark.parametrize("seed", [0, 1])
def test_confusion_ci_equals_bootstrap_ci_of_each_metric(metric, seed):
    rng = np.random.default_rng(seed)
    y = rng.random(157) < 0.3
    pred = np.where(rng.random(157) < 0.7, y, ~y)
    found = confusion_ci(y, pred, [metric], Bootstrap(n_resamples=300, confidence=0.9, seed=seed))[
        metric
    ]
    expected = bootstrap_ci(
        metric, y, pred.astype(float), n_resamples=300, confidence=0.9, seed=seed
    )
    assert found == pytest.approx((expected.value, expected.ci_low, expected.ci_high), abs=1e-12)


def test_confusion_ci_undefined_and_empty_cases():
    y = np.array([1, 0, 1, 0, 0, 1], dtype=bool)
    never = np.zeros(6, dtype=bool)
    found = confusion_ci(y, never, ["precision", "recall"], Bootstrap(n_resamples=50))
    assert np.isnan(found["precision"][0]) and np.isnan(found["precision"][1])
    assert found["recall"][0] == 0.0
    empty = confusion_ci([], [], ["accuracy"], Bootstrap(n_resamples=5))
    assert all(np.isnan(v) for v in empty["accuracy"])


def test_ranking_ci_masks_each_column_and_matches_sklearn_and_bootstrap():
    rng = np.random.default_rng(7)
    n = 300
    y = pd.Series((rng.random(n) < 0.4).astype(float))
    y[rng.choice(n, 20, replace=False)] = np.nan
    scores = pd.DataFrame({"a": rng.normal(size=n) + y.fillna(0), "b": rng.normal(size=n)})
    scores["c"] = np.round(scores["a"], 0)  # ties
    scores.loc[rng.choice(n, 30, replace=False), "b"] = np.nan
    table = ranking_ci(
        y, scores, ("auroc", "pr_auc"), Bootstrap(n_resamples=150, confidence=0.9, seed=3)
    )
    table = table.set_index(["name", "metric"])
    for name in ("a", "b", "c"):
        ok = y.notna() & scores[name].notna()
        yt, s = y[ok].to_numpy().astype(int), scores.loc[ok, name].to_numpy()
        row = table.loc[(name, "auroc")]
        assert row["n"] == ok.sum() and row["n_excluded"] == n - ok.sum()
        assert row["n_positive"] == yt.sum()
        assert row["value"] == pytest.approx(roc_auc_score(yt, s))
        assert table.loc[(name, "pr_auc"), "value"] == pytest.approx(average_precision_score(yt, s))
        direct = bootstrap_ci("auroc", yt, s, n_resamples=150, confidence=0.9, seed=3)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((direct.ci_low, direct.ci_high))


def test_ranking_ci_one_class_and_no_item_give_nan():
    y = pd.Series([1.0, 1.0, 1.0, np.nan])
    scores = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4], "b": [np.nan] * 4})
    table = ranking_ci(y, scores, ("auroc",), Bootstrap(n_resamples=20))
    table = table.set_index("name")
    assert np.isnan(table.loc["a", "value"]) and table.loc["a", "n"] == 3
    assert np.isnan(table.loc["b", "value"]) and table.loc["b", "n"] == 0
    assert list(table.reset_index().columns) == RANKING_CI_COLUMNS


def test_interval_columns_are_metric_result_fields_in_their_order():
    names = [f.name for f in dataclasses.fields(MetricResult)]
    start = names.index("metric")
    assert list(INTERVAL_COLUMNS) == names[start : start + len(INTERVAL_COLUMNS)]
    assert INTERVAL_COLUMNS[-1] == "n_excluded" and RANKING_CI_COLUMNS[0] == "name"
