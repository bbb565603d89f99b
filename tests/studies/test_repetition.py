import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    cohen_kappa_score,
    roc_auc_score,
)

from realitycheck import InvalidInputError, Label, detectors, labelers
from realitycheck.analysis import Bootstrap
from realitycheck.labelers.rouge import RougeL
from realitycheck.store import RunData
from realitycheck.studies import studies
from realitycheck.studies.repetition import Repetition, _rebuild, _repeats, repeat_sentences
from realitycheck.studies.repetition._report import detector_metrics, flag_rows, labeler_metrics


@pytest.fixture(scope="module")
def data(real_store, truthfulqa_bundle):
    store = real_store(
        truthfulqa=30,
        ingested=("faithbench",),
        labelers=("token_f1", "knowledge_f1"),
        detectors=("length", "source_overlap"),
    )
    keep = {e.example_id for e in truthfulqa_bundle.examples[:30]}
    ids = sorted(r.response_id for r in truthfulqa_bundle.responses if r.example_id in keep)
    # Labels of a slow labeler, as a run that used it would hold them.
    spec = json.dumps({"name": "embedding_similarity", "params": {"threshold": 0.5}})
    fake = [
        Label(
            response_id=r, labeler="embedding_similarity", hallucinated=False, score=0.1, spec=spec
        )
        for r in ids[:5]
    ]
    store.append(fake)
    return RunData(store)


@pytest.fixture(scope="module")
def result(data):
    return Repetition(max_responses=200).run(data)


@pytest.mark.parametrize(
    ("text", "k", "expected"),
    [
        ("A b. C d!", 0, "A b. C d!"),
        ("A b. C d!", 1, "A b. C d! A b. C d!"),
        ("A b. C d!", 2, "A b. C d! A b. C d! A b. C d!"),
        ("Line one\nLine two  ", 1, "Line one\nLine two Line one Line two"),
        ("no stop", 4, "no stop no stop no stop no stop no stop"),
        ("", 3, ""),
        ("   ", 2, "   "),
    ],
)
def test_repeat_sentences_by_hand(text, k, expected):
    assert repeat_sentences(text, k) == expected


@pytest.mark.parametrize("k", [1, 2, 4])
def test_repetition_multiplies_every_word_on_real_texts(data, k):
    for text in data.responses["text"].iloc[::97]:
        words = text.split()
        assert repeat_sentences(text, k).split() == words * (k + 1)


def test_all_ks_of_a_text_at_once_are_its_repeats_at_each_k(data):
    ks = (0, 1, 2, 4)
    for text in [*data.responses["text"].iloc[::53], "", "  ", "no stop"]:
        together = _repeats(text, ks)
        assert together[0] is text
        for k, repeated in zip(ks, together, strict=True):
            assert repeated.split() == text.split() * (k + 1) or not text.split()
            assert repeated == repeat_sentences(text, k)


def test_rebuild_from_spec_key_or_not_at_all():
    spec = json.dumps({"name": "rouge_l", "params": {"threshold": 0.4}, "version": "1"})
    component, why = _rebuild(labelers, "rouge_l[threshold=0.4]", spec)
    assert isinstance(component, RougeL) and component.threshold == 0.4 and why == ""
    component, why = _rebuild(labelers, "token_f1", "")
    assert component.key == "token_f1"
    recorded = json.dumps({"dataset": {"name": "faithbench"}, "source": "hhem-2.1"})
    assert _rebuild(detectors, "recorded:hhem-2.1", recorded) == (None, "stored with the dataset")
    component, why = _rebuild(labelers, "nonsense", "{not json")
    assert component is None and why.startswith("cannot be rebuilt")


def test_labeler_and_detector_metrics_equal_sklearn():
    rng = np.random.default_rng(11)
    y = (rng.random(80) < 0.4).astype(float)
    y[:5] = np.nan
    verdict = (rng.random(80) < 0.5).astype(float)
    verdict[70:] = np.nan
    table = labeler_metrics(y, verdict).set_index("metric")
    ok = ~np.isnan(y) & ~np.isnan(verdict)
    assert table.loc["share_hallucinated", "value"] == pytest.approx(np.nanmean(verdict))
    assert table.loc["share_hallucinated", "n"] == 70
    assert table.loc["accuracy", "value"] == pytest.approx(accuracy_score(y[ok], verdict[ok]))
    assert table.loc["cohen_kappa", "value"] == pytest.approx(cohen_kappa_score(y[ok], verdict[ok]))
    value = rng.normal(size=80) + np.nan_to_num(y)
    value[10:15] = np.nan
    table = detector_metrics(y, value).set_index("metric")
    ok = ~np.isnan(y) & ~np.isnan(value)
    assert table.loc["auroc", "value"] == pytest.approx(roc_auc_score(y[ok], value[ok]))
    assert table.loc["pr_auc", "value"] == pytest.approx(average_precision_score(y[ok], value[ok]))
    assert table.loc["mean_score", "value"] == pytest.approx(np.nanmean(value))


def test_flags_compare_the_largest_change_with_the_tolerance():
    rows = []
    for component, kind, metric, values in (
        ("lab", "labeler", "share_hallucinated", [0.40, 0.41, 0.44]),
        ("det", "detector", "auroc", [0.70, 0.71, 0.70]),
        ("det2", "detector", "auroc", [0.70, 0.72, 0.75]),
    ):
        for k, v in zip((0, 1, 2), values, strict=True):
            rows.append(
                {
                    "dataset": "d",
                    "kind": kind,
                    "component": component,
                    "k": k,
                    "metric": metric,
                    "value": v,
                    "delta": v - values[0],
                    "n": 10,
                }
            )
    flags = flag_rows(pd.DataFrame(rows), 0.02, 0.03).set_index("component")
    assert flags.loc["lab", "flagged"] and flags.loc["lab", "k_largest"] == 2
    assert flags.loc["lab", "max_abs_delta"] == pytest.approx(0.04)
    assert not flags.loc["det", "flagged"]
    assert flags.loc["det2", "flagged"] and flags.loc["det2", "value_at_k"] == 0.75


def test_k0_reproduces_the_stored_labels_on_the_seeded_subsample(data, result):
    frame = data.frame("truthfulqa")
    frame = frame[data.verdicts("truthfulqa")["human"].notna()]
    keep = np.sort(np.random.default_rng(0).choice(len(frame), size=200, replace=False))
    ids = frame.index[keep]
    stored = data.verdicts("truthfulqa").loc[ids, "token_f1"]
    long = result.table("repetition").set_index(["dataset", "component", "k", "metric"])
    share = long.loc[("truthfulqa", "token_f1", 0, "share_hallucinated")]
    assert share["value"] == pytest.approx(stored.mean()) and share["n"] == stored.notna().sum()
    used = result.table("responses").set_index("dataset")
    assert used.loc["truthfulqa", "n_used"] == 200 and used.loc["faithbench", "n_used"] == 200


def test_repetition_moves_lexical_labels_but_not_length_ranking(result):
    flags = result.table("flags").set_index(["dataset", "component"])
    assert flags.loc[("truthfulqa", "token_f1"), "flagged"]
    assert (
        flags.loc[("truthfulqa", "token_f1"), "value_at_k"]
        > flags.loc[("truthfulqa", "token_f1"), "value_k0"]
    )
    # Every word is repeated k + 1 times: word counts scale, so the ranking is unchanged.
    assert flags.loc[("truthfulqa", "length"), "max_abs_delta"] == 0.0
    assert not flags.loc[("faithbench", "length"), "flagged"]
    long = result.table("repetition")
    mean = long.query(
        "dataset == 'faithbench' and component == 'length' and metric == 'mean_score'"
    )
    np.testing.assert_allclose(mean["value"].to_numpy(), mean["value"].iloc[0] * (1 + mean["k"]))
    assert sorted(long["k"].unique()) == [0, 1, 2, 4]
    labelers_flagged = int(flags.query("kind == 'labeler'")["flagged"].sum())
    assert f"moves {labelers_flagged} of " in result.finding


def test_stored_and_slow_components_are_skipped_with_reasons(result):
    stored = [s for s in result.skipped if s.startswith("faithbench: not recomputed (stored")]
    assert len(stored) == 1 and "recorded:hhem-2.1, " in stored[0]
    assert (
        "truthfulqa: not recomputed (loads a model; set include_slow=True): embedding_similarity"
        in result.skipped
    )
    assert "embedding_similarity" not in set(result.table("repetition")["component"])
    assert result.figures[0].png.startswith(b"\x89PNG")


def test_the_run_seed_draws_the_subsample(data):
    study = Repetition(ks=(1,), max_responses=30)
    first = study.run(data, bootstrap=Bootstrap(seed=5))
    second = study.run(data, bootstrap=Bootstrap(seed=5))
    pd.testing.assert_frame_equal(first.table("repetition"), second.table("repetition"))
    assert first.table("responses")["seed"].tolist() == [5, 5]
    chosen = [study._subsample(data, "faithbench", seed).index for seed in (5, 5, 6)]
    assert list(chosen[0]) == list(chosen[1]) and list(chosen[0]) != list(chosen[2])


@pytest.mark.parametrize(
    ("key", "ks"), [("repetition[ks=1+2]", (0, 1, 2)), ("repetition[ks=3]", (0, 3))]
)
def test_ks_always_include_zero(key, ks):
    assert studies.create_from_key(key).ks == ks


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"ks": ()}, "'ks' parameter of repetition must be a non-empty list"),
        ({"ks": (1, -1)}, "'ks' parameter of repetition .* each item an int >= 0. .* Item 1 is -1"),
        ({"ks": "ab"}, "'ks' parameter of repetition .* each item an int >= 0"),
        ({"ks": (1, True)}, "'ks' parameter of repetition .* Item 1 is True"),
        ({"max_responses": 0}, "'max_responses' parameter of repetition must be an int >= 1"),
        ({"auroc_tolerance": 2.0}, r"'auroc_tolerance' parameter .* float in \[0, 1\]"),
        ({"include_slow": "yes"}, "'include_slow' parameter of repetition must be a bool"),
    ],
)
def test_bad_options_are_rejected(params, match):
    with pytest.raises(InvalidInputError, match=match):
        Repetition(**params)
