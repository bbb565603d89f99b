import numpy as np
import pytest
from sklearn.metrics import average_precision_score, brier_score_loss, f1_score, roc_auc_score

from realitycheck import (
    EvaluationConfig,
    InvalidInputError,
    Label,
    RunStore,
    Score,
    evaluate,
    ingest,
)
from realitycheck.analysis import Bootstrap, split_of
from realitycheck.metrics import choose_threshold


@pytest.fixture
def run(tmp_path, tiny):
    store = RunStore(tmp_path)
    ingest(store, tiny)
    return store


def _truth(store):
    labels = store.frame("labels").query("labeler == 'human'").set_index("response_id")
    scores = store.frame("scores").query("detector == 'recorded:noisy'").set_index("response_id")
    responses = store.frame("responses").set_index("response_id")
    ids = list(responses.index)
    y = labels.loc[ids, "hallucinated"].astype(int).to_numpy()
    s = scores.loc[ids, "value"].to_numpy()
    split = split_of(responses.loc[ids, "example_id"].tolist())
    return ids, y, s, split, responses.loc[ids]


def test_ranking_metrics_equal_sklearn_on_all_items(run):
    result = evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=200)))
    _, y, s, _, _ = _truth(run)
    m = result.metrics.set_index(["dataset", "slice", "detector", "labeler", "metric"])
    row = m.loc[("tiny", "all", "recorded:noisy", "human", "auroc")]
    assert row["value"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert row["ci_low"] <= row["value"] <= row["ci_high"]
    assert row["n"] == 80 and row["n_positive"] == y.sum() and row["n_excluded"] == 0
    pr = m.loc[("tiny", "all", "recorded:noisy", "human", "pr_auc")]
    assert pr["value"] == pytest.approx(average_precision_score(y, s), abs=1e-12)


def test_threshold_comes_from_calibration_split_and_metric_from_test_split(run):
    result = evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=50)))
    _, y, s, split, _ = _truth(run)
    cal, test = split == "calibration", split == "test"
    assert cal.any() and test.any()
    t = choose_threshold(y[cal], s[cal], objective="f1_macro")
    m = result.metrics.set_index(["slice", "detector", "labeler", "metric"])
    row = m.loc[("all", "recorded:noisy", "human", "f1_macro")]
    assert row["threshold"] == pytest.approx(t)
    expected = f1_score(y[test], (s[test] >= t).astype(int), average="macro")
    assert row["value"] == pytest.approx(expected, abs=1e-12)
    assert row["n"] == test.sum()
    assert "calibration split" in row["note"]


def test_slices_per_task_and_model(run):
    result = evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=50)))
    _, y, s, _, resp = _truth(run)
    slices = set(result.metrics["slice"])
    assert {"all", "task=qa", "task=summary", "model=m1", "model=m2"} <= slices
    m = result.metrics.set_index(["slice", "detector", "labeler", "metric"])
    mask = (resp["model"] == "m2").to_numpy()
    row = m.loc[("model=m2", "recorded:noisy", "human", "auroc")]
    assert row["value"] == pytest.approx(roc_auc_score(y[mask], s[mask]), abs=1e-12)


def test_missing_scores_are_excluded_and_counted_and_stray_ids_reported(run):
    run.append([Score(response_id="tiny/0/m1", detector="recorded:noisy", value=None, error="x")])
    run.append([Label(response_id="ghost/1", labeler="human", hallucinated=True)])
    result = evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=50)))
    m = result.metrics.set_index(["slice", "detector", "labeler", "metric"])
    row = m.loc[("all", "recorded:noisy", "human", "auroc")]
    assert row["n"] == 79 and row["n_excluded"] == 1
    assert any("ghost/1" in note for note in result.notes)


def test_agreement_of_an_automatic_labeler_with_humans(run):
    labels = run.frame("labels").query("labeler == 'human'")
    flipped = [
        Label(response_id=r, labeler="coin", hallucinated=(i % 3 == 0), score=float(i % 5))
        for i, r in enumerate(labels["response_id"])
    ]
    run.append(flipped)
    result = evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=50)))
    a = result.agreement.set_index(["slice", "labeler", "reference", "metric"])
    y = labels["hallucinated"].astype(int).to_numpy()
    p = np.array([int(i % 3 == 0) for i in range(len(y))])
    row = a.loc[("all", "coin", "human", "f1")]
    assert row["value"] == pytest.approx(f1_score(y, p), abs=1e-12)
    assert a.loc[("all", "coin", "human", "accuracy"), "value"] == pytest.approx((y == p).mean())
    # the automatic labeler is also a reference for detectors (labeler shift)
    assert "coin" in set(result.metrics["labeler"])


def _prr_by_loop(y, s):
    """LM-Polygraph's PRR: areas under the accuracy-of-kept curve, normalised by oracle/random."""
    quality = 1.0 - y

    def area(uncertainty):
        kept = quality[np.argsort(uncertainty, kind="stable")]
        return np.mean([kept[: len(kept) - k].mean() for k in range(len(kept))])

    return (area(s) - quality.mean()) / (area(-quality) - quality.mean())


def _isotonic_by_hand(y_fit, s_fit, s_apply):
    """Pool adjacent violators on the calibration items, then linear between fitted points."""
    order = np.argsort(s_fit)
    blocks = []
    for v in y_fit[order]:
        blocks.append([float(v), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m2, w2), (m1, w1) = blocks.pop(), blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2])
    fitted = np.concatenate([[m] * w for m, w in blocks])
    return np.interp(s_apply, s_fit[order], fitted)


def test_prr_on_all_items_and_calibrated_brier_on_the_test_split(run):
    config = EvaluationConfig(bootstrap=Bootstrap(n_resamples=50), calibration="isotonic")
    result = evaluate(run, config)
    _, y, s, split, _ = _truth(run)
    cal, test = split == "calibration", split == "test"
    m = result.metrics.set_index(["slice", "detector", "labeler", "metric"])
    prr = m.loc[("all", "recorded:noisy", "human", "prr")]
    assert prr["value"] == pytest.approx(_prr_by_loop(y, s), abs=1e-12)
    assert prr["n"] == 80 and prr["ci_low"] <= prr["value"] <= prr["ci_high"]
    probs = _isotonic_by_hand(y[cal], s[cal], s[test])
    brier = m.loc[("all", "recorded:noisy", "human", "brier")]
    assert brier["value"] == pytest.approx(brier_score_loss(y[test], probs), abs=1e-12)
    assert brier["n"] == test.sum()
    ece = m.loc[("all", "recorded:noisy", "human", "ece")]
    assert 0 <= ece["ci_low"] <= ece["value"] <= ece["ci_high"] <= 1
    assert f"isotonic regression fitted on {cal.sum()} calibration-split responses" in ece["note"]


def test_ece_and_brier_follow_the_calibration_method(run):
    platt = evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=20)))
    row = platt.metrics.set_index(["slice", "detector", "labeler", "metric"]).loc[
        ("all", "recorded:noisy", "human", "brier")
    ]
    assert row["note"].startswith("Platt scaling fitted on")
    # The noisy detector's raw values exceed 1: taken as they are, they are not probabilities.
    raw = evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=20), calibration="none"))
    assert not raw.metrics["metric"].isin(["ece", "brier"]).any()
    assert (raw.metrics["metric"] == "prr").any()


def test_evaluate_on_empty_run_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidInputError, match="holds no responses"):
        evaluate(RunStore(tmp_path))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: Bootstrap(n_resamples=0),
            "'n_resamples' parameter of Bootstrap must be an int >= 1",
        ),
        (lambda: Bootstrap(confidence=1.5), "'confidence' parameter of Bootstrap"),
        (lambda: Bootstrap(seed=True), "'seed' parameter of Bootstrap"),
        (lambda: EvaluationConfig(bootstrap=1000), "'bootstrap' parameter of evaluate"),
        (lambda: EvaluationConfig(threshold_objective="vibes"), "'threshold_objective' parameter"),
        (lambda: EvaluationConfig(calibration="sigmoid"), "'calibration' parameter of evaluate"),
    ],
)
def test_config_validation(make, message):
    with pytest.raises(InvalidInputError, match=message):
        make()


def test_a_reference_identical_to_human_is_shown_once_with_a_note(run):
    human = run.frame("labels").query("labeler == 'human'")
    run.append(
        [
            Label(response_id=r, labeler="human[protocol=copy]", hallucinated=bool(h))
            for r, h in zip(human["response_id"], human["hallucinated"], strict=True)
        ]
    )
    result = evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=20)))
    assert "human[protocol=copy]" not in set(result.metrics["labeler"])
    assert any("human[protocol=copy] equals human" in n for n in result.notes)


def test_a_given_threshold_is_used_as_is(run):
    result = evaluate(
        run,
        EvaluationConfig(bootstrap=Bootstrap(n_resamples=20), thresholds={"recorded:noisy": 0.7}),
    )
    _, y, s, split, _ = _truth(run)
    test = split == "test"
    m = result.metrics.set_index(["slice", "detector", "labeler", "metric"])
    row = m.loc[("all", "recorded:noisy", "human", "f1")]
    assert row["threshold"] == 0.7 and row["note"] == "threshold given by the user"
    assert row["value"] == pytest.approx(f1_score(y[test], (s[test] >= 0.7).astype(int)))


def test_a_threshold_must_be_a_number():
    with pytest.raises(
        InvalidInputError,
        match=(
            r"The 'thresholds' parameter of evaluate must be a mapping from detector keys "
            r"to numbers\. Got \{'x': 'high'\}"
        ),
    ):
        EvaluationConfig(thresholds={"x": "high"})


def test_a_labeler_as_reference_is_the_ground_truth_of_agreement_and_first_of_metrics(run):
    from realitycheck import label
    from realitycheck.labelers import labelers

    label(run, [labelers.create("rouge_l")])
    config = EvaluationConfig(reference="rouge_l", bootstrap=Bootstrap(n_resamples=30))
    result = evaluate(run, config)
    assert set(result.agreement["reference"]) == {"rouge_l"}
    assert set(result.agreement["labeler"]) == {"human"}  # humans measured against it
    assert result.metrics["labeler"].iloc[0] == "rouge_l"
    rouge = run.frame("labels").query("labeler == 'rouge_l'").set_index("response_id")
    _, _, s, _, responses = _truth(run)
    y = rouge.loc[responses.index, "hallucinated"].astype(int).to_numpy()
    m = result.metrics.set_index(["slice", "detector", "labeler", "metric"])
    row = m.loc[("all", "recorded:noisy", "rouge_l", "auroc")]
    assert row["value"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert run.read_manifest()["config"]["evaluate"]["reference"] == "rouge_l"


def test_a_reference_the_run_lacks_is_an_error(run):
    config = EvaluationConfig(reference="judge", bootstrap=Bootstrap(n_resamples=20))
    with pytest.raises(InvalidInputError, match=r"'reference': The run holds no labeler 'judge'"):
        evaluate(run, config)
