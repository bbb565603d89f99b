"""The grounding detectors' columnar path (``score_batch``) against their record path, on real data.

Each detector runs twice on the same run: as it is (the detect stage hands it
Arrow columns) and through the base class's per-record ``score_batch``; the
stored scores must be equal, row for row. The run holds RAGTruth and FaithDial
responses (with their sources) and toy rows without words, numbers or context.
"""

from __future__ import annotations

import pytest

from paths_compared import run_holding, stored_rows, through_base
from realitycheck.datasets.faithdial import FaithDial
from realitycheck.datasets.ragtruth import RagTruth
from realitycheck.detectors import Detector, detectors
from realitycheck.pipeline import detect
from realitycheck.records import Example, Response
from realitycheck.store import RunStore

_TOY_TEXTS = ["", "the of and", "It cost 1,000 dollars in 2019.", "Paris is large", "5.0 or 5"]


@pytest.fixture(scope="module")
def records(data_dir):
    ragtruth = RagTruth(data_dir=data_dir).load()
    faithdial = FaithDial(data_dir=data_dir).load()
    examples = [
        Example(example_id="toy/0", dataset="toy", task="qa"),
        Example(example_id="toy/1", dataset="toy", task="qa", context="  \n"),
        Example(example_id="toy/2", dataset="toy", task="qa", context="Paris cost 1000 in 2019."),
    ]
    responses = [
        Response(response_id=f"toy/r{i}", example_id=f"toy/{i % 3}", model="m", text=t)
        for i, t in enumerate(_TOY_TEXTS * 3)
    ]
    return (
        examples + ragtruth.examples + faithdial.examples,
        responses + ragtruth.responses + faithdial.responses,
    )


def _run(path, records) -> RunStore:
    return run_holding(path, *records)


def _per_record(component: Detector) -> Detector:
    """The same detector (same key and spec), through the base class's per-record path."""
    return through_base(component, Detector, "score_batch")


def _stored(store: RunStore) -> list[dict]:
    return stored_rows(store, "scores")


@pytest.mark.parametrize(
    "key",
    ["source_overlap", "source_overlap[n=2]", "novel_numbers", "novel_numbers[measure=share]"],
)
def test_columns_store_what_records_store(tmp_path, records, key):
    columnar = detectors.create_from_key(key)
    assert type(columnar).score_batch is not Detector.score_batch
    a, b = _run(tmp_path / "a", records), _run(tmp_path / "b", records)
    got = detect(a, [columnar], batch_size=1500)
    want = detect(b, [_per_record(columnar)], batch_size=1500)
    assert got.computed == want.computed and got.missing == want.missing
    assert got.missing_why == want.missing_why and got.skipped == want.skipped
    rows, expected = _stored(a), _stored(b)
    assert len(rows) > 5000
    assert rows == expected
    if key.startswith("source_overlap"):  # a response without a content word: no value
        assert any(r["value"] is None and r["error"] for r in rows)
    assert any(r["value"] for r in rows)


def test_novel_numbers_on_toy_rows(tmp_path, records):
    store = _run(tmp_path / "run", (records[0][:3], records[1][:15]))
    detect(store, [detectors.create_from_key("novel_numbers[measure=share]")])
    by_id = {r["response_id"]: r for r in _stored(store)}
    # toy/r2 (example toy/2): 1,000 and 2019 both in the context -> 0 novel numbers
    assert by_id["toy/r2"]["value"] == 0.0
    # toy/r7 (example toy/1, a blank context): the stage leaves it out
    assert "toy/r7" not in by_id
    # toy/r14: "5.0 or 5" against toy/2's context (no 5) -> both novel, share 1
    assert by_id["toy/r14"]["value"] == 1.0
