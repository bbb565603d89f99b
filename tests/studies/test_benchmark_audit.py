"""Benchmark audit: hallucination types, the marking rules, and the shipped datasets."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from realitycheck import (
    Example,
    InvalidInputError,
    Label,
    Response,
    RunStore,
    Score,
    datasets,
    ingest,
)
from realitycheck.store import RunData, save_result
from realitycheck.studies.benchmark_audit import DESIDERATA, BenchmarkAudit, hallucination_types


def test_hallucination_types_from_span_types_and_dotted_labels():
    raws = pd.Series(
        [
            json.dumps([{"label_type": "Evident Conflict"}, {"label_type": "Subtle Conflict"}]),
            json.dumps([{"label": ["Unwanted", "Unwanted.Intrinsic"]}, "not a span"]),
            json.dumps({"label_type": "ignored: not a list"}),
            " no",
            "[not json",
            None,
            json.dumps([{"label_type": ""}, {"label": ["Benign"]}]),
        ]
    )
    assert hallucination_types(raws) == [
        "Evident Conflict",
        "Subtle Conflict",
        "Unwanted.Intrinsic",
    ]
    assert hallucination_types(pd.Series([], dtype=object)) == []


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (
            {"long_context": 0},
            r"'long_context' parameter of benchmark_audit must be a float in \(0",
        ),
        ({"long_context": float("inf")}, "'long_context' parameter"),
        ({"long_context": "long"}, "'long_context' parameter"),
        (
            {"min_generators": 1},
            "'min_generators' parameter of benchmark_audit must be an int >= 2",
        ),
        ({"min_domains": 2.5}, "'min_domains' parameter"),
    ],
)
def test_bad_options_are_refused(options, match):
    with pytest.raises(InvalidInputError, match=match):
        BenchmarkAudit(**options)


def _user_store(path):
    """'rich': long contexts, 3 generators, 2 annotators, typed spans, 3 domains; 'thin': none."""
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for i in range(12):
        eid = f"rich/{i}"
        examples.append(
            Example(
                example_id=eid, dataset="rich", task="rag_qa", context="c" * 6000,
                meta={"domain": ["law", "news", "health"][i % 3]},
            )
        )  # fmt: skip
        for model in ("a", "b", "c"):
            rid = f"{eid}/{model}"
            responses.append(Response(response_id=rid, example_id=eid, model=model, text="t"))
            kind = "Conflict" if i % 2 else "Baseless"
            raw = json.dumps([{"label_type": kind}]) if i % 3 else "[]"
            labels.append(
                Label(response_id=rid, labeler="human", hallucinated=bool(i % 3), raw=raw)
            )
            for annotator in ("human:x", "human:y"):
                labels.append(Label(response_id=rid, labeler=annotator, hallucinated=bool(i % 3)))
    examples.append(Example(example_id="thin/0", dataset="thin", task="qa", context="short"))
    for k in range(4):
        rid = f"thin/0/{k}"
        responses.append(Response(response_id=rid, example_id="thin/0", model="m", text="t"))
        if k == 0:
            labels.append(Label(response_id=rid, labeler="human", hallucinated=True))
        labels.append(Label(response_id=rid, labeler="rouge_l", hallucinated=False, score=0.1))
        scores.append(Score(response_id=rid, detector="recorded:judge", value=0.0))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store


def test_user_datasets_are_marked_from_measurements(tmp_path):
    data = RunData(_user_store(tmp_path))
    result = BenchmarkAudit().run(data)
    table = result.table("desiderata")
    assert table.groupby("dataset").size().to_dict() == {"rich": 7, "thin": 7}
    status = table.set_index(["dataset", "desideratum"])["status"]
    assert [status[("rich", d)] for d in DESIDERATA] == ["unknown"] + ["yes"] * 6
    assert [status[("thin", d)] for d in DESIDERATA] == [
        "unknown", "partial", "partial", "partial", "no", "no", "unknown",
    ]  # fmt: skip
    evidence = table.set_index(["dataset", "desideratum"])["evidence"]
    assert "rouge_l, recorded:judge" in evidence[("thin", "realistic training-label noise")]
    assert "25%" in evidence[("thin", "human-verified test labels")]
    assert "Baseless, Conflict" in evidence[("rich", "faithfulness-type coverage")]
    shorter = BenchmarkAudit(long_context=7000, min_generators=4).run(data).table("desiderata")
    shorter = shorter.set_index(["dataset", "desideratum"])["status"]
    assert shorter[("rich", "RAG / long context")] == "partial"
    assert shorter[("rich", "several generators")] == "partial"
    assert result.finding.startswith("None of the 2 datasets meets all seven desiderata.")
    assert "The closest is rich: 6 of 7; not fully: organic generations." in result.finding


@pytest.fixture(scope="module")
def shipped(tmp_path_factory, data_dir):
    store = RunStore(tmp_path_factory.mktemp("audit"))
    for name in ("ragtruth", "faithbench", "halueval_general"):
        ingest(store, datasets.create(name, data_dir=data_dir))
    return store, BenchmarkAudit().run(RunData(store))


def test_shipped_datasets(shipped):
    store, result = shipped
    status = result.table("desiderata").set_index(["dataset", "desideratum"])["status"]
    expected = {
        "ragtruth": ["yes", "yes", "no", "partial", "yes", "yes", "yes"],
        "faithbench": ["yes", "yes", "yes", "partial", "yes", "yes", "unknown"],
        "halueval_general": ["yes", "yes", "no", "no", "no", "no", "unknown"],
    }
    for ds, marks in expected.items():
        assert [status[(ds, d)] for d in DESIDERATA] == marks, ds
    measured = result.table("measurements").set_index("dataset")
    assert measured.loc["faithbench", "n_annotators"] == 14
    assert measured.loc["ragtruth", "n_generators"] == 6
    assert measured.loc["ragtruth", "hallucination_types"] == (
        "Evident Baseless Info, Evident Conflict, Subtle Baseless Info, Subtle Conflict"
    )
    assert measured.loc["faithbench", "hallucination_types"] == (
        "Unwanted.Extrinsic, Unwanted.Intrinsic"
    )
    assert "The closest are faithbench and ragtruth (5 of 7 each)." in result.finding
    assert "The most common gap is RAG / long context (3 of 3 datasets)." in result.finding
    assert result.figures[0].png.startswith(b"\x89PNG")
    save_result(store, result)
