"""The whole #examples curve of ``judge_examples``: sensitivity, specificity and the leakage point.

FaithBench sources judged by ``faithjudge`` on the mock backend at k = 0 and 2
(leave-one-out) and at k = 3 with ``include_self=true`` (the paper's "10*"
point: the judge also sees the annotation of the response it judges). The
mock judge copies the verdict of the last annotated response it is shown, so
the leakage point copies the human verdict of the judged response itself.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from realitycheck import datasets
from realitycheck.analysis import Bootstrap
from realitycheck.backends.mock import MockBackend
from realitycheck.datasets import Bundle
from realitycheck.errors import InvalidInputError
from realitycheck.labelers.faithjudge import FaithJudge
from realitycheck.metrics import bootstrap_ci
from realitycheck.pipeline import label
from realitycheck.store import RunData, RunStore
from realitycheck.studies import studies
from realitycheck.studies.judges import LEAKAGE, LEAVE_ONE_OUT

N_EXAMPLES = 8
# The last "human verdict" of the prompt is copied; without one the judge says consistent.
COPY = MockBackend(
    reply='{"reason": "none shown", "verdict": "consistent"}',
    replies=('(?s).*"human verdict": "(\\w+)"=>{{"reason": "copied", "verdict": "{1}"}}',),
)
BOOTSTRAP = Bootstrap(n_resamples=200, seed=5)


@cache
def _faithbench(data_dir: Path) -> Bundle:
    return datasets.create("faithbench", data_dir=data_dir).load()


def _judges() -> list[FaithJudge]:
    return [
        FaithJudge(judge=COPY, k=0),
        FaithJudge(judge=COPY, k=2),
        FaithJudge(judge=COPY, k=3, include_self=True),
    ]


@pytest.fixture(scope="module")
def judged(tmp_path_factory, data_dir) -> RunData:
    bundle = _faithbench(data_dir)
    store = RunStore(tmp_path_factory.mktemp("examples_curve"))
    keep = {e.example_id for e in bundle.examples[:N_EXAMPLES]}
    responses = [r for r in bundle.responses if r.example_id in keep]
    ids = {r.response_id for r in responses}
    store.append([e for e in bundle.examples if e.example_id in keep])
    store.append(responses)
    store.append([lab for lab in bundle.labels if lab.response_id in ids])
    label(store, _judges())
    return RunData(store)


@pytest.fixture(scope="module")
def result(judged):
    return studies.create("judge_examples").run(judged, bootstrap=BOOTSTRAP)


def test_include_self_shows_the_judged_response_last_as_one_of_k(data_dir):
    bundle = _faithbench(data_dir)
    example = bundle.examples[0]
    response = next(r for r in bundle.responses if r.example_id == example.example_id)
    plain = FaithJudge(judge=COPY, k=3).shots(response, example)
    leaky = FaithJudge(judge=COPY, k=3, include_self=True).shots(response, example)
    assert response.response_id not in [e["response_id"] for e in plain]
    assert [e["response_id"] for e in leaky] == [
        *[e["response_id"] for e in plain[:2]],
        response.response_id,
    ]
    assert FaithJudge(judge=COPY, k=0, include_self=True).shots(response, example) == []
    # Off by default, so keys and specs of existing judges stay what they were.
    assert "include_self" not in FaithJudge(judge=COPY, k=3).key
    leaky_key = FaithJudge(judge=COPY, k=3, include_self=True).key
    assert leaky_key.startswith("faithjudge[include_self=true,")
    with pytest.raises(InvalidInputError, match="'include_self' parameter of faithjudge"):
        FaithJudge(judge=COPY, include_self="yes")


def test_sensitivity_and_specificity_equal_hand_counts_per_k(judged, result):
    curve = result.table("curve")
    assert sorted(zip(curve["k"], curve["sees_own_annotation"], strict=True)) == [
        (0, False),
        (2, False),
        (3, True),
    ]
    assert curve["family"].nunique() == 1
    verdicts = judged.verdicts("faithbench")
    for row in curve.itertuples():
        both = verdicts["human"].notna() & verdicts[row.labeler].notna()
        y = verdicts.loc[both, "human"].to_numpy() == 1
        said = verdicts.loc[both, row.labeler].to_numpy() == 1
        tp, fn = int((y & said).sum()), int((y & ~said).sum())
        tn, fp = int((~y & ~said).sum()), int((~y & said).sum())
        assert (row.n, row.n_positive, row.n_negative) == (tp + fn + tn + fp, tp + fn, tn + fp)
        assert row.sensitivity == pytest.approx(tp / (tp + fn))
        assert row.specificity == pytest.approx(tn / (tn + fp))
        assert row.balanced_accuracy == pytest.approx((tp / (tp + fn) + tn / (tn + fp)) / 2)
        for name, truth, pred in (("sensitivity", y, said), ("specificity", ~y, ~said)):
            direct = bootstrap_ci("recall", truth, pred, n_resamples=200, seed=5)
            assert (getattr(row, f"{name}_ci_low"), getattr(row, f"{name}_ci_high")) == (
                pytest.approx((direct.ci_low, direct.ci_high))
            )
    # k = 0 sees no verdict and always says consistent.
    zero = curve[curve["k"] == 0].iloc[0]
    assert zero["sensitivity"] == 0 and zero["specificity"] == 1


def test_the_leakage_point_is_marked_and_copies_the_human_verdict(judged, result):
    curve = result.table("curve").set_index("k")
    assert curve.loc[3, "point"] == LEAKAGE == "sees its own annotation (leakage)"
    assert set(curve.loc[[0, 2], "point"]) == {LEAVE_ONE_OUT}
    # The judge copied the ternary human verdict it was shown: its own.
    key = curve.loc[3, "labeler"]
    mine = judged.labels[judged.labels["labeler"] == key].set_index("response_id")
    shown = mine["raw"].map(lambda raw: json.loads(raw)["shown"][-1])
    assert (shown == mine.index).all()
    assert curve.loc[3, "balanced_accuracy"] > curve.loc[2, "balanced_accuracy"]
    confusion = result.table("confusion")
    assert set(confusion.loc[confusion["k"] == 3, "sees_own_annotation"]) == {True}
    (fig,) = result.figures
    assert fig.png.startswith(b"\x89PNG") and LEAKAGE.replace("sees", "saw") in fig.caption
    assert "sensitivity" in fig.caption and "specificity" in fig.caption
    assert "shown the annotation of the response it judges (k = 3, leakage)" in result.finding
    assert np.isfinite(curve["specificity_ci_low"]).all()
