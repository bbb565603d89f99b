"""The scores the report's curves and calibration figures read: one lookup, checked by hand."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from realitycheck import Score
from realitycheck.report._calibration import _scored
from realitycheck.report._data import dataset_scores, load
from realitycheck.report._figures import curves


def _by_hand(store, dataset, reference):
    """Per response of ``dataset`` (in the responses table's order): verdict and scores by id."""
    examples = store.frame("examples").set_index("example_id")["dataset"].to_dict()
    responses = store.frame("responses")
    ids = [
        r
        for r, e in zip(responses["response_id"], responses["example_id"], strict=True)
        if examples.get(e) == dataset
    ]
    labels = store.frame("labels")
    verdict = {
        r: float(h)
        for r, lab, h in zip(
            labels["response_id"], labels["labeler"], labels["hallucinated"], strict=True
        )
        if lab == reference
    }
    scores: dict[str, dict[str, float]] = {}
    frame = store.frame("scores")
    for r, det, v in zip(frame["response_id"], frame["detector"], frame["value"], strict=True):
        scores.setdefault(det, {})[r] = np.nan if v is None else float(v)  # the last one wins
    y = np.array([verdict.get(r, np.nan) for r in ids])
    return ids, y, {d: np.array([s.get(r, np.nan) for r in ids]) for d, s in scores.items()}


def test_dataset_scores_are_the_stored_verdicts_and_scores_in_drawing_order(make_run, tmp_path):
    store = make_run(tmp_path / "run")
    first = store.frame("responses")["response_id"].iloc[0]
    store.append([Score(response_id=first, detector="length", value=1234.0)])  # a later score
    ids, y, scores = _by_hand(store, "alpha", "human")
    got = dataset_scores(load(store), "alpha", "human", ["noisy", "absent"])
    assert list(got.scores) == ["noisy", "length"]  # order first, then the others sorted
    assert int(got.rows.sum()) == len(ids)
    np.testing.assert_array_equal(got.y, y)
    for det, values in got.scores.items():
        np.testing.assert_array_equal(values, scores[det])
    assert got.scores["length"][ids.index(first)] == 1234.0


@pytest.mark.parametrize("dataset", ["alpha", "beta"])
def test_curves_and_calibration_items_use_the_usable_items(run, dataset):
    _, y, scores = _by_hand(run, dataset, "human")
    data = load(run)
    found, _ = curves(data, dataset, "human", ["noisy"])
    items = {item.detector: item for item in _scored(data, dataset, "human", ["noisy"])}
    assert [c.detector for c in found] == list(items) == ["noisy", "length"]
    for curve in found:
        s = scores[curve.detector]
        ok = ~np.isnan(y) & np.isfinite(s)
        assert curve.n == ok.sum() and curve.n_positive == y[ok].sum()
        assert curve.auroc == pytest.approx(roc_auc_score(y[ok], s[ok]), abs=1e-12)
        np.testing.assert_array_equal(items[curve.detector].s, s[ok])
        np.testing.assert_array_equal(items[curve.detector].y, y[ok].astype(bool))
