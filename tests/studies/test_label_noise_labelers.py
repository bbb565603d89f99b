"""Label noise ranks labelers (LLM judges and others) with the detectors, as paper 002 does.

A small run: one dataset with human labels, two annotators and a protocol
label (all derived from the reference), a judge shown the annotation of the
response it judges (derived too), two labelers with a continuous score, one
with a verdict only, and two detectors.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import roc_auc_score

from realitycheck import Bootstrap
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import RunData, RunStore
from realitycheck.studies.label_noise import LabelNoise
from realitycheck.studies.label_noise._signals import derived_from

N_EXAMPLES = 80
LEAKY = "faithjudge[include_self=true,judge=mock]"
LEAKY_SPEC = {"name": "faithjudge", "params": {"include_self": True, "k": 3}, "version": "1"}
DERIVED = ["human:a", "human:b", "human[protocol=worst]", LEAKY]
SCORED = ("judge_a", "judge_b")
VERDICT_ONLY = "exact_match"


def _flip(rng, y, rate):
    return np.where(rng.random(y.size) < rate, 1 - y, y)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> RunData:
    rng = np.random.default_rng(7)
    n = 2 * N_EXAMPLES
    y = (rng.random(n) < 0.4).astype(float)
    ids = [f"alpha/{i // 2}/{i % 2}" for i in range(n)]
    examples = [
        Example(example_id=f"alpha/{i}", dataset="alpha", task="qa", question=f"q{i}")
        for i in range(N_EXAMPLES)
    ]
    responses = [
        Response(response_id=rid, example_id=rid.rsplit("/", 1)[0], model="m", text=f"a {rid}")
        for rid in ids
    ]
    verdicts = {
        "human": y,
        "human:a": _flip(rng, y, 0.1),
        "human:b": _flip(rng, y, 0.1),
        "human[protocol=worst]": np.maximum(y, _flip(rng, y, 0.1)),
        LEAKY: y,
        VERDICT_ONLY: _flip(rng, y, 0.25),
    }
    scores = {
        "judge_a": np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1),
        "judge_b": np.clip(0.2 * y + 0.8 * rng.random(n), 0, 1),
    }
    labels = [
        Label(
            response_id=rid,
            labeler=key,
            hallucinated=bool(v[i]),
            spec=json.dumps(LEAKY_SPEC) if key == LEAKY else "{}",
        )
        for key, v in verdicts.items()
        for i, rid in enumerate(ids)
    ]
    labels += [
        Label(response_id=rid, labeler=key, hallucinated=bool(s[i] >= 0.5), score=float(s[i]))
        for key, s in scores.items()
        for i, rid in enumerate(ids)
    ]
    detector_values = {"signal": y + rng.normal(size=n), "other": rng.normal(size=n)}
    store = RunStore(tmp_path_factory.mktemp("noise_labelers") / "run")
    store.append(examples)
    store.append(responses)
    store.append(labels)
    store.append(
        [
            Score(response_id=rid, detector=key, value=float(v[i]))
            for key, v in detector_values.items()
            for i, rid in enumerate(ids)
        ]
    )
    return RunData(store)


@pytest.fixture(scope="module")
def result(data):
    study = LabelNoise(repetitions=2, rates=(0.0, 0.2))
    return study.run(data, bootstrap=Bootstrap(n_resamples=30))


def test_labelers_are_ranked_with_the_detectors_and_say_what_score_was_used(result):
    clean = result.table("noise_effect").query("condition == 'clean'").set_index("signal")
    assert sorted(clean.index) == sorted(["other", "signal", *SCORED, VERDICT_ONLY])
    assert clean["signal_kind"].to_dict() == {
        "signal": "detector",
        "other": "detector",
        "judge_a": "labeler",
        "judge_b": "labeler",
        VERDICT_ONLY: "labeler",
    }
    assert clean["score_used"].to_dict() == {
        "signal": "value",
        "other": "value",
        "judge_a": "score",
        "judge_b": "score",
        VERDICT_ONLY: "verdict (0/1)",
    }
    flips = result.table("ranking_change").query("condition == 'random_flip'").iloc[0]
    assert (flips["n_ranked"], flips["n_detectors"], flips["n_labelers"]) == (5, 2, 3)
    curve = result.table("noise_curve")
    assert set(curve["signal"]) == set(clean.index)
    assert set(curve.loc[curve["signal_kind"] == "labeler", "signal"]) == {*SCORED, VERDICT_ONLY}
    assert "2 detector(s) and 3 labeler(s)" in result.finding
    assert {f.stem for f in result.figures} == {"noise_curve_alpha", "noise_ranks_alpha"}


def test_a_scored_labeler_is_ranked_by_its_score_a_verdict_only_one_by_its_verdict(data, result):
    clean = result.table("noise_effect").query("condition == 'clean'").set_index("signal")
    y = data.verdicts("alpha")["human"].to_numpy()
    score = data.label_scores("alpha")["judge_a"].to_numpy()
    verdict = data.verdicts("alpha")[VERDICT_ONLY].to_numpy()
    assert clean.loc["judge_a", "auroc"] == pytest.approx(roc_auc_score(y, score))
    # The score ranks finer than its own verdict would.
    assert clean.loc["judge_a", "auroc"] != pytest.approx(roc_auc_score(y, score >= 0.5))
    assert clean.loc[VERDICT_ONLY, "auroc"] == pytest.approx(roc_auc_score(y, verdict))
    assert clean.loc[VERDICT_ONLY, "threshold"] == 0.5


def test_the_reference_and_labelers_derived_from_it_are_excluded_and_named(result):
    ranked = set(result.table("noise_effect")["signal"])
    assert not ranked & {"human", *DERIVED}
    (line,) = [s for s in result.skipped if "not ranked" in s]
    assert line.startswith("alpha: not ranked against human (the reference or derived from it)")
    for key in DERIVED:
        assert key in line
    assert "human:a, human:b, human[protocol=worst] (human labels of the annotators" in line
    assert f"{LEAKY} (shown the human annotation of the response it judges" in line


def test_the_ranking_under_one_noisy_label_set_matches_an_independent_computation(data, result):
    # Weak supervision by the verdict-only labeler: its verdicts replace the reference.
    y = data.verdicts("alpha")["human"].to_numpy()
    noisy = data.verdicts("alpha")[VERDICT_ONLY].to_numpy()
    values = {
        "signal": data.detector_scores("alpha")["signal"].to_numpy(),
        "other": data.detector_scores("alpha")["other"].to_numpy(),
        **{k: data.label_scores("alpha")[k].to_numpy() for k in SCORED},
    }  # the source itself is left out of its own ranking
    clean = {k: roc_auc_score(y, v) for k, v in values.items()}
    under = {k: roc_auc_score(noisy, v) for k, v in values.items()}
    effect = result.table("noise_effect")
    mine = effect[(effect["condition"] == "weak_supervision") & (effect["source"] == VERDICT_ONLY)]
    got = mine.set_index("signal")
    for k in values:
        assert got.loc[k, "auroc"] == pytest.approx(under[k])
        assert got.loc[k, "auroc_change"] == pytest.approx(under[k] - clean[k])
    assert got.loc[VERDICT_ONLY, "is_noise_source"] and got.loc[VERDICT_ONLY, "auroc"] == 1
    row = (
        result.table("ranking_change")
        .query("condition == 'weak_supervision' and source == @VERDICT_ONLY")
        .iloc[0]
    )
    names = list(values)
    a, b = [clean[k] for k in names], [under[k] for k in names]
    assert row["kendall_tau"] == pytest.approx(kendalltau(a, b).statistic)
    swapped = [
        (p, q)
        for p, q in itertools.combinations(names, 2)
        if (clean[p] - clean[q]) * (under[p] - under[q]) < 0
    ]
    assert row["n_swapped_pairs"] == len(swapped) and row["n_pairs"] == 6
    kinds = {"signal": "d", "other": "d", "judge_a": "l", "judge_b": "l"}
    assert row["n_swapped_detector_labeler"] == sum(kinds[p] != kinds[q] for p, q in swapped)
    change = {k: under[k] - clean[k] for k in names}
    assert row["mean_auroc_change"] == pytest.approx(np.mean(list(change.values())))
    assert row["mean_auroc_change_detectors"] == pytest.approx(
        np.mean([change["signal"], change["other"]])
    )
    assert row["mean_auroc_change_labelers"] == pytest.approx(np.mean([change[k] for k in SCORED]))
    assert (row["n_detectors"], row["n_labelers"]) == (2, 2)
    assert row["noise_rate"] == pytest.approx(np.mean(noisy != y))


PANEL = {
    "name": "panel",
    "params": {
        "members": [
            {"name": "rouge_l", "params": {"threshold": 0.3}, "version": "1"},
            {"name": "token_f1", "params": {"threshold": 0.5}, "version": "1"},
        ]
    },
    "version": "1",
}


@pytest.mark.parametrize(
    ("key", "reference", "spec", "reason"),
    [
        ("human", "human", {}, "the reference"),
        ("human:a", "human", {}, "human labels of the annotators behind human"),
        ("human[protocol=worst]", "human", {}, "human labels of the annotators behind human"),
        ("human", "human:a", {}, "an aggregate that counts human:a's votes"),
        ("human:b", "human:a", {}, ""),
        (LEAKY, "human", LEAKY_SPEC, "shown the human annotation of the response it judges"),
        (LEAKY, "rouge_l", LEAKY_SPEC, ""),
        ("recorded:gpt_4o", "human", {}, ""),
        ("rouge_l[threshold=0.5]", "rouge_l", {}, "rouge_l with other parameters"),
        ("panel[members=rouge_l+token_f1]", "rouge_l", PANEL, "built on rouge_l"),
        ("panel[members=rouge_l+token_f1]", "exact_match", PANEL, ""),
        ("token_f1", "rouge_l", {}, ""),
    ],
)
def test_derived_from_the_reference(key, reference, spec, reason):
    got = derived_from(key, reference, spec)
    assert got.startswith(reason) if reason else got == ""
