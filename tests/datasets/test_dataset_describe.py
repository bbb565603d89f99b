import json

from realitycheck.datasets import Bundle, describe
from realitycheck.records import Example, Label, Response, Score


def _bundle():
    examples = [
        Example(example_id="e1", dataset="d", task="qa"),
        Example(example_id="e2", dataset="d", task="summary"),
    ]
    responses = [
        Response(response_id="r1", example_id="e1", model="a", text="x"),
        Response(response_id="r2", example_id="e1", model="b", text="y"),
        Response(response_id="r3", example_id="e2", model="a", text="z"),
    ]
    labels = [
        Label(response_id="r1", labeler="human", hallucinated=True, category="bad"),
        Label(response_id="r2", labeler="human", hallucinated=False),
        Label(response_id="r3", labeler="human", hallucinated=None, category="benign"),
        Label(response_id="r3", labeler="human:ann", hallucinated=True),
    ]
    scores = [
        Score(response_id="r1", detector="recorded:x", value=0.5),
        Score(response_id="r2", detector="recorded:x", value=None, error="missing"),
    ]
    return Bundle(
        examples=examples, responses=responses, labels=labels, scores=scores, notes=["a note"]
    )


def test_describe_counts():
    summary = describe(_bundle())
    assert summary["examples"] == 2
    assert summary["responses"] == 3
    assert summary["labels"]["human"] == {
        "labelled": 2,
        "hallucinated": 1,
        "excluded": 1,
        "categories": {"bad": 1, "benign": 1},
    }
    assert summary["labels"]["human:ann"]["hallucinated"] == 1
    assert summary["scores"] == {"recorded:x": {"n": 2, "missing": 1}}
    assert summary["tasks"] == {
        "qa": {"examples": 1, "responses": 2, "labelled": 2, "hallucinated": 1},
        "summary": {"examples": 1, "responses": 1, "labelled": 0, "hallucinated": 0},
    }
    assert summary["models"]["a"] == {"responses": 2, "labelled": 1, "hallucinated": 1}
    assert summary["notes"] == ["a note"]
    json.dumps(summary)


def test_describe_under_another_labeler():
    summary = describe(_bundle(), labeler="human:ann")
    assert summary["models"]["a"] == {"responses": 2, "labelled": 1, "hallucinated": 1}
    assert summary["models"]["b"]["labelled"] == 0


def test_describe_a_real_dataset(load):
    summary = describe(load("ragtruth"))
    assert summary["tasks"]["rag_qa"] == {
        "examples": 139,
        "responses": 817,
        "labelled": 817,
        "hallucinated": 259,
    }
    assert sum(m["responses"] for m in summary["models"].values()) == 2617
    assert summary["notes"]
