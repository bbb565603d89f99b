"""``judge_stability`` and ``judge_examples`` on runs labelled by judges on the mock backend."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from realitycheck import datasets
from realitycheck.analysis import Bootstrap
from realitycheck.backends.mock import MockBackend
from realitycheck.datasets import Bundle
from realitycheck.errors import InvalidInputError
from realitycheck.labelers.faithjudge import FaithJudge
from realitycheck.pipeline import label
from realitycheck.store import RunData, RunStore
from realitycheck.studies import studies
from realitycheck.studies.judge_stability import fleiss_kappa_of

N_EXAMPLES = 6
TERNARY = {"Consistent": "consistent", "Benign": "benign", "Questionable": "benign"}
TERNARY["Unwanted"] = "unwanted"


@cache
def _faithbench(data_dir: Path) -> Bundle:
    return datasets.create("faithbench", data_dir=data_dir).load()


def _judge(k: int) -> FaithJudge:
    # Sampled at T = 0.6: about 60% of repeats leave the reply, so repeats disagree.
    mock = MockBackend(
        reply='{"reason": "fits", "verdict": "consistent"}',
        sample_replies=("unwanted", "benign", "no idea", "consistent"),
    )
    return FaithJudge(judge=mock, k=k, repeats=3, temperature=0.6)


@pytest.fixture(scope="module")
def judged(tmp_path_factory, data_dir) -> RunData:
    """A few FaithBench sources, their human labels, and faithjudge at k = 0 and k = 2."""
    bundle = _faithbench(data_dir)
    store = RunStore(tmp_path_factory.mktemp("judged"))
    keep = {e.example_id for e in bundle.examples[:N_EXAMPLES]}
    responses = [r for r in bundle.responses if r.example_id in keep]
    ids = {r.response_id for r in responses}
    store.append([e for e in bundle.examples if e.example_id in keep])
    store.append(responses)
    store.append([lab for lab in bundle.labels if lab.response_id in ids])
    label(store, [_judge(0), _judge(2)])
    return RunData(store)


@pytest.fixture(scope="module")
def plain(real_run) -> RunData:
    """A run with human labels and no judge."""
    return real_run(truthfulqa=5)


def _judge_labels(data: RunData, key: str):
    return data.labels[data.labels["labeler"] == key].sort_values("response_id")


def test_stability_matches_a_hand_computation(judged):
    result = studies.create("judge_stability").run(judged)
    table = result.table("stability").set_index("labeler")
    assert sorted(table.index) == sorted([_judge(0).key, _judge(2).key])
    for key in table.index:
        raws = [json.loads(r) for r in _judge_labels(judged, key)["raw"]]
        verdicts = [r["verdicts"] for r in raws]
        assert all(len(v) == 3 for v in verdicts)
        row = table.loc[key]
        assert row["n"] == len(verdicts) and row["repeats"] == 3 and row["n_excluded"] == 0
        assert row["unanimous_share"] == pytest.approx(
            np.mean([len(set(v)) == 1 for v in verdicts])
        )
        assert row["mean_agreement"] == pytest.approx(np.mean([r["agreement"] for r in raws]))
        codes = {c: i for i, c in enumerate(sorted({x for v in verdicts for x in v}))}
        counts, _ = aggregate_raters(np.array([[codes[x] for x in v] for v in verdicts]))
        assert row["fleiss_kappa"] == pytest.approx(fleiss_kappa(counts, method="fleiss"))
        # The repeats do disagree, and more than one category occurs.
        assert 0 < row["unanimous_share"] < 1 and len(codes) >= 2
    assert result.table("stability")["dataset"].eq("faithbench").all()
    worst = result.table("stability").sort_values("mean_agreement").iloc[0]["labeler"]
    assert f"least stable judge is {worst}" in result.finding


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fleiss_kappa_of_matches_statsmodels_on_random_ratings(seed):
    rng = np.random.default_rng(seed)
    names = np.array(["consistent", "benign", "unwanted", "invalid"])
    codes = rng.integers(0, 4, size=(40, 5))
    counts, _ = aggregate_raters(codes)
    expected = fleiss_kappa(counts, method="fleiss")
    assert fleiss_kappa_of([list(row) for row in names[codes]]) == pytest.approx(expected)


def test_fleiss_kappa_of_edges():
    assert np.isnan(fleiss_kappa_of([["a", "a"], ["a", "a"]]))
    with pytest.raises(InvalidInputError, match="rows of one length >= 2"):
        fleiss_kappa_of([["a", "b"], ["a"]])


def test_examples_curve_matches_sklearn(judged):
    bootstrap = Bootstrap(n_resamples=200, seed=3)
    result = studies.create("judge_examples").run(judged, bootstrap=bootstrap)
    curve = result.table("curve")
    assert sorted(curve["k"]) == [0, 2]
    assert curve["reference"].eq("human").all() and curve["dataset"].eq("faithbench").all()
    assert curve["family"].nunique() == 1
    verdicts = judged.verdicts("faithbench")
    for row in curve.itertuples():
        both = verdicts["human"].notna() & verdicts[row.labeler].notna()
        y_true, y_pred = verdicts.loc[both, "human"], verdicts.loc[both, row.labeler]
        assert row.n == both.sum() > 0
        assert row.balanced_accuracy == pytest.approx(balanced_accuracy_score(y_true, y_pred))
        assert row.ci_low <= row.balanced_accuracy <= row.ci_high
    (fig,) = result.figures
    assert fig.stem == "examples-curve" and fig.png.startswith(b"\x89PNG")
    assert "balanced accuracy" in result.finding


def test_confusion_crosses_the_judge_category_with_the_human_verdict(judged):
    result = studies.create("judge_examples").run(judged, bootstrap=Bootstrap(n_resamples=50))
    confusion = result.table("confusion")
    human = judged.labels[judged.labels["labeler"] == "human"].set_index("response_id")
    for k in (0, 2):
        key = _judge(k).key
        mine = _judge_labels(judged, key).set_index("response_id")
        expected = Counter(
            (mine.loc[rid, "category"], TERNARY.get(human.loc[rid, "category"], "x"))
            for rid in mine.index
        )
        got = confusion[confusion["k"] == k]
        assert {(r.category, r.reference_verdict): r.n for r in got.itertuples()} == dict(expected)
        assert set(got["category"]) <= {"consistent", "benign", "unwanted", "invalid"}


@pytest.mark.parametrize("name", ["judge_stability", "judge_examples"])
def test_a_run_without_judges_skips_every_dataset_quickly(plain, name):
    result = studies.create(name).run(plain, bootstrap=Bootstrap(n_resamples=20))
    assert result.skipped and all(line.startswith("truthfulqa: ") for line in result.skipped)
    assert not result.figures
    assert all(t.frame.empty for t in result.tables)
    assert "no" in result.finding.lower()


def test_examples_skips_a_dataset_without_the_reference(judged):
    result = studies.create("judge_examples", reference="nobody").run(
        judged, bootstrap=Bootstrap(n_resamples=20)
    )
    assert result.skipped == ("faithbench: no 'nobody' labels",)
    assert result.table("curve").empty and not result.figures


def test_a_judge_asked_once_is_skipped_with_its_reason(tmp_path, data_dir):
    bundle = _faithbench(data_dir)
    keep = bundle.examples[0].example_id
    store = RunStore(tmp_path / "once")
    store.append([bundle.examples[0]])
    store.append([r for r in bundle.responses if r.example_id == keep])
    once = FaithJudge(judge=MockBackend(reply="consistent"), k=1)
    label(store, [once])
    result = studies.create("judge_stability").run(RunData(store))
    assert result.skipped == (f"faithbench: {once.key} asks once per response (repeats = 1)",)
    assert result.table("stability").empty


def test_hostile_judge_keys_reach_the_figure_as_plain_text(tmp_path, data_dir):
    bundle = _faithbench(data_dir)
    keep = {e.example_id for e in bundle.examples[:2]}
    responses = [r for r in bundle.responses if r.example_id in keep]
    ids = {r.response_id for r in responses}
    store = RunStore(tmp_path / "hostile")
    store.append([e for e in bundle.examples if e.example_id in keep])
    store.append(responses)
    store.append([lab for lab in bundle.labels if lab.response_id in ids])
    # broken maths if parsed; the verdict is read from the line's 'verdict:' conclusion
    hostile = MockBackend(reply="$\\nocommand{x}^$ verdict: unwanted")
    label(store, [FaithJudge(judge=hostile, k=k) for k in (0, 1)])
    result = studies.create("judge_examples").run(
        RunData(store), bootstrap=Bootstrap(n_resamples=20)
    )
    (fig,) = result.figures
    assert fig.png.startswith(b"\x89PNG")
    assert "$\\nocommand{x}^$" in result.table("curve")["family"].iloc[0]
