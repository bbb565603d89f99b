import json

import pytest

from realitycheck.datasets import datasets
from realitycheck.errors import InvalidInputError

MODELS = {
    "gpt-4-0613",
    "gpt-3.5-turbo-0613",
    "llama-2-7b-chat",
    "llama-2-13b-chat",
    "llama-2-70b-chat",
    "mistral-7B-instruct",
}


@pytest.mark.parametrize(
    ("part", "task", "n_examples", "n_responses", "n_hallucinated"),
    [
        ("qa", "rag_qa", 139, 817, 259),
        ("summary", "summary", 150, 900, 241),
        ("data2txt", "data2text", 150, 900, 579),
    ],
)
def test_counts_match_the_data_readme(load, part, task, n_examples, n_responses, n_hallucinated):
    bundle = load(f"ragtruth[tasks={part}]")
    assert len(bundle.examples) == n_examples
    assert len(bundle.responses) == n_responses
    assert {e.task for e in bundle.examples} == {task}
    assert {e.meta["ragtruth_task"] for e in bundle.examples} == {part}
    human = [lab for lab in bundle.labels if lab.labeler == "human"]
    assert len(human) == n_responses
    assert sum(lab.hallucinated for lab in human) == n_hallucinated
    assert {r.model for r in bundle.responses} <= MODELS


def test_all_tasks_by_default_with_unique_ids(load):
    bundle = load("ragtruth")
    assert len(bundle.responses) == 817 + 900 + 900
    assert len({r.response_id for r in bundle.responses}) == len(bundle.responses)
    assert len({e.example_id for e in bundle.examples}) == len(bundle.examples)
    examples = {e.example_id for e in bundle.examples}
    assert all(r.example_id in examples for r in bundle.responses)
    assert {r.model for r in bundle.responses} == MODELS
    assert bundle.responses[0].response_id == "ragtruth/qa/14300/gpt-4-0613"


def test_label_keeps_the_spans_and_their_types(load):
    bundle = load("ragtruth[tasks=summary]")
    by_id = {r.response_id: r for r in bundle.responses}
    for label in bundle.labels:
        spans = json.loads(label.raw)
        assert label.hallucinated == bool(spans)
        kinds = sorted({s["label_type"] for s in spans})
        assert label.category == "+".join(kinds)
        assert by_id[label.response_id].meta["n_spans"] == len(spans)
        for span in spans:
            text = by_id[label.response_id].text
            assert text[span["start"] : span["end"]] == span["text"]


def test_contexts_hold_the_sources(load):
    qa = load("ragtruth[tasks=qa]").examples[0]
    assert qa.question == "how do automotive technicians get paid"
    assert qa.context.startswith(f"Question: {qa.question}\n\npassage 1:")
    d2t = load("ragtruth[tasks=data2txt]").examples[0]
    assert json.loads(d2t.context)["name"] == "Finch & Fork"
    summary = load("ragtruth[tasks=summary]").examples[0]
    assert summary.context.startswith("Blue Bell ice cream")


def test_tasks_from_a_key():
    ds = datasets.create_from_key("ragtruth[tasks=summary+qa]")
    assert ds.tasks == ("summary", "qa")
    assert ds.key == "ragtruth[tasks=summary+qa]"
    assert datasets.create_from_key("ragtruth[tasks=qa]").tasks == ("qa",)


@pytest.mark.parametrize("tasks", [("qa", "dialogue"), (), "rag_qa", 3])
def test_bad_tasks_are_rejected(tasks):
    with pytest.raises(InvalidInputError, match="The 'tasks' parameter of ragtruth"):
        datasets.create("ragtruth", tasks=tasks)


@pytest.mark.parametrize("name", ["ragtruth", "faithbench", "begin", "truthfulqa"])
def test_progress_advances_by_the_responses_read(data_dir, name):
    ticks = []
    bundle = datasets.create(name, data_dir=data_dir).load(progress=ticks.append)
    assert ticks and all(t > 0 for t in ticks)
    assert sum(ticks) == len(bundle.responses)
