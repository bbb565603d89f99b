"""FaithDial's data audit: counts from the data README, both label protocols, messy cells."""

from __future__ import annotations

import csv
import dataclasses
from collections import Counter

import pytest

from realitycheck.datasets import datasets
from realitycheck.datasets.faithdial import MODELS, begin_verdict, vrm_verdict
from realitycheck.errors import InvalidInputError


def test_counts_match_the_data_readme(load, data_dir):
    bundle = load("faithdial")
    rows = {
        model: sum(
            len(list(csv.DictReader((data_dir / f).open(newline="", encoding="utf-8"))))
            for f in files
        )
        for model, files in MODELS.items()
    }
    # data README: 3,196 rows — CTRL 598, DoHA 600, GPT2 600, gold 1,398
    assert rows == {"ctrl": 598, "doha": 600, "gpt2": 600, "gold": 1398}
    by_model = Counter(r.model for r in bundle.responses)
    # 789 blank rows in gold/topical.csv and one DoHA turn without text are left out
    assert by_model == {"ctrl": 598, "doha": 599, "gpt2": 600, "gold": 609}
    assert any("topical.csv 789" in n and "doha_processed_cmu.csv 1" in n for n in bundle.notes)
    assert {e.task for e in bundle.examples} == {"dialogue"}
    assert {e.meta["source"] for e in bundle.examples} == {"cmu_dog", "topicalchat", "wow"}


def test_both_protocols_and_human_as_the_chosen_one(load):
    bundle = load("faithdial")
    labels: dict[str, dict[str, object]] = {}
    for label in bundle.labels:
        labels.setdefault(label.labeler, {})[label.response_id] = label.hallucinated
    assert set(labels) == {"human", "human[protocol=begin]", "human[protocol=vrm]"}
    assert labels["human"] == labels["human[protocol=begin]"]
    begin = Counter(labels["human[protocol=begin]"].values())
    # README: hallucination 1,019 + Hallucination 255 + hallucinated 1, entailment,hallucination
    # 239, Partial Hallucination 128 -> 1,642; generic 189 and 3 empty cells -> no label
    assert begin == {True: 1642, False: 572, None: 192}
    vrm = Counter(labels["human[protocol=vrm]"].values())
    assert vrm[None] == 8 and vrm[True] + vrm[False] == 2398
    vrm_bundle = load("faithdial[protocol=vrm]")
    assert {x.response_id: x.hallucinated for x in vrm_bundle.labels if x.labeler == "human"} == (
        labels["human[protocol=vrm]"]
    )


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("hallucination", (True, "hallucination")),
        ("Hallucination", (True, "hallucination")),
        ("hallucinated", (True, "hallucination")),
        ("Partial Hallucination", (True, "partial hallucination")),
        ("entailment,hallucination", (True, "entailment+hallucination")),
        ("entailment,uncooperative", (False, "entailment+uncooperative")),
        ("entailment. uncooperative", (False, "entailment+uncooperative")),
        ("entailmentt,uncooperative", (False, "entailment+uncooperative")),
        ("Uncooperative", (False, "uncooperative")),
        ("Generic", (None, "generic")),
        ("  ", (None, "")),
    ],
)
def test_begin_cells(cell, expected):
    assert begin_verdict(cell) == expected


def test_generic_follows_its_parameter_and_unknown_begin_labels_are_refused():
    assert begin_verdict("generic", generic="hallucinated") == (True, "generic")
    assert begin_verdict("generic", generic="faithful") == (False, "generic")
    with pytest.raises(ValueError, match="'contradiction' is not a BEGIN label"):
        begin_verdict("entailment,contradiction")


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("disclosure", (True, "disclosure")),
        ("Disclosure,Ack.", (True, "acknowledgment+disclosure")),
        (
            "confirmation,\nacknowledgment,\ndisclosure",
            (True, "acknowledgment+confirmation+disclosure"),
        ),
        ("disclsoure,ack.", (True, "acknowledgment+disclosure")),  # a typo is still disclosure
        ("edification disclosure", (True, "disclosure+edification")),  # space-separated
        ("e,d,i,f,i,c,a,t,i,o,n", (False, "edification")),  # spelt letter by letter
        ("edificaiton,question", (False, "edification+question")),
        ("advice,ack.", (False, "acknowledgment+advisement")),
        ("", (None, "")),
    ],
)
def test_vrm_cells(cell, expected):
    assert vrm_verdict(cell) == expected


def _copy_tree(data_dir, tmp_path):
    for files in MODELS.values():
        for name in files:
            target = tmp_path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((data_dir / name).read_bytes())
    return tmp_path


def test_bad_cells_and_headers_name_the_file_line_and_field(data_dir, tmp_path):
    root = _copy_tree(data_dir, tmp_path)
    gold = root / "faithdial/gold/wow.csv"
    lines = gold.read_text(encoding="utf-8").splitlines(keepends=True)
    gold.write_text(lines[0] + '"k","h","a reply",Contradiction,edification\n', encoding="utf-8")
    component = dataclasses.replace(
        datasets.create_from_key("faithdial[models=gold]"), data_dir=root
    )
    with pytest.raises(InvalidInputError) as err:
        component.load()
    message = str(err.value)
    assert "gold/wow.csv" in message and "line 2" in message and "BEGIN" in message
    assert "'contradiction' is not a BEGIN label" in message
    gold.write_text("evidence,history,reply,BEGIN,VRM\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="header must be"):
        component.load()
