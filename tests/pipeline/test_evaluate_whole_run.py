"""Evaluate's tables describe the whole run: every stored detector and labeler, unless `only`."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from realitycheck import (
    EvaluationConfig,
    InvalidInputError,
    Label,
    RunStore,
    Score,
    evaluate,
    ingest,
)
from realitycheck.analysis import Bootstrap

BOOT = Bootstrap(n_resamples=40)
A, B, C = "det_a", "det_b", "det_c"


@pytest.fixture
def run(tmp_path, tiny):
    """The tiny run, with three detectors' scores and two automatic labelers' labels."""
    store = RunStore(tmp_path)
    ingest(store, tiny)
    ids = list(store.frame("responses")["response_id"])
    rng = np.random.default_rng(7)
    store.append(
        [
            Score(response_id=r, detector=d, value=float(v))
            for d in (A, B, C)
            for r, v in zip(ids, rng.random(len(ids)), strict=True)
        ]
    )
    store.append(
        [
            Label(response_id=r, labeler=lab, hallucinated=bool(v < 0.4), score=float(v))
            for lab in ("lab_x", "lab_y")
            for r, v in zip(ids, rng.random(len(ids)), strict=True)
        ]
    )
    return store


def _config(**named):
    return EvaluationConfig(bootstrap=BOOT, **named)


def _detectors(store):
    return set(store.frame("metrics")["detector"])


def _labelers(store):
    return set(store.frame("agreement")["labeler"])


def test_a_second_evaluation_naming_other_components_keeps_the_first_ones(run):
    first = evaluate(run, _config(detectors=(A, B), labelers=("lab_x",)))
    assert {A, B, C} <= set(first.metrics["detector"])  # every stored one, named or not
    second = evaluate(run, _config(detectors=(C,), labelers=("lab_y",)))
    assert _detectors(run) == {A, B, C, "recorded:noisy"}
    assert _labelers(run) == {"lab_x", "lab_y"}
    # The rows of A and B are those the first evaluation measured.
    key = ["dataset", "slice", "detector", "labeler", "metric"]
    old = first.metrics[first.metrics["detector"].isin([A, B])].set_index(key).sort_index()
    new = second.metrics[second.metrics["detector"].isin([A, B])].set_index(key).sort_index()
    pd.testing.assert_frame_equal(old, new)


def test_only_measures_the_named_components_alone(run):
    evaluate(run, _config())
    result = evaluate(run, _config(detectors=(C,), labelers=("lab_y",), only=True))
    assert set(result.metrics["detector"]) == _detectors(run) == {C}
    assert set(result.agreement["labeler"]) == _labelers(run) == {"lab_y"}
    assert run.read_manifest()["config"]["evaluate"]["only"] is True
    # A family left unnamed is measured whole.
    result = evaluate(run, _config(detectors=(A,), only=True))
    assert _detectors(run) == {A} and _labelers(run) == {"lab_x", "lab_y"}


def test_a_subset_gets_the_same_rows_as_the_whole_run(run):
    whole = evaluate(run, _config()).metrics
    alone = evaluate(run, _config(detectors=(B,), only=True)).metrics
    key = ["dataset", "slice", "detector", "labeler", "metric"]
    expected = whole[whole["detector"] == B].set_index(key).sort_index()
    pd.testing.assert_frame_equal(alone.set_index(key).sort_index(), expected)


def test_a_rerun_with_the_same_components_changes_nothing(run):
    config = _config(detectors=(A, B), labelers=("lab_x",))
    first = evaluate(run, config)
    files = {name: (run.path / f"{name}.parquet").read_bytes() for name in ("metrics", "agreement")}
    again = evaluate(run, config)
    pd.testing.assert_frame_equal(first.metrics, again.metrics)
    pd.testing.assert_frame_equal(first.agreement, again.agreement)
    for name, data in files.items():
        assert (run.path / f"{name}.parquet").read_bytes() == data, name


def test_rows_of_dropped_or_recomputed_scores_are_not_kept(run):
    evaluate(run, _config(detectors=(A, B, C)))
    assert run.drop_matching("scores", "detector", [B]) > 0
    run.drop_matching("labels", "labeler", ["lab_x"])
    responses = run.frame("responses")["response_id"].tolist()
    human = run.frame("labels").query("labeler == 'human'").set_index("response_id")
    y = human.loc[responses, "hallucinated"].astype(int).to_numpy()
    values = np.linspace(0, 1, len(responses)) + y  # A recomputed: now it separates well
    run.append(
        [
            Score(response_id=r, detector=A, value=float(v))
            for r, v in zip(responses, values, strict=True)
        ]
    )
    result = evaluate(run, _config(detectors=(C,)))
    assert B not in _detectors(run) and "lab_x" not in _labelers(run)
    m = result.metrics.set_index(["dataset", "slice", "detector", "labeler", "metric"])
    auroc = m.loc[("tiny", "all", A, "human", "auroc"), "value"]
    assert auroc == pytest.approx(roc_auc_score(y, values), abs=1e-12)


def test_a_named_component_that_is_not_stored_is_refused_either_way(run):
    for only in (False, True):
        with pytest.raises(InvalidInputError, match="det_q"):
            evaluate(run, _config(detectors=("det_q",), only=only))


@pytest.mark.parametrize("value", [1, "yes", None])
def test_only_must_be_a_bool(value):
    with pytest.raises(InvalidInputError, match="'only' parameter of evaluate must be"):
        EvaluationConfig(only=value)
