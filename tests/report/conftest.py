"""A small synthetic run: two datasets, two generators, human labels, two detectors, one labeler."""

from __future__ import annotations

import numpy as np
import pytest

from realitycheck import EvaluationConfig, Example, Label, Response, RunStore, Score, evaluate
from realitycheck.analysis import Bootstrap

MODELS = ("gen-a", "gen-b")
TEXT = "RESPONSE-TEXT-MARKER"
DATASETS = {"alpha": ("qa", "summary"), "beta": ("dialogue",)}


def build_run(path, *, seed: int = 0, models=MODELS, note: str = "label 'yes' means hallucinated"):
    """Write a run with every table filled and return its store."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for ds, tasks in DATASETS.items():
        for i in range(16):
            eid = f"{ds}/{i}"
            examples.append(
                Example(example_id=eid, dataset=ds, task=tasks[i % len(tasks)], question="q?")
            )
            for model in models:
                rid = f"{eid}/{model}"
                bad = bool(rng.random() < 0.35)
                responses.append(Response(response_id=rid, example_id=eid, model=model, text=TEXT))
                labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
                flip = bool(rng.random() < 0.2)
                labels.append(
                    Label(
                        response_id=rid,
                        labeler="rouge_l",
                        hallucinated=bad != flip,
                        score=float(bad) * 0.4 + 0.6 * float(rng.random()),
                    )
                )
                noisy = float(bad) + float(rng.normal())
                failed = rng.random() < 0.1
                scores.append(
                    Score(
                        response_id=rid,
                        detector="noisy",
                        value=None if failed else noisy,
                        error="timeout" if failed else "",
                    )
                )
                scores.append(
                    Score(response_id=rid, detector="length", value=float(rng.integers(1, 50)))
                )
        # An example without any response, as input-only datasets have.
        examples.append(Example(example_id=f"{ds}/unanswered", dataset=ds, task=tasks[0]))
    for records in (examples, responses, labels, scores):
        store.append(records)
    store.update_manifest(
        datasets={
            ds: {"spec": {"name": ds, "params": {}, "version": "1"}, "notes": [note]}
            for ds in DATASETS
        },
        components={
            "noisy": {"name": "noisy", "params": {}, "version": "1"},
            "rouge_l": {"name": "rouge_l", "params": {"threshold": 0.5}, "version": "1"},
        },
        notes=["bertscore skipped: the embed extra is not installed"],
    )
    evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=50)))
    return store


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return build_run(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="session")
def make_run():
    """The run builder, for tests that need their own variant."""
    return build_run


@pytest.fixture
def response_text():
    """The text of every synthetic response (must never reach the report)."""
    return TEXT
