import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score, roc_auc_score

from realitycheck import InvalidInputError, RunStore, datasets, detect, detectors, ingest
from realitycheck.analysis import Bootstrap, split_of
from realitycheck.metrics import bootstrap_ci
from realitycheck.store import RunData
from realitycheck.studies.metric_correlation import MetricCorrelation

RECORDED = ("recorded:*",)


@pytest.fixture(scope="module")
def data(tmp_path_factory, data_dir):
    store = RunStore(tmp_path_factory.mktemp("metric_correlation") / "run")
    for name in ("faithbench", "halueval_general"):
        ingest(store, datasets.create(name, data_dir=data_dir))
    detect(store, [detectors.create_from_key("length[unit=chars]")])
    return RunData(store)


@pytest.fixture(scope="module")
def recorded(data):
    return MetricCorrelation(signals=RECORDED).run(data, bootstrap=Bootstrap(n_resamples=200))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"signals": []}, "'signals' parameter of metric_correlation must be a non-empty list"),
        ({"signals": ["a", ""]}, "'signals' parameter .* or None. Got .* Item 1 is ''"),
        ({"annotators": "yes"}, "'annotators' parameter of metric_correlation must be a bool"),
        ({"calibration_fraction": 1.0}, r"'calibration_fraction' parameter .* in \(0, 1\)"),
        ({"calibration_fraction": True}, "'calibration_fraction' parameter"),
    ],
)
def test_bad_options_are_rejected(params, match):
    with pytest.raises(InvalidInputError, match=match):
        MetricCorrelation(**params)


def test_a_single_signal_string_becomes_a_tuple():
    assert MetricCorrelation(signals="recorded:*").signals == ("recorded:*",)


def test_spearman_matrix_equals_scipy_on_pairwise_complete_items(recorded, data):
    corr = recorded.table("correlation").query("dataset == 'faithbench'")
    columns = set(corr["a"]) | set(corr["b"])
    # Single annotators are left out; the majority protocol equals 'human' and is shown once.
    assert "human" in columns and "human[protocol=majority]" not in columns
    assert not any(c.startswith("human:") for c in columns)
    assert len(corr) == len(columns) * (len(columns) - 1) // 2
    values = data.verdicts("faithbench").join(data.detector_scores("faithbench"))
    for row in corr.itertuples():
        both = values[[row.a, row.b]].dropna()
        assert row.n == len(both)
        assert row.rho == pytest.approx(stats.spearmanr(both[row.a], both[row.b]).statistic)
    halueval = recorded.table("correlation").query("dataset == 'halueval_general'")
    assert halueval[["a", "b"]].values.tolist() == [["human", "length[unit=chars]"]]
    stems = {f.stem: f for f in recorded.figures}
    assert set(stems) == {"correlation_faithbench", "correlation_halueval_general"}
    assert "human[protocol=majority] = human" in stems["correlation_faithbench"].caption


def test_single_annotators_can_be_included(data):
    result = MetricCorrelation(signals=RECORDED, annotators=True).run(
        data, bootstrap=Bootstrap(n_resamples=20)
    )
    corr = result.table("correlation").query("dataset == 'faithbench'")
    annotators = corr[corr["a"].str.startswith("human:") & corr["b"].str.startswith("human:")]
    assert len(annotators) and (annotators["n"] < 750).all()
    undefined = annotators[annotators["rho"].isna()]
    assert (undefined["note"] != "").all()


def _ensemble_by_hand(data):
    """FAMD of the recorded detectors and judges, fitted on the calibration split, by numpy."""
    frame = pd.concat([data.detector_scores("faithbench"), data.label_scores("faithbench")], axis=1)
    frame = frame[[c for c in frame.columns if c.startswith("recorded:")]].dropna()
    y = data.verdicts("faithbench")["human"].reindex(frame.index)
    split = split_of(list(data.frame("faithbench").loc[frame.index, "example_id"]))
    cal = frame[split == "calibration"]

    def code(x):
        parts = []
        for c in frame.columns:
            if set(cal[c].unique()) <= {0.0, 1.0}:
                for value in (0.0, 1.0):
                    p = (cal[c] == value).mean()
                    parts.append(((x[c] == value).astype(float) - p) / np.sqrt(p))
            else:
                parts.append((x[c] - cal[c].mean()) / cal[c].std(ddof=0))
        return np.column_stack(parts)

    direction = np.linalg.svd(code(cal), full_matrices=False)[2][0]
    scores = code(frame) @ direction
    on_cal = (split == "calibration") & y.notna().to_numpy()
    if np.corrcoef(scores[on_cal], y[on_cal])[0, 1] < 0:
        scores = -scores
    return frame.index, scores, split, y


def test_famd_ensemble_is_fitted_on_the_calibration_split_only(recorded, data):
    ids, scores, split, y = _ensemble_by_hand(data)
    got = recorded.table("ensemble_scores").set_index("response_id")["value"]
    test_ids = ids[split == "test"]
    assert set(got.index) == set(test_ids)
    np.testing.assert_allclose(got.loc[test_ids], scores[split == "test"], atol=1e-9)
    ensemble = recorded.table("ensemble").set_index("signal")
    labelled = test_ids[y.loc[test_ids].notna().to_numpy()]
    truth = y.loc[labelled]
    row = ensemble.loc["famd-ensemble"]
    assert row["auroc"] == pytest.approx(roc_auc_score(truth, got.loc[labelled]))
    assert row["pr_auc"] == pytest.approx(average_precision_score(truth, got.loc[labelled]))
    assert row["auroc_ci_low"] <= row["auroc"] <= row["auroc_ci_high"]
    assert row["n"] == len(labelled) and row["n_positive"] == truth.sum()
    inputs = pd.concat(
        [data.detector_scores("faithbench"), data.label_scores("faithbench")], axis=1
    ).loc[labelled]
    for name in [c for c in ensemble.index if c != "famd-ensemble"]:
        assert ensemble.loc[name, "auroc"] == pytest.approx(roc_auc_score(truth, inputs[name]))
    assert len(ensemble) == 9 and set(ensemble["n"]) == {len(labelled)}
    direct = bootstrap_ci("auroc", truth, got.loc[labelled], n_resamples=200)
    assert (row["auroc_ci_low"], row["auroc_ci_high"]) == pytest.approx(
        (direct.ci_low, direct.ci_high)
    )
    caption = next(t.caption for t in recorded.tables if t.name == "ensemble")
    assert "95% paired bootstrap CIs, 200 resamples" in caption


def test_loadings_are_oriented_and_contributions_add_up(recorded):
    loadings = recorded.table("loadings").set_index("signal")
    assert len(loadings) == 8 and set(loadings["engine"]) == {"prince.FAMD"}
    assert loadings["contribution_pct"].sum() == pytest.approx(100)
    assert loadings.loc["recorded:hhem-2.1", "loading"] > 0.5
    kinds = loadings["kind"].to_dict()
    assert kinds["recorded:gpt-4-turbo"] == "binary" and kinds["recorded:hhemv1"] == "numeric"
    assert "FAMD ensemble of 8 signals" in recorded.finding


def test_datasets_without_enough_signals_are_skipped_with_a_reason(recorded, data):
    reason = (
        "halueval_general: ensemble: 0 signals matching ['recorded:*'] on the dataset, 2 needed"
    )
    assert reason in recorded.skipped
    default = MetricCorrelation().run(data, bootstrap=Bootstrap(n_resamples=20))
    assert "halueval_general: ensemble: 1 detectors on the dataset, 2 needed" in default.skipped
    assert "length[unit=chars]" in set(default.table("loadings")["signal"])
