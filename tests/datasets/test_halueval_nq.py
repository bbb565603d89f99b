import json

import pytest

from realitycheck.datasets import datasets
from realitycheck.errors import InvalidInputError


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
        fields = getattr(cls, "__dataclass_fields__", {})
        if "hub_id" not in fields and "path" not in fields:  # else the Hub or the user's file
            assert cls.files, name


PAIR_ROWS = {
    "halueval_qa": (
        "qa_data.json",
        {
            "knowledge": "The Vell bridge, in the invented town of Osk, opened in 1901.",
            "question": "When did the Vell bridge open?",
            "right_answer": "1901",
            "hallucinated_answer": "It opened in 1850 under Queen Mara.",
        },
    ),
    "halueval_dialogue": (
        "dialogue_data.json",
        {
            "knowledge": "Tin Harbour is a made-up novel by Ana Orr.",
            "dialogue_history": "[Human]: Do you know Tin Harbour? [Human]: Who wrote it?",
            "right_response": "Ana Orr wrote it.",
            "hallucinated_response": "It was written by Ana Orr and Mark Twain in 1990.",
        },
    ),
    "halueval_summarization": (
        "summarization_data.json",
        {
            "document": "Officials of the invented city of Larn opened a new park on Monday.",
            "right_summary": "Larn opened a park on Monday.",
            "hallucinated_summary": "Larn closed all of its parks on Friday.",
        },
    ),
}


@pytest.mark.parametrize("name", sorted(PAIR_ROWS))
def test_halueval_pairs_become_two_labelled_responses_per_row(tmp_path, name):
    file, row = PAIR_ROWS[name]
    (tmp_path / "halueval").mkdir()
    (tmp_path / "halueval" / file).write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    bundle = datasets.create(name, data_dir=tmp_path).load()
    assert len(bundle.examples) == 2 and len(bundle.responses) == 4
    first = bundle.examples[0]
    assert first.example_id == f"{name}/1" and first.context in row.values()
    texts = {r.response_id: r.text for r in bundle.responses}
    verdicts = {label.response_id: label.hallucinated for label in bundle.labels}
    right, wrong = f"{name}/1/right", f"{name}/1/hallucinated"
    assert verdicts[right] is False and verdicts[wrong] is True
    assert texts[wrong] == next(v for k, v in row.items() if k.startswith("hallucinated"))
    assert {r.model for r in bundle.responses} == {"reference", "chatgpt"}
    assert any("by construction" in n for n in bundle.notes)


def test_a_halueval_pair_row_without_its_field_names_line_and_field(tmp_path):
    (tmp_path / "halueval").mkdir()
    row = dict(PAIR_ROWS["halueval_qa"][1])
    del row["hallucinated_answer"]
    (tmp_path / "halueval" / "qa_data.json").write_text(
        json.dumps(PAIR_ROWS["halueval_qa"][1]) + "\n" + json.dumps(row) + "\n"
    )
    with pytest.raises(
        InvalidInputError, match=r"qa_data\.json, line 2, field 'hallucinated_answer'"
    ):
        datasets.create("halueval_qa", data_dir=tmp_path).load()
