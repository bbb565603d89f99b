"""The lexical labelers' columnar path (``label_batch``) against their record path, on real data.

Each labeler runs twice on the same run: as it is (the label stage hands it
Arrow columns) and through the base class's per-record ``label_batch`` (records
in, records out); the stored labels must be equal, row for row. The runs hold
TruthfulQA answers (references) and FaithDial responses (context), plus toy
rows with no words, no reference and no context.
"""

from __future__ import annotations

import math

import pytest

from paths_compared import run_holding, stored_rows, through_base
from realitycheck.datasets.faithdial import FaithDial
from realitycheck.datasets.truthfulqa import TruthfulQA
from realitycheck.labelers import Labeler, labelers
from realitycheck.pipeline import label
from realitycheck.records import Example, Response
from realitycheck.store import RunStore

_TOY_TEXTS = ["", "?!", "The the THE", "Ünïcode wörds 42", "an answer", "no"]


def _toy() -> tuple[list[Example], list[Response]]:
    examples = [
        Example(example_id="toy/0", dataset="toy", task="qa"),
        Example(example_id="toy/1", dataset="toy", task="qa", references=("...",), context="!!"),
        Example(
            example_id="toy/2",
            dataset="toy",
            task="qa",
            references=("The answer", "no", "an  Answer."),
            context="An answer, with 42 words.",
        ),
    ]
    responses = [
        Response(response_id=f"toy/r{i}", example_id=f"toy/{i % 3}", model="m", text=t)
        for i, t in enumerate(_TOY_TEXTS * 3)
    ]
    return examples, responses


@pytest.fixture(scope="module")
def records(data_dir):
    """Every 10th TruthfulQA answer, every FaithDial response, and the toy rows."""
    truthfulqa = TruthfulQA(data_dir=data_dir).load()
    faithdial = FaithDial(data_dir=data_dir).load()
    examples, responses = _toy()
    examples += truthfulqa.examples + faithdial.examples
    responses += truthfulqa.responses[::10] + faithdial.responses
    return examples, responses


def _run(path, records) -> RunStore:
    return run_holding(path, *records)


def _per_record(component: Labeler) -> Labeler:
    """The same labeler (same key and spec), through the base class's per-record path."""
    return through_base(component, Labeler, "label_batch")


def _stored(store: RunStore) -> list[dict]:
    return stored_rows(store, "labels")


@pytest.mark.parametrize(
    "key",
    ["token_f1", "exact_match", "bleu", "knowledge_f1", "token_f1[threshold=0.2]"],
)
def test_columns_store_what_records_store(tmp_path, records, key):
    columnar = labelers.create_from_key(key)
    assert type(columnar).label_batch is not Labeler.label_batch
    a, b = _run(tmp_path / "a", records), _run(tmp_path / "b", records)
    got = label(a, [columnar], batch_size=1000)
    want = label(b, [_per_record(columnar)], batch_size=1000)
    assert got.computed == want.computed and got.missing == want.missing
    assert got.missing_why == want.missing_why and got.skipped == want.skipped
    rows, expected = _stored(a), _stored(b)
    assert len(rows) > 1000
    assert rows == expected
    decided = [r for r in rows if r["hallucinated"] is not None]
    assert decided and all(-1e-12 <= r["score"] <= 1.0 + 1e-12 for r in decided)  # BLEU: 100 + ulp
    assert any(r["error"] for r in rows)


def test_token_f1_columns_equal_an_independent_squad_f1(tmp_path):
    """Against SQuAD's F1 written out here (normalise, split, shared-token counts)."""
    import re
    import string
    from collections import Counter

    def normalize(text):
        text = "".join(c for c in text.lower() if c not in set(string.punctuation))
        return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())

    def f1(prediction, reference):
        p, r = normalize(prediction).split(), normalize(reference).split()
        common = sum((Counter(p) & Counter(r)).values())
        if common == 0:
            return 0.0
        precision, recall = common / len(p), common / len(r)
        return 2 * precision * recall / (precision + recall)

    examples, responses = _toy()
    store = _run(tmp_path / "run", (examples, responses))
    label(store, [labelers.create_from_key("token_f1")])
    refs = {e.example_id: e.references for e in examples}
    texts = {r.response_id: (r.text, r.example_id) for r in responses}
    for row in _stored(store):
        text, example_id = texts[row["response_id"]]
        if row["hallucinated"] is None:
            assert not normalize(text) or not any(normalize(r) for r in refs[example_id])
            continue
        best = max(f1(text, r) for r in refs[example_id])
        assert math.isclose(1.0 - row["score"], best, abs_tol=1e-12)
