"""The probe detector: sklearn parity, saved weights and their hash, bad training sets."""

from __future__ import annotations

import hashlib
import json
import warnings

import numpy as np
import pytest

from realitycheck.analysis import CALIBRATION, split_of
from realitycheck.detectors import RunContext, detectors
from realitycheck.encoders import embeddings
from realitycheck.errors import InvalidInputError
from realitycheck.pipeline import detect
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import RunStore

sklearn = pytest.importorskip("sklearn")
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

N_EXAMPLES = 40


def _store(path, *, seed=0, one_class=(), hidden=False):
    """Two datasets of 40 examples x 2 responses: human labels, two detectors' scores.

    ``one_class`` names datasets whose human labels are all ``False``.
    """
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for ds in ("alpha", "beta"):
        for i in range(N_EXAMPLES):
            eid = f"{ds}/{i}"
            examples.append(
                Example(example_id=eid, dataset=ds, task="summary", context=f"source {i} of {ds}")
            )
            for k in range(2):
                rid = f"{eid}/{k}"
                bad = bool(rng.random() < 0.4) and ds not in one_class
                features = {}
                if hidden:
                    vector = rng.normal(size=6) + (1.5 if bad else 0.0)
                    features = {"best": {"hidden": {"last@L1": vector.tolist()}}}
                responses.append(
                    Response(
                        response_id=rid,
                        example_id=eid,
                        model="m",
                        text=f"response {k} to {i} " + "x " * int(rng.integers(0, 9)),
                        features=features,
                    )
                )
                labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
                noisy = bad != bool(rng.random() < 0.2)
                labels.append(Label(response_id=rid, labeler="weak", hallucinated=noisy))
                scores.append(
                    Score(response_id=rid, detector="signal", value=float(bad) + rng.normal())
                )
                scores.append(Score(response_id=rid, detector="other", value=rng.normal()))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store


def _table(store, key):
    return {s.response_id: s for s in store.read(Score) if s.detector == key}


def _features(store, ids, keys=("other", "signal")):
    frame = store.frame("scores")
    wide = frame.pivot(index="response_id", columns="detector", values="value")
    return wide.loc[ids, list(keys)].to_numpy(dtype=float)


def _split(store, dataset):
    """Calibration ids and test ids of a dataset, in stored order."""
    responses = [r for r in store.read(Response) if r.example_id.startswith(f"{dataset}/")]
    side = split_of([r.example_id for r in responses])
    cal = [r.response_id for r, s in zip(responses, side, strict=True) if s == CALIBRATION]
    test = [r.response_id for r, s in zip(responses, side, strict=True) if s != CALIBRATION]
    return cal, test


def _verdicts(store, key):
    frame = store.frame("labels")
    mine = frame[frame["labeler"] == key]
    return dict(zip(mine["response_id"], mine["hallucinated"].astype(float), strict=True))


@pytest.mark.parametrize(
    ("key", "model"),
    [
        (
            "probe[embedding=false,scores=signal+other]",
            lambda: LogisticRegression(C=1.0, max_iter=2000),
        ),
        (
            "probe[embedding=false,scores=*,classifier=mlp,seed=3]",
            lambda: MLPClassifier(
                hidden_layer_sizes=(64,), alpha=1e-3, max_iter=300, random_state=3
            ),
        ),
        (
            "probe[embedding=false,scores=signal+other,train_labels=weak]",
            lambda: LogisticRegression(C=1.0, max_iter=2000),
        ),
    ],
)
def test_probe_predicts_what_sklearn_fitted_directly_predicts(tmp_path, key, model):
    store = _store(tmp_path)
    det = detectors.create_from_key(key)
    detect(store, [det])
    got = _table(store, det.key)
    y_of = _verdicts(store, det.train_labels)
    for ds in ("alpha", "beta"):
        cal, test = _split(store, ds)
        reference = make_pipeline(StandardScaler(), model())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an MLP stopped at max_iter warns, as in the detector
            reference.fit(_features(store, cal), np.array([y_of[r] for r in cal]).astype(int))
        expected = reference.predict_proba(_features(store, test))[:, 1]
        values = np.array([got[r].value for r in test])
        np.testing.assert_allclose(values, expected, rtol=1e-9, atol=1e-12)
        assert all(got[r].value is None and "calibration split" in got[r].error for r in cal)
        trained = json.loads(got[test[0]].spec)["trained"]
        assert trained["n_train"] == len(cal) and trained["features"] == ["other", "signal"]
        assert trained["train_labels"] == det.train_labels


def _sha_of_npz(path):
    """SHA-256 over the arrays of an .npz, written here independently of the detector."""
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode() + b"\0" + a.dtype.str.encode() + repr(a.shape).encode() + b"\0")
        h.update(a.tobytes())
    return h.hexdigest(), arrays


def test_weights_are_saved_in_the_run_and_their_hash_is_in_the_spec_and_stable(tmp_path):
    key = "probe[embedding=false,scores=signal+other]"
    hashes = []
    for run in ("one", "two"):
        store = _store(tmp_path / run)
        detect(store, [detectors.create_from_key(key)])
        scores = [s for s in _table(store, key).values() if s.value is not None]
        trained = {
            json.loads(s.spec)["trained"]["dataset"]: json.loads(s.spec)["trained"] for s in scores
        }
        assert set(trained) == {"alpha", "beta"}
        for ds, entry in trained.items():
            sha, arrays = _sha_of_npz(store.path / entry["weights"] / "weights.npz")
            assert sha == entry["sha256"]
            cal, _ = _split(store, ds)
            y_of = _verdicts(store, "human")
            reference = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
            reference.fit(_features(store, cal), np.array([y_of[r] for r in cal]).astype(int))
            np.testing.assert_allclose(arrays["coef_0"], reference[-1].coef_, rtol=1e-9)
            np.testing.assert_allclose(arrays["scaler_mean"], reference[0].mean_)
        hashes.append({ds: e["sha256"] for ds, e in trained.items()})
    assert hashes[0] == hashes[1]
    other = _store(tmp_path / "other", seed=1)
    detect(other, [detectors.create_from_key(key)])
    changed = {
        json.loads(s.spec)["trained"]["sha256"]
        for s in _table(other, key).values()
        if s.value is not None
    }
    assert changed.isdisjoint(hashes[0].values())


def test_one_class_or_too_few_training_labels_fail_their_dataset_only(tmp_path):
    store = _store(tmp_path, one_class=("alpha",))
    det = detectors.create_from_key("probe[embedding=false,scores=signal]")
    detect(store, [det])
    got = _table(store, det.key)
    alpha = [s for r, s in got.items() if r.startswith("alpha/")]
    beta = [s for r, s in got.items() if r.startswith("beta/")]
    assert all(s.value is None for s in alpha)
    assert "cannot train on dataset 'alpha'" in alpha[0].error
    assert "say not hallucinated; a classifier needs both classes" in alpha[0].error
    assert sum(s.value is not None for s in beta) > 20
    few = detectors.create_from_key("probe[embedding=false,scores=signal,min_train=500]")
    detect(store, [few])
    errors = {s.error for s in _table(store, few.key).values()}
    assert any("fewer than min_train=500" in e and "'beta'" in e for e in errors)
    absent = detectors.create_from_key("probe[embedding=false,scores=signal,train_labels=nobody]")
    detect(store, [absent])
    assert all(
        "0 calibration responses carry a 'nobody' verdict" in s.error
        for s in _table(store, absent.key).values()
    )


def test_a_probe_without_a_feature_or_a_run_says_so():
    with pytest.raises(InvalidInputError, match="'scores' parameter of probe must be a non-empty"):
        detectors.create_from_key("probe[embedding=false]")
    with pytest.raises(InvalidInputError, match="'classifier' parameter of probe"):
        detectors.create_from_key("probe[classifier=forest]")
    response = Response(response_id="r", example_id="e", model="m", text="t")
    (score,) = detectors.create("probe").score([response], RunContext())
    assert score.value is None and "within a run" in score.error


def test_missing_score_features_leave_a_response_out_with_the_reason(tmp_path):
    store = _store(tmp_path)
    store.replace(
        [
            s
            for s in store.read(Score)
            if not (s.detector == "other" and s.response_id.endswith("/0"))
        ],
        table="scores",
    )
    det = detectors.create_from_key("probe[embedding=false,scores=signal+other]")
    detect(store, [det])
    _, test = _split(store, "beta")
    got = _table(store, det.key)
    lacking = [got[r] for r in test if r.endswith("/0")]
    assert lacking and all("no stored score of other" in s.error for s in lacking)
    assert all(got[r].value is not None for r in test if r.endswith("/1"))


def test_hidden_state_probe_matches_sklearn_on_the_stored_vectors(tmp_path):
    store = _store(tmp_path, hidden=True)
    det = detectors.create_from_key("probe[embedding=false,hidden=last,layer=1]")
    detect(store, [det])
    got = _table(store, det.key)
    by_id = {r.response_id: r for r in store.read(Response)}
    y_of = _verdicts(store, "human")
    cal, test = _split(store, "alpha")

    def x(ids):
        return np.array([by_id[r].features["best"]["hidden"]["last@L1"] for r in ids])

    reference = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    reference.fit(x(cal), np.array([y_of[r] for r in cal]).astype(int))
    expected = reference.predict_proba(x(test))[:, 1]
    np.testing.assert_allclose([got[r].value for r in test], expected, rtol=1e-9)
    assert json.loads(got[test[0]].spec)["trained"]["features"] == ["hidden:last@L1 (6 values)"]


def _bag_of_words(texts, **kwargs):
    out = np.zeros((len(texts), embeddings.DIMENSION))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, sum(map(ord, word)) % embeddings.DIMENSION] += 1.0
        out[i] /= max(np.linalg.norm(out[i]), 1e-12)
    return out


class _Fake:
    encode = staticmethod(_bag_of_words)


def test_embedding_features_are_source_response_and_their_product(tmp_path, monkeypatch):
    monkeypatch.setattr(embeddings, "embedding_model", lambda: _Fake())
    embeddings.clear_cache()
    store = _store(tmp_path)
    det = detectors.create("probe")
    responses = store.read(Response)[:5]
    examples = {e.example_id: e for e in store.read(Example)}
    frame, errors = det.inputs(responses, RunContext(examples=examples, store=store))
    u = _bag_of_words([examples[r.example_id].context for r in responses])
    v = _bag_of_words([r.text for r in responses])
    np.testing.assert_allclose(frame.to_numpy(), np.hstack([u, v, u * v]), atol=1e-6)
    assert errors == [""] * 5
    assert det.feature_names(frame) == ["embedding (1152 values)"]
    embeddings.clear_cache()


def test_score_patterns_never_match_a_supervised_detector():
    from realitycheck.detectors.probe import score_features

    keys = ["length", "length[unit=chars]", "probe", "probe[seed=1]", "finetuned[model=m]", "x:y"]
    assert score_features(["*"], keys) == ["length", "length[unit=chars]", "x:y"]
    assert score_features(["length*", "x:y"], keys) == ["length", "length[unit=chars]", "x:y"]
    assert score_features(["nothing"], keys) == []
    assert score_features(["length[unit=chars]"], keys) == ["length[unit=chars]"]
