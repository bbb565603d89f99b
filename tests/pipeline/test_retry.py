"""Resumed runs retry labels and scores whose error may pass, and only those.

A label or score with a ``retryable`` error (a backend failure, a timeout) is
computed again by the next run of its stage; one with a permanent error (no
reference, empty text) stays unless ``retry_errors=True``. The new record
replaces the old one: the run keeps one row per response and component key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from realitycheck import Detector, Label, Labeler, RunStore, Score, detect, ingest, label
from realitycheck.cli import main
from realitycheck.detectors import detectors
from realitycheck.errors import InvalidInputError

# What the throwaway components below do, set by each test: response ids to fail
# with a retryable error, ids to fail with a permanent one, and the ids asked.
RETRYABLE: set[str] = set()
PERMANENT: set[str] = set()
ASKED: list[str] = []


@pytest.fixture(autouse=True)
def _clear():
    for state in (RETRYABLE, PERMANENT, ASKED):
        state.clear()
    yield
    for state in (RETRYABLE, PERMANENT, ASKED):
        state.clear()


@dataclass(frozen=True, kw_only=True)
class Flaky(Detector):
    """Scores the text length; fails as RETRYABLE and PERMANENT say."""

    def score(self, responses, run):
        out = []
        for r in responses:
            ASKED.append(r.response_id)
            if r.response_id in RETRYABLE:
                out.append(self._score(r, None, error="HTTP 503", retryable=True))
            elif r.response_id in PERMANENT:
                out.append(self._score(r, None, error="the response has no samples"))
            else:
                out.append(self._score(r, float(len(r.text))))
        return out


@dataclass(frozen=True, kw_only=True)
class FlakyJudge(Labeler):
    """Calls long answers hallucinated; fails as RETRYABLE and PERMANENT say."""

    def label(self, responses, examples, *, cache=None):
        out = []
        for r in responses:
            ASKED.append(r.response_id)
            if r.response_id in RETRYABLE:
                out.append(self._label(r, None, error="judge timed out", retryable=True))
            elif r.response_id in PERMANENT:
                out.append(self._label(r, None, error="the example has no reference answer"))
            else:
                out.append(self._label(r, len(r.text) > 30, raw="ok"))
        return out


Flaky.name = "flaky"
FlakyJudge.name = "flaky_judge"

STAGES = [
    pytest.param(detect, Flaky, Score, "scores", "detector", id="detect"),
    pytest.param(label, FlakyJudge, Label, "labels", "labeler", id="label"),
]


def _mine(store, cls, column, key):
    return {r.response_id: r for r in store.read(cls) if getattr(r, column) == key}


@pytest.mark.parametrize(("stage", "component", "cls", "table", "column"), STAGES)
def test_a_rerun_retries_retryable_errors_and_keeps_permanent_ones(
    tmp_path, tiny, stage, component, cls, table, column
):
    store = RunStore(tmp_path)
    ingest(store, tiny)
    ids = sorted(r for (r,) in store.keys("responses", ["response_id"]))
    RETRYABLE.update(ids[:5])
    PERMANENT.update(ids[5:8])
    key = component().key
    first = stage(store, [component()], batch_size=16)
    assert (first.computed[key], first.retried[key]) == (80, 0)
    stored = _mine(store, cls, column, key)
    assert {rid for rid, r in stored.items() if r.retryable} == set(ids[:5])
    assert {rid for rid, r in stored.items() if r.error and not r.retryable} == set(ids[5:8])

    # The backend is back; the permanent causes are not gone (a plain rerun must not ask).
    RETRYABLE.clear()
    ASKED.clear()
    second = stage(store, [component()], batch_size=16)
    assert sorted(ASKED) == ids[:5]
    assert (second.computed[key], second.retried[key], second.reused[key]) == (5, 5, 75)
    assert store.read_manifest()["last_run"][key] == {
        "computed": 5,
        "missing": 0,
        "failed": 0,
        "unreadable": 0,
        "failed_before": 0,
        "reused": 75,
        "retried": 5,
    }
    rows = store.frame(table).query(f"{column} == @key")
    assert len(rows) == 80 and rows["response_id"].is_unique
    stored = _mine(store, cls, column, key)
    assert all(not stored[rid].error and not stored[rid].retryable for rid in ids[:5])
    assert all(stored[rid].error for rid in ids[5:8])

    ASKED.clear()
    third = stage(store, [component()])
    assert ASKED == [] and (third.computed[key], third.retried[key]) == (0, 0)
    assert store.read_manifest()["last_run"][key] == {
        "computed": 0,
        "missing": 0,
        "failed": 0,
        "unreadable": 0,
        "failed_before": 0,
        "reused": 80,
        "retried": 0,
    }

    # --retry-errors: the permanent errors are computed again too.
    PERMANENT.clear()
    forced = stage(store, [component()], retry_errors=True)
    assert sorted(ASKED) == ids[5:8]
    assert (forced.computed[key], forced.retried[key], forced.reused[key]) == (3, 3, 77)
    stored = _mine(store, cls, column, key)
    assert len(stored) == 80 and not any(r.error for r in stored.values())
    assert store.read_manifest()["last_run"][key]["retried"] == 3


def test_a_retry_that_fails_again_stays_retryable_and_is_counted_each_time(tmp_path, tiny):
    store = RunStore(tmp_path)
    ingest(store, tiny)
    ids = sorted(r for (r,) in store.keys("responses", ["response_id"]))
    RETRYABLE.update(ids[:2])
    detect(store, [Flaky()])
    again = detect(store, [Flaky()])
    assert (again.computed["flaky"], again.retried["flaky"]) == (2, 2)
    scores = _mine(store, Score, "detector", "flaky")
    assert len(store.frame("scores").query("detector == 'flaky'")) == 80
    assert all(scores[rid].retryable and scores[rid].value is None for rid in ids[:2])


def test_the_newest_row_of_a_key_wins_before_and_after_compaction(tmp_path):
    store = RunStore(tmp_path)
    old = Score(response_id="r1", detector="d", value=None, error="HTTP 503", retryable=True)
    other = Score(response_id="r2", detector="d", value=2.0)
    new = Score(response_id="r1", detector="d", value=1.0)
    store.append([old, other])
    store.append([new])
    assert len(list((tmp_path / "scores.parts").glob("*.parquet"))) == 2
    assert sorted(store.read(Score), key=lambda s: s.response_id) == [new, other]
    store.compact("scores")
    assert sorted(store.read(Score), key=lambda s: s.response_id) == [new, other]
    store.append([old])
    assert store.read(Score)[-1] == old  # a later error replaces an earlier value too


def test_a_run_written_before_retryable_existed_reads_its_errors_as_permanent(tmp_path, tiny):
    store = RunStore(tmp_path)
    ingest(store, tiny)
    ids = sorted(r for (r,) in store.keys("responses", ["response_id"]))
    old_rows = [
        {
            "response_id": rid,
            "detector": "flaky",
            "value": None if i < 3 else 1.0,
            "error": "HTTP 503" if i < 3 else "",
            "spec": json.dumps(Flaky().spec, sort_keys=True),
        }
        for i, rid in enumerate(ids)
    ]
    # The scores table as an earlier realitycheck wrote it: no "retryable" column.
    ingested = pq.read_table(tmp_path / "scores.parquet").drop(["retryable"])
    old = pa.concat_tables([ingested, pa.Table.from_pylist(old_rows, ingested.schema)])
    pq.write_table(old, tmp_path / "scores.parquet")
    assert "retryable" not in pq.read_schema(tmp_path / "scores.parquet").names
    stored = _mine(store, Score, "detector", "flaky")
    assert [stored[rid].retryable for rid in ids[:4]] == [False] * 4
    assert stored[ids[0]].error == "HTTP 503"

    plain = detect(store, [Flaky()])
    assert ASKED == [] and plain.computed["flaky"] == 0 and plain.reused["flaky"] == 80
    forced = detect(store, [Flaky()], retry_errors=True)
    assert sorted(ASKED) == ids[:3] and forced.retried["flaky"] == 3
    # Compaction folded the old file and the new part into one table with the column.
    assert "retryable" in pq.read_schema(tmp_path / "scores.parquet").names
    frame = store.frame("scores").query("detector == 'flaky'")
    assert len(frame) == 80 and not frame["error"].astype(bool).any()
    assert frame["retryable"].dtype == bool


def test_reading_some_columns_keeps_the_key_and_dedupes(tmp_path):
    store = RunStore(tmp_path)
    store.append(
        [Label(response_id="r", labeler="j", hallucinated=None, error="x", retryable=True)]
    )
    store.append([Label(response_id="r", labeler="j", hallucinated=True)])
    frame = store.frame("labels", columns=["retryable"])
    assert list(frame.columns) == ["response_id", "labeler", "retryable"]
    assert frame.to_dict("records") == [{"response_id": "r", "labeler": "j", "retryable": False}]
    empty = store.frame("scores", columns=["error"])
    assert list(empty.columns) == ["response_id", "detector", "error"] and empty.empty


@pytest.mark.parametrize("cls", [Label, Score])
def test_a_retryable_record_must_say_its_error(cls):
    base = (
        {"labeler": "j", "hallucinated": None} if cls is Label else {"detector": "d", "value": None}
    )
    with pytest.raises(InvalidInputError, match="must say its error. Got an empty error"):
        cls(response_id="r", retryable=True, **base)
    with pytest.raises(InvalidInputError, match="retryable must be a bool. Got 'yes' instead"):
        cls(response_id="r", error="x", retryable="yes", **base)
    assert cls(response_id="r", **base).retryable is False


@pytest.fixture
def flaky_registered(monkeypatch):
    detectors.names()  # load the built-in detectors first
    monkeypatch.setitem(detectors._items, "flaky", Flaky)


@pytest.fixture
def user_file(tmp_path):
    rows = [
        {"qid": f"q{i}", "answer": f"answer number {i}", "label": "yes" if i % 3 else "no"}
        for i in range(12)
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_the_cli_retries_on_rerun_and_with_retry_errors(
    tmp_path, user_file, flaky_registered, capsys
):
    run = tmp_path / "run"
    dataset = (
        f"files[path={user_file},text=answer,label=label,positive=yes,negative=no,"
        "columns=example_id:qid,name=mine]"
    )
    args = ["-q", "detect", "-d", dataset, "-D", "flaky", "--out", str(run)]
    RETRYABLE.update({"mine/q0/unknown", "mine/q1/unknown"})
    PERMANENT.update({"mine/q2/unknown", "mine/q3/unknown", "mine/q4/unknown"})
    assert main(args) == 3  # two items failed (retryable): exit 3, the rest is stored
    printed = capsys.readouterr()
    assert "flaky: 7 computed, 3 missing, 2 failed, 0 already stored" in printed.out
    assert "flaky: missing because the response has no samples" in printed.err
    assert "flaky: 2 of 2 failed with: HTTP 503" in printed.err
    RETRYABLE.clear()
    PERMANENT.clear()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "flaky: 2 computed (2 retried after an error), 10 already stored" in out
    assert main([*args, "--retry-errors"]) == 0
    out = capsys.readouterr().out
    assert "flaky: 3 computed (3 retried after an error), 9 already stored" in out
    assert main(args) == 0
    assert "flaky: 0 computed, 12 already stored" in capsys.readouterr().out
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["last_run"]["flaky"] == {
        "computed": 0,
        "missing": 0,
        "failed": 0,
        "unreadable": 0,
        "failed_before": 0,
        "reused": 12,
        "retried": 0,
    }
    scores = RunStore(run).frame("scores").query("detector == 'flaky'")
    assert len(scores) == 12 and scores["value"].notna().all()


def test_run_config_takes_retry_errors(tmp_path, user_file, flaky_registered, capsys):
    config = tmp_path / "study.toml"
    params = (
        f'path = "{user_file}", text = "answer", label = "label", positive = ["yes"], '
        'negative = ["no"], columns = ["example_id:qid"], name = "mine"'
    )
    config.write_text(
        f"""detectors = ["flaky"]

[run]
out = "run"
report = false

[[datasets]]
name = "files"
params = {{ {params} }}
"""
    )
    PERMANENT.update({"mine/q0/unknown", "mine/q1/unknown"})
    assert main(["-q", "run", str(config)]) == 0, capsys.readouterr().err
    assert "flaky: 10 computed, 2 missing, 0 already stored" in capsys.readouterr().out
    PERMANENT.clear()
    assert main(["-q", "run", str(config)]) == 0
    assert "flaky: 0 computed, 12 already stored" in capsys.readouterr().out
    assert main(["-q", "run", str(config), "--retry-errors"]) == 0
    out = capsys.readouterr().out
    assert "flaky: 2 computed (2 retried after an error), 10 already stored" in out
