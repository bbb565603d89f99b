import json

from realitycheck.datasets import datasets


def test_halueval_general_counts_and_labels(load):
    bundle = load("halueval-general")
    assert len(bundle.examples) == len(bundle.responses) == len(bundle.labels) == 4507
    assert sum(lab.hallucinated for lab in bundle.labels) == 815
    assert {e.task for e in bundle.examples} == {"open"}
    assert {r.model for r in bundle.responses} == {"chatgpt"}
    assert len({r.response_id for r in bundle.responses}) == 4507


def test_halueval_general_keeps_spans_and_original_ids(load):
    bundle = load("halueval-general")
    second = bundle.responses[1]
    assert second.response_id == "halueval_general/2/chatgpt"
    assert second.meta["hallucination_spans"][0].startswith("6. hear")
    label = bundle.labels[1]
    assert label.hallucinated is True
    assert json.loads(label.raw)["hallucination"] == "yes"
    odd = {e.example_id: e.meta["halueval_id"] for e in bundle.examples}
    assert odd["halueval_general/1975"] == ""
    assert odd["halueval_general/2059"] == odd["halueval_general/2159"] == "ID"
    spans = [
        r.meta["hallucination_spans"]
        for r, lab in zip(bundle.responses, bundle.labels, strict=True)
        if not lab.hallucinated
    ]
    assert all(s == [] for s in spans)


def test_nq_open(load):
    bundle = load("nq-open")
    assert len(bundle.examples) == 3610
    assert bundle.responses == [] and bundle.labels == []
    first = bundle.examples[0]
    assert first.example_id == "nq_open/1"
    assert first.task == "qa"
    assert first.references == ("14 December 1972 UTC", "December 1972")
    assert all(e.references for e in bundle.examples)


def test_every_dataset_has_a_description_and_files():
    for name in datasets.names():
        cls = datasets.get(name)
        assert cls.description, name
        assert cls.__doc__, name
        from_hub = "hub_id" in getattr(cls, "__dataclass_fields__", {})
        if name != "files" and not from_hub:
            assert cls.files, name
