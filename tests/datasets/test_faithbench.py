import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from realitycheck.datasets import datasets
from realitycheck.datasets.faithbench import (
    JUDGES,
    RECORDED,
    FaithBench,
    annotation_severity,
    majority_severity,
    worst_severity,
)
from realitycheck.errors import InvalidInputError


def _labels(bundle, labeler):
    return {lab.response_id: lab for lab in bundle.labels if lab.labeler == labeler}


def test_counts(load):
    bundle = load("faithbench")
    assert len(bundle.examples) == 75
    assert len(bundle.responses) == 750
    assert len({r.response_id for r in bundle.responses}) == 750
    assert set(Counter(r.model for r in bundle.responses).values()) == {75}
    assert len({r.model for r in bundle.responses}) == 10
    for key in ("human", "human[protocol=majority]", "human[protocol=worst]"):
        assert len(_labels(bundle, key)) == 750
    assert Counter(s.detector for s in bundle.scores) == {f"recorded:{n}": 750 for n in RECORDED}


def test_human_is_the_chosen_protocol(load):
    for protocol in ("majority", "worst"):
        bundle = load(f"faithbench[protocol={protocol}]")
        plain = _labels(bundle, "human")
        chosen = _labels(bundle, f"human[protocol={protocol}]")
        assert {k: (v.hallucinated, v.category) for k, v in plain.items()} == {
            k: (v.hallucinated, v.category) for k, v in chosen.items()
        }


def test_worst_protocol_matches_faithbench_csv(load, data_dir):
    """The worst label agrees with the published worst-label except on two batch-10 samples."""
    bundle = load("faithbench")
    with (data_dir / "faithbench" / "FaithBench.csv").open(encoding="utf-8", newline="") as fh:
        published = {(r["source"], r["summary"]): r for r in csv.DictReader(fh)}
    assert len(published) == 800  # the CSV also has batch 13, not in the release
    source = {e.example_id: e.context for e in bundle.examples}
    worst = _labels(bundle, "human[protocol=worst]")
    differ = []
    for response in bundle.responses:
        row = published[(source[response.example_id], response.text)]
        assert row["LLM"] == response.model
        if row["worst-label"] != worst[response.response_id].category:
            differ.append(response.meta["faithbench_id"])
    assert sorted(differ) == ["10-2", "10-7"]


def test_majority_counts(load):
    majority = _labels(load("faithbench"), "human[protocol=majority]").values()
    assert Counter(lab.category for lab in majority) == {
        "Unwanted": 359,
        "Consistent": 257,
        "Benign": 76,
        "Questionable": 58,
    }
    assert {lab.category for lab in majority if lab.hallucinated is None} == {
        "Benign",
        "Questionable",
    }


def test_recorded_scores_are_flipped(load):
    bundle = load("faithbench")
    first = bundle.responses[0]
    assert first.meta["faithbench_id"] == "1-0"
    scores = {s.detector: s for s in bundle.scores if s.response_id == first.response_id}
    assert scores["recorded:hhem-2.1"].value == pytest.approx(1 - 0.52694)
    assert scores["recorded:hhemv1"].value == pytest.approx(1 - 0.9995)
    assert _labels(bundle, "recorded:gpt_4o")[first.response_id].hallucinated is False
    missing = [s for s in bundle.scores if s.value is None]
    assert len(missing) == 2
    assert {s.detector for s in missing} == {"recorded:true_nli"}
    assert all("true_nli" in s.error for s in missing)
    assert json.loads(missing[0].spec)["params"] == {"source": "true_nli"}


def test_annotators_are_named_labelers(load):
    bundle = load("faithbench")
    keys = {lab.labeler for lab in bundle.labels if lab.labeler.startswith("human:")}
    assert {"human:forrest", "human:renyi-qu", "human:miaoran"} <= keys
    per_response = Counter(
        lab.response_id for lab in bundle.labels if lab.labeler.startswith("human:")
    )
    assert set(per_response.values()) <= {2, 3, 4, 5}


# ---- the protocols, rule by rule, on a hand-made batch --------------------------------------


def _ann(annotator, *tags):
    return {"annotator_id": f"id-{annotator}", "annotator_name": annotator, "label": list(tags)}


TINY = [
    # (annotations, majority (hallucinated, category), worst (hallucinated, category))
    ([], (False, "Consistent"), (False, "Consistent")),
    ([_ann("A", "Unwanted"), _ann("B", "Unwanted")], (True, "Unwanted"), (True, "Unwanted")),
    ([_ann("A", "Benign"), _ann("B", "Benign")], (None, "Benign"), (False, "Benign")),
    (
        [_ann("A", "Questionable"), _ann("B", "Questionable"), _ann("C", "Unwanted")],
        (None, "Questionable"),
        (True, "Unwanted"),
    ),
    # a three-way tie goes to the most severe label
    ([_ann("A", "Unwanted"), _ann("B", "Benign")], (True, "Unwanted"), (True, "Unwanted")),
    # an annotator's most severe annotation counts
    (
        [
            _ann("A", "Benign"),
            _ann("A", "Unwanted", "Unwanted.Intrinsic"),
            _ann("B", "Benign"),
            _ann("C", "Benign"),
        ],
        (None, "Benign"),
        (True, "Unwanted"),
    ),
    # top-level tags decide; a lone sub-tag counts through its parent; no tag adds nothing
    (
        [
            _ann("A", "Questionable", "Unwanted.Intrinsic"),
            _ann("B", "Unwanted.Extrinsic"),
            _ann("C"),
        ],
        (True, "Unwanted"),
        (True, "Unwanted"),
    ),
    ([_ann("A", "Questionable")], (False, "Consistent"), (True, "Questionable")),
]


@pytest.fixture
def tiny_root(tmp_path: Path) -> Path:
    release = tmp_path / "faithbench" / "release"
    release.mkdir(parents=True)
    for rel in FaithBench.files:
        (tmp_path / rel).write_text(json.dumps({"samples": []}), encoding="utf-8")
    samples = []
    for i, (annotations, _, _) in enumerate(TINY):
        samples.append(
            {
                "sample_id": i,
                "source": f"article {i // 4}",
                "summary": f"summary {i}",
                "annotations": annotations,
                "metadata": {
                    "summarizer": f"org/model-{i % 4}",
                    "hhem-2.1": 0.8,
                    "gpt_4o": 0,
                    "true_nli": None,
                    "trueteacher": "n/a",
                },
            }
        )
    (release / "batch_1.json").write_text(json.dumps({"samples": samples}), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("protocol", ["majority", "worst"])
def test_protocol_rules_on_a_tiny_batch(tiny_root, protocol):
    bundle = FaithBench(data_dir=tiny_root, protocol=protocol).load()
    assert len(bundle.examples) == 2
    ids = [r.response_id for r in bundle.responses]
    assert ids[0] == "faithbench/1/0/org/model-0"
    for name, column in (("majority", 1), ("worst", 2)):
        got = _labels(bundle, f"human[protocol={name}]")
        expected = [row[column] for row in TINY]
        assert [(got[i].hallucinated, got[i].category) for i in ids] == expected
    plain = _labels(bundle, "human")
    chosen = _labels(bundle, f"human[protocol={protocol}]")
    assert [plain[i].hallucinated for i in ids] == [chosen[i].hallucinated for i in ids]


@pytest.mark.parametrize(
    ("protocol", "benign", "questionable"), [("majority", None, None), ("worst", False, True)]
)
def test_annotator_labels_follow_the_protocol_mapping(tiny_root, protocol, benign, questionable):
    bundle = FaithBench(data_dir=tiny_root, protocol=protocol).load()
    ids = [r.response_id for r in bundle.responses]
    a, c = _labels(bundle, "human:a"), _labels(bundle, "human:c")
    assert len(c) == len(TINY)  # C marked three summaries but counts on all
    assert (c[ids[0]].hallucinated, c[ids[0]].category) == (False, "Consistent")
    assert (a[ids[2]].hallucinated, a[ids[2]].category) == (benign, "Benign")
    assert (a[ids[7]].hallucinated, a[ids[7]].category) == (questionable, "Questionable")
    assert (a[ids[5]].hallucinated, a[ids[5]].category) == (True, "Unwanted")
    assert len(json.loads(a[ids[5]].raw)) == 2


def test_recorded_conversion_on_a_tiny_batch(tiny_root):
    bundle = FaithBench(data_dir=tiny_root).load()
    first = bundle.responses[0].response_id
    scores = {s.detector: s for s in bundle.scores if s.response_id == first}
    assert scores["recorded:hhem-2.1"].value == pytest.approx(0.2)
    assert _labels(bundle, "recorded:gpt_4o")[first].hallucinated is True
    for name in ("true_nli", "trueteacher", "hhemv1"):  # None, text, absent
        assert scores[f"recorded:{name}"].value is None
        assert name in scores[f"recorded:{name}"].error
    assert any("1 annotation(s) carry no label tag" in note for note in bundle.notes)
    assert any("1 - value" in note for note in bundle.notes)


def test_a_sample_without_a_summary_is_named(tiny_root):
    path = tiny_root / "faithbench" / "release" / "batch_1.json"
    data = json.loads(path.read_text())
    del data["samples"][3]["summary"]
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"batch_1\.json.*'samples\[3\]\.summary'"):
        FaithBench(data_dir=tiny_root).load()


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["Unwanted", "Unwanted.Intrinsic"], 3),
        (["Benign"], 1),
        (["Questionable", "Benign"], 2),
        (["Benign", "Unwanted.Extrinsic"], 1),
        (["Unwanted.Extrinsic"], 3),
        ([], None),
        (["Something else"], None),
    ],
)
def test_annotation_severity(tags, expected):
    assert annotation_severity(tags) == expected


@pytest.mark.parametrize(
    ("severities", "majority", "worst"),
    [
        ([0, 0, 3], 0, 3),
        ([3, 3, 0], 3, 3),
        ([1, 0], 1, 1),
        ([2, 1, 0], 2, 2),
        ([1, 1, 2, 2, 0], 2, 2),
        ([0], 0, 0),
    ],
)
def test_majority_and_worst(severities, majority, worst):
    assert majority_severity(severities) == majority
    assert worst_severity(severities) == worst


def test_majority_of_nobody_is_an_error():
    with pytest.raises(InvalidInputError, match="at least one annotator"):
        majority_severity([])


def test_bad_protocol():
    with pytest.raises(InvalidInputError, match="The 'protocol' parameter of faithbench"):
        datasets.create("faithbench", protocol="mean")


def test_recorded_judges_are_labels_too(load, data_dir):
    """Each GPT judge's 1/0 verdict is a label of every summary: 0 (inconsistent) = hallucinated."""
    bundle = load("faithbench")
    expected = {"gpt-3.5-turbo": 188, "gpt-4-turbo": 138, "gpt_4o": 98}  # verdicts of 0
    for name in JUDGES:
        labels = _labels(bundle, f"recorded:{name}")
        assert len(labels) == 750
        assert sum(lab.hallucinated is True for lab in labels.values()) == expected[name]
        assert all(lab.hallucinated is not None and not lab.error for lab in labels.values())
        assert {lab.category for lab in labels.values()} == {"consistent", "inconsistent"}
        assert all(lab.score == float(lab.hallucinated) for lab in labels.values())
        assert not [s for s in bundle.scores if s.detector == f"recorded:{name}"]
    humans = {k for lab in bundle.labels if not (k := lab.labeler).startswith("recorded:")}
    assert {"human[protocol=majority]", "human[protocol=worst]"} <= humans
