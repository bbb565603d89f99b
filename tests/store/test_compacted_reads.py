"""A compacted table file is read as it is: compaction left one row per key."""

from __future__ import annotations

from realitycheck.records import Score
from realitycheck.store import RunStore, _store


def _rows(table):
    return list(zip(*(table.column(c).to_pylist() for c in ("response_id", "value")), strict=True))


def test_a_compacted_table_alone_is_read_without_a_second_deduplication(tmp_path, monkeypatch):
    store = RunStore(tmp_path)
    store.append([Score(response_id=f"r{i}", detector="d", value=float(i)) for i in range(5)])
    store.append([Score(response_id="r1", detector="d", value=10.0)])  # replaces r1
    store.compact("scores")
    frame = store.frame("scores")  # pandas drop_duplicates(keep="last"): the reference
    expected = list(zip(frame["response_id"], frame["value"], strict=True))

    def no_second_pass(table, key):
        raise AssertionError("deduplicated again")

    monkeypatch.setattr(_store, "_last_of_each_key", no_second_pass)
    assert sorted(_rows(store.arrow("scores"))) == sorted(expected)
    assert len(expected) == 5 and ("r1", 10.0) in expected
    monkeypatch.undo()
    store.append([Score(response_id="r2", detector="d", value=20.0)])  # a part again: merged
    assert ("r2", 20.0) in _rows(store.arrow("scores"))
    assert store.arrow("scores").num_rows == 5
