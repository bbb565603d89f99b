"""The stages read the run as Arrow columns: same records, same choices, built only when needed."""

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from realitycheck import (
    Example,
    InvalidInputError,
    Label,
    Labeler,
    Response,
    RunStore,
    label,
)
from realitycheck.records import (
    records_from_columns,
    records_from_rows,
    records_to_columns,
    records_to_rows,
)


def _examples(n):
    return [
        Example(
            example_id=f"e{i}",
            dataset="toy",
            task="qa",
            question=f"q{i}",
            context="" if i % 3 == 0 else f"context {i}",
            references=() if i % 4 == 0 else (f"ref {i}", "other"),
            meta={"i": i, "nested": {"a": [1, 2]}} if i % 2 else {},
        )
        for i in range(n)
    ]


def _responses(n, per=3):
    return [
        Response(
            response_id=f"e{i}/{j}",
            example_id=f"e{i}",
            model="m",
            text=f"answer {i} {j}",
            samples=("s1", "s2") if j else (),
            features={"x": float(j)} if j == 1 else {},
            meta={"line": i * per + j},
        )
        for i in range(n)
        for j in range(per)
    ]


def test_records_from_columns_equal_records_from_rows():
    for records, cls in ((_examples(9), Example), (_responses(4), Response)):
        rows = records_to_rows(records)
        columns = {name: [row[name] for row in rows] for name in rows[0]}
        assert records_from_columns(cls, columns) == records_from_rows(cls, rows) == records


def test_records_to_columns_equal_records_to_rows_and_store_the_same_table(tmp_path):
    labels = [
        Label(response_id="r1", labeler="a", hallucinated=True, score=0.25, raw="x"),
        Label(response_id="r2", labeler="a", hallucinated=None, error="e", retryable=True),
    ]
    for records in (_examples(9), _responses(4), labels):
        rows = records_to_rows(records)
        assert records_to_columns(records) == {n: [row[n] for row in rows] for n in rows[0]}
        store = RunStore(tmp_path / type(records[0]).table)
        store.append(records)
        assert store.read(type(records[0])) == records


def test_arrow_reads_the_rows_and_order_of_frame_with_parts_and_old_files(tmp_path):
    store = RunStore(tmp_path)
    first = [Label(response_id=f"r{i}", labeler="a", hallucinated=bool(i % 2)) for i in range(6)]
    store.append(first)
    store.compact("labels")
    # A part that replaces two rows (the newest wins) and adds one.
    store.append(
        [
            Label(response_id="r1", labeler="a", hallucinated=None, error="boom", retryable=True),
            Label(response_id="r4", labeler="a", hallucinated=True),
            Label(response_id="r9", labeler="b", hallucinated=False),
        ]
    )
    # A part written before ``retryable`` existed: it reads as the default, False.
    old = pa.table({"response_id": ["r2"], "labeler": ["a"], "hallucinated": [True]})
    pq.write_table(old, tmp_path / "labels.parts" / "99999999T999999999999-old.parquet")
    got = store.arrow("labels")
    assert got.column_names == list(store.frame("labels").columns)
    records = records_from_columns(Label, got.to_pydict())
    assert records == store.read(Label)
    assert [r.response_id for r in records] == ["r0", "r3", "r5", "r1", "r4", "r9", "r2"]
    assert [r.retryable for r in records if r.response_id in ("r1", "r2")] == [True, False]
    assert store.arrow("labels", columns=["error"]).column_names == [
        "response_id",
        "labeler",
        "error",
    ]
    assert store.arrow("scores").num_rows == 0


@dataclass(frozen=True, kw_only=True)
class _Spy(Labeler):
    """Labels every response correct, recording what it was given."""

    needs = frozenset({"context"})

    def label(self, responses, examples, *, cache=None):
        mine = {r.example_id: examples[r.example_id] for r in responses}
        SEEN.append(([r.response_id for r in responses], mine, sorted(examples), len(examples)))
        return [self._label(r, hallucinated=False) for r in responses]


_Spy.name = "spy"
SEEN: list = []


class _Bundle:
    def __init__(self, examples, responses):
        self.examples, self.responses, self.labels, self.scores = examples, responses, [], []


def test_a_stage_gives_components_the_records_the_old_path_gave(tmp_path):
    store = RunStore(tmp_path)
    examples, responses = _examples(12), _responses(12)
    store.append(examples)
    store.append(responses)
    SEEN.clear()
    report = label(store, [_Spy()], batch_size=5)
    eligible = [r for r in responses if int(r.example_id[1:]) % 3]
    assert report.computed["spy"] == len(eligible)
    assert (
        report.skipped["spy"]
        == f"{len(responses) - len(eligible)} responses without the context it needs"
    )
    assert [rid for ids, *_ in SEEN for rid in ids] == [r.response_id for r in eligible]
    assert [len(ids) for ids, *_ in SEEN] == [5, 5, 5, 5, 4]
    by_id = {e.example_id: e for e in examples}
    for _, mine, every, n in SEEN:
        assert mine == {k: by_id[k] for k in mine}
        assert every == sorted(by_id) and n == len(by_id)
        assert "e3" not in mine and "e3" in every
    stored = {lab.response_id for lab in store.read(Label)}
    assert stored == {r.response_id for r in eligible}
    SEEN.clear()
    again = label(store, [_Spy()])
    assert SEEN == [] and again.reused["spy"] == len(eligible)


def test_a_stage_builds_only_the_examples_its_batch_needs(tmp_path, monkeypatch):
    from realitycheck.pipeline import _stages

    store = RunStore(tmp_path)
    store.append(_examples(12))
    store.append(_responses(12))
    label(store, [_Spy()], batch_size=3)
    built: list = []
    real = _stages._Examples.build

    def counting(self, ids):
        ids = list(ids)
        built.append(ids)
        return real(self, ids)

    monkeypatch.setattr(_stages._Examples, "build", counting)
    store.append([Response(response_id="e1/new", example_id="e1", model="m", text="late")])
    label(store, [_Spy()])
    assert built == [["e1"]]


def test_responses_of_examples_the_run_lacks_are_refused_before_any_work(tmp_path):
    store = RunStore(tmp_path)
    store.append(_examples(2))
    store.append(
        _responses(2) + [Response(response_id="x", example_id="gone", model="m", text="t")]
    )
    SEEN.clear()
    with pytest.raises(InvalidInputError, match=r"1 responses point at examples.*'gone'"):
        label(store, [_Spy()])
    assert SEEN == []
    # Naming the dataset leaves the stray response out, as before.
    assert label(store, [_Spy()], datasets=["toy"]).computed["spy"] == 3  # e1's three
