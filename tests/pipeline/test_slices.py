"""``slice_by`` names built-in response columns (model, prompt_variant) or declared meta columns."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from realitycheck import (
    EvaluationConfig,
    Example,
    InvalidInputError,
    Label,
    Response,
    RunStore,
    Score,
    evaluate,
)
from realitycheck.analysis import Bootstrap
from realitycheck.pipeline import check_slice_by
from realitycheck.pipeline._slices import slices

MODELS = ("llama", "mistral")
PROMPTS = ("few_shot", "zero_shot")


@pytest.fixture
def run(tmp_path):
    """30 questions, each answered by two models under two prompts; human labels, one detector."""
    rng = np.random.default_rng(7)
    store = RunStore(tmp_path)
    examples, responses, labels, scores = [], [], [], []
    for i in range(30):
        eid = f"toy/{i}"
        examples.append(Example(example_id=eid, dataset="toy", task="qa", references=("x",)))
        for model in MODELS:
            for prompt in PROMPTS:
                rid = f"{eid}/{model}/{prompt}"
                bad = bool(rng.random() < 0.4)
                kind = {"model": model, "prompt_variant": prompt}
                responses.append(Response(response_id=rid, example_id=eid, text="y", **kind))
                labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
                value = float(bad) * 0.6 + rng.random()
                scores.append(Score(response_id=rid, detector="recorded:noisy", value=value))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store


def _truth(store):
    responses = store.frame("responses").set_index("response_id")
    labels = store.frame("labels").set_index("response_id").loc[responses.index]
    scores = store.frame("scores").set_index("response_id").loc[responses.index]
    return responses, labels["hallucinated"].astype(int).to_numpy(), scores["value"].to_numpy()


def _auroc_rows(store, slice_by):
    config = EvaluationConfig(bootstrap=Bootstrap(n_resamples=20), slice_by=slice_by)
    metrics = evaluate(store, config).metrics
    return metrics[metrics["metric"] == "auroc"].set_index("slice")


def test_prompt_variant_slices_equal_sklearn_on_each_subset(run):
    rows = _auroc_rows(run, ("prompt_variant",))
    responses, y, s = _truth(run)
    for prompt in PROMPTS:
        mask = (responses["prompt_variant"] == prompt).to_numpy()
        row = rows.loc[f"prompt_variant={prompt}"]
        assert row["value"] == pytest.approx(roc_auc_score(y[mask], s[mask]), abs=1e-12)
        assert row["n"] == mask.sum() == 60
    for model in MODELS:
        mask = (responses["model"] == model).to_numpy()
        row = rows.loc[f"model={model}"]
        assert row["value"] == pytest.approx(roc_auc_score(y[mask], s[mask]), abs=1e-12)


def test_prompt_variant_is_sliced_only_when_named(run):
    plain = set(_auroc_rows(run, ()).index)
    assert plain == {"all", "model=llama", "model=mistral"}
    named = set(_auroc_rows(run, ("model", "prompt_variant", "task", "dataset")).index)
    assert named == plain | {"prompt_variant=few_shot", "prompt_variant=zero_shot"}


def test_naming_model_adds_no_second_model_slice(run):
    rows = _auroc_rows(run, ("model",))
    assert sorted(rows.index) == ["all", "model=llama", "model=mistral"]


def test_built_in_names_pass_the_check_without_declared_columns(run):
    check_slice_by(run, ("model", "prompt_variant", "task", "dataset"))


@pytest.mark.parametrize(
    ("name", "hint"),
    [("prompt-variant", "Did you mean 'prompt_variant'?"), ("modle", "Did you mean 'model'?")],
)
def test_an_unknown_column_is_refused_with_a_suggestion(run, name, hint):
    expected = (
        f"No response of the run has the slice column '{name}'. {hint} Available: none "
        "(declare columns with meta= of the files dataset). "
        "Built in: dataset, model, prompt_variant, task."
    )
    with pytest.raises(InvalidInputError, match=re.escape(expected)):
        check_slice_by(run, (name,))
    with pytest.raises(InvalidInputError, match="Did you mean"):
        evaluate(run, EvaluationConfig(bootstrap=Bootstrap(n_resamples=5), slice_by=(name,)))


def test_slices_order_and_single_values():
    rows = pd.DataFrame(
        {
            "task": ["qa"] * 4,
            "model": ["b", "a", "b", "a"],
            "prompt_variant": ["p", "q", "q", None],
            "slice:domain": ["geo"] * 4,
        }
    )
    got = [(name, mask.tolist()) for name, mask in slices(rows)]
    assert got == [
        ("all", [True] * 4),
        ("model=a", [False, True, False, True]),
        ("model=b", [True, False, True, False]),
        ("prompt_variant=p", [True, False, False, False]),
        ("prompt_variant=q", [False, True, True, False]),
    ]
