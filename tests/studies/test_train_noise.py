"""The train-noise study: detectors trained on clean and noisy labels, measured on clean ones."""

from __future__ import annotations

import numpy as np
import pytest

from realitycheck.analysis import CALIBRATION, Bootstrap, split_of
from realitycheck.errors import InvalidInputError
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import RunData, RunStore
from realitycheck.studies import studies

pytest.importorskip("sklearn")
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

DETECTOR = "probe[embedding=false,scores=signal+other]"


def _store(path, *, seed=0, datasets=("alpha",), constant_test=()):
    """60 examples x 2 responses per dataset: human labels of two annotators and a weak labeler."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for ds in datasets:
        for i in range(60):
            eid = f"{ds}/{i}"
            examples.append(Example(example_id=eid, dataset=ds, task="summary", context="c"))
            test = split_of([eid])[0] != CALIBRATION
            for k in range(2):
                rid = f"{eid}/{k}"
                bad = bool(rng.random() < 0.4) and not (test and ds in constant_test)
                responses.append(Response(response_id=rid, example_id=eid, model="m", text="t"))
                labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
                for a, flip in (("a", 0.1), ("b", 0.3)):
                    verdict = bad != bool(rng.random() < flip)
                    labels.append(
                        Label(response_id=rid, labeler=f"human:{a}", hallucinated=verdict)
                    )
                weak = bad != bool(rng.random() < 0.25)
                labels.append(Label(response_id=rid, labeler="weak", hallucinated=weak))
                scores.append(Score(response_id=rid, detector="signal", value=bad + rng.normal()))
                scores.append(Score(response_id=rid, detector="other", value=rng.normal()))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store


def _run(store, **params):
    study = studies.create("train_noise", detectors=(DETECTOR,), **params)
    return study.run(RunData(store), bootstrap=Bootstrap(n_resamples=200, seed=1))


def _direct(data, ds, labeler):
    """Fit the probe's model directly on calibration features; return test y and predictions."""
    frame = data.frame(ds)
    x = data.detector_scores(ds)[["other", "signal"]].to_numpy()
    verdicts = data.verdicts(ds)
    cal = split_of(frame["example_id"].tolist()) == CALIBRATION
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    model.fit(x[cal], verdicts[labeler].to_numpy()[cal].astype(int))
    return verdicts["human"].to_numpy()[~cal], model.predict_proba(x[~cal])[:, 1], cal


def test_clean_and_weak_rows_match_a_directly_fitted_model(tmp_path):
    store = _store(tmp_path)
    result = _run(store)
    table = result.table("train_noise").set_index(["condition", "source"])
    data = RunData(store)
    y_test, clean_pred, cal = _direct(data, "alpha", "human")
    _, weak_pred, _ = _direct(data, "alpha", "weak")
    clean = table.loc[("clean", "")]
    weak = table.loc[("weak_supervision", "weak")]
    assert clean["auroc"] == pytest.approx(roc_auc_score(y_test, clean_pred), abs=1e-12)
    assert weak["auroc"] == pytest.approx(roc_auc_score(y_test, weak_pred), abs=1e-12)
    assert weak["drop"] == pytest.approx(clean["auroc"] - weak["auroc"], abs=1e-12)
    assert clean["drop"] == 0 and clean["drop_ci_low"] == 0 and clean["drop_ci_high"] == 0
    assert clean["auroc_ci_low"] <= clean["auroc"] <= clean["auroc_ci_high"]
    assert weak["drop_ci_low"] <= weak["drop"] <= weak["drop_ci_high"]
    weak_cal = data.verdicts("alpha")["weak"].to_numpy()[cal]
    assert weak["n_train_positive"] == weak_cal.sum() and weak["n_train"] == cal.sum()
    assert weak["noise_rate"] == pytest.approx(
        np.mean(weak_cal != data.verdicts("alpha")["human"].to_numpy()[cal])
    )


def test_noise_sets_are_the_four_kinds_of_paper_002_capped_at_the_rate(tmp_path):
    result = _run(_store(tmp_path), rate=0.2)
    table = result.table("train_noise")
    assert table["condition"].tolist() == [
        "clean",
        "random_flip",
        "dissenting_label",
        "dissenting_worker",
        "dissenting_worker",
        "weak_supervision",
    ]
    n_cal = int(table["n_train"].iloc[0])
    flip = table[table["condition"] == "random_flip"].iloc[0]
    assert flip["noise_rate"] == pytest.approx(round(0.2 * n_cal) / n_cal)
    human = table[table["condition"].str.startswith("dissenting")]
    assert (human["noise_rate"] <= 0.2 + 1 / n_cal).all()
    assert human["raters"].tolist() == ["annotators", "", ""]
    assert table["n_test"].nunique() == 1  # every model measured on the same clean test labels
    assert "On alpha, probe" in result.finding and len(result.figures) == 1
    assert result.figures[0].stem.startswith("alpha_probe-") and len(result.figures[0].stem) == 20


def test_a_dataset_whose_test_labels_have_one_class_is_skipped_and_others_run(tmp_path):
    store = _store(tmp_path, datasets=("alpha", "beta"), constant_test=("beta",))
    result = _run(store)
    assert set(result.table("train_noise")["dataset"]) == {"alpha"}
    assert any("beta" in s and "fewer than two classes" in s for s in result.skipped)


def test_too_few_training_labels_skip_that_label_set(tmp_path):
    result = studies.create(
        "train_noise", detectors=("probe[embedding=false,scores=signal+other,min_train=500]",)
    ).run(RunData(_store(tmp_path)), bootstrap=Bootstrap(n_resamples=50))
    assert result.table("train_noise").empty
    assert any("fewer than min_train=500" in s for s in result.skipped)


def test_only_supervised_detector_keys_are_accepted():
    with pytest.raises(InvalidInputError, match="'detectors' parameter of train_noise"):
        studies.create("train_noise", detectors=("length",))


def test_datasets_restricts_training_and_names_the_rest_as_skipped(tmp_path):
    store = _store(tmp_path, datasets=("alpha", "beta", "gamma"))
    result = _run(store, datasets=("alpha", "g*"))
    assert set(result.table("train_noise")["dataset"]) == {"alpha", "gamma"}
    assert "beta: not in datasets=['alpha', 'g*']" in result.skipped
    assert result.spec["params"]["datasets"] == ["alpha", "g*"]


def test_a_one_class_training_label_set_is_skipped_with_the_reason_and_the_rest_run(tmp_path):
    store = _store(tmp_path)
    ids = RunData(store).frame("alpha").index
    store.append([Label(response_id=r, labeler="constant", hallucinated=False) for r in ids])
    result = _run(store, weak_labelers=("constant", "weak"))
    table = result.table("train_noise")
    assert "weak" in set(table["source"]) and "constant" not in set(table["source"])
    (why,) = [s for s in result.skipped if "weak_supervision (constant)" in s]
    assert "cannot train on dataset 'alpha'" in why and "needs both classes" in why


def test_the_finding_leads_with_the_largest_human_vs_noisy_drop():
    from realitycheck.studies.train_noise._report import COLUMNS, finding

    def row(ds, condition, source, auroc, drop, low, high):
        values = {c: "" for c in COLUMNS} | {"dataset": ds, "detector": "probe"}
        return values | {
            "condition": condition,
            "source": source,
            "auroc": auroc,
            "auroc_ci_low": auroc - 0.05,
            "auroc_ci_high": auroc + 0.05,
            "drop": drop,
            "drop_ci_low": low,
            "drop_ci_high": high,
        }

    rows = [
        row("rt", "clean", "", 0.8, 0.0, 0.0, 0.0),
        row("rt", "random_flip", "", 0.78, 0.02, -0.01, 0.05),
        row("rt", "weak_supervision", "knowledge_f1", 0.7, 0.1, 0.04, 0.16),
        row("fb", "clean", "", 0.6, 0.0, 0.0, 0.0),
        row("fb", "dissenting_worker", "human:a", 0.62, -0.02, -0.06, 0.01),
    ]
    text = finding(rows, 0.15)
    assert text.startswith(
        "Training on noisy instead of human labels changes the test AUROC by at most "
        "-0.100 [-0.160, -0.040] (rt, probe, weak_supervision (knowledge_f1)); 1 of 3 "
    )
    assert "15% random flips -0.020 [-0.050, +0.010], knowledge_f1 labels -0.100" in text
    assert "On fb, probe trained on human labels reaches AUROC 0.600 [0.550, 0.650]" in text
