"""Evaluate's units measured on the local two-worker Ray cluster give the tables of a local run.

The run has two datasets, two tasks, a meta slice, human and judge labels
(a twin of the judge's verdicts, shown once), detectors with different missing
items (so bootstrap groups differ), a fixed threshold and a one-class slice.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("ray", reason="ray is not installed: pip install 'realitycheck[distributed]'")

from realitycheck import Example, Label, Response, RunStore, Score  # noqa: E402
from realitycheck.analysis import Bootstrap  # noqa: E402
from realitycheck.executors import LocalExecutor  # noqa: E402
from realitycheck.pipeline import EvaluationConfig, evaluate  # noqa: E402
from realitycheck.text import csv_safe_frame  # noqa: E402

pytestmark = pytest.mark.slow  # the cluster takes ~30 s to start on two cores


class Counting:
    """Delegates to another executor and keeps what it was given."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.items = inner, inner.name, []

    def map(self, task, shared, items):
        self.items += list(items)
        return self.inner.map(task, shared, items)

    def close(self) -> None:
        """Nothing of its own."""


def _store(folder, seed=0) -> RunStore:
    rng = np.random.default_rng(seed)
    store = RunStore(folder)
    examples, responses, labels, scores = [], [], [], []
    for ds, n in (("alpha", 60), ("beta", 45)):
        for i in range(n):
            eid = f"{ds}/{i}"
            task = "qa" if i % 3 else "summary"
            examples.append(Example(example_id=eid, dataset=ds, task=task, question=f"{i}?"))
            for model in ("m1", "m2"):
                rid = f"{eid}/{model}"
                bad = bool(rng.random() < 0.4)
                responses.append(
                    Response(
                        response_id=rid,
                        example_id=eid,
                        model=model,
                        text="x" * (5 + i),
                        meta={"slice": {"domain": "news" if i % 2 else "law"}},
                    )
                )
                judge = bad if rng.random() < 0.8 else not bad
                labels += [
                    Label(response_id=rid, labeler="human", hallucinated=bad),
                    Label(response_id=rid, labeler="judge", hallucinated=judge, score=rng.random()),
                    Label(response_id=rid, labeler="judge_twin", hallucinated=judge),
                ]
                values = {
                    "d1": float(bad) + rng.random(),
                    "d2": None if rng.random() < 0.2 else rng.random(),
                    "binary": float(rng.random() < 0.5),
                }
                scores += [
                    Score(response_id=rid, detector=f"recorded:{k}", value=v)
                    for k, v in values.items()
                ]
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store


def test_evaluate_on_the_cluster_writes_the_tables_of_a_local_evaluate(cluster, tmp_path):
    config = EvaluationConfig(
        bootstrap=Bootstrap(n_resamples=50, seed=3),
        thresholds={"recorded:binary": 0.5},
        slice_by=("domain",),
    )
    on_cluster, here = Counting(cluster), Counting(LocalExecutor())
    alone = evaluate(_store(tmp_path / "alone"), config, executor=here)
    split = evaluate(_store(tmp_path / "split"), config, executor=on_cluster)
    # Two datasets x (metrics against human and judge, agreement against human).
    assert len(on_cluster.items) == len(here.items) == 6
    for name in ("metrics", "agreement"):
        ours, theirs = getattr(split, name), getattr(alone, name)
        assert len(ours) > 100
        pd.testing.assert_frame_equal(ours, theirs)
        assert csv_safe_frame(ours).to_csv(index=False) == csv_safe_frame(theirs).to_csv(
            index=False
        )
    assert split.notes == alone.notes and any("judge_twin equals judge" in n for n in split.notes)
    assert set(alone.metrics["dataset"]) == {"alpha", "beta"}
    assert {"domain=news", "task=qa"} <= set(alone.metrics["slice"])
