import json
import os

import pytest

from realitycheck import InvalidInputError, Label, RunStore, Score
from realitycheck.store import SCHEMA_VERSION


def _labels(n, labeler="x", start=0):
    return [
        Label(response_id=f"r{i}", labeler=labeler, hallucinated=bool(i % 2), score=i / 10)
        for i in range(start, start + n)
    ]


def test_parts_merge_and_later_rows_replace_earlier(tmp_path):
    store = RunStore(tmp_path)
    store.append(_labels(3))
    store.append([Label(response_id="r0", labeler="x", hallucinated=True, score=0.9)])
    df = store.frame("labels")
    assert len(df) == 3
    assert df.set_index("response_id").loc["r0", "score"] == 0.9
    store.compact("labels")
    assert (tmp_path / "labels.parquet").exists()
    assert not list((tmp_path / "labels.parts").glob("*.parquet"))
    assert store.read(Label)[-1].score == 0.9


def test_keys_cover_table_and_parts(tmp_path):
    store = RunStore(tmp_path)
    store.append(_labels(2))
    store.compact("labels")
    store.append(_labels(2, labeler="y"))
    assert store.keys("labels", ["response_id", "labeler"]) == {
        ("r0", "x"),
        ("r1", "x"),
        ("r0", "y"),
        ("r1", "y"),
    }


def test_leftover_temporary_file_from_a_killed_write_is_ignored(tmp_path):
    store = RunStore(tmp_path)
    store.append(_labels(2))
    parts = tmp_path / "labels.parts"
    (parts / ".20990101-dead.parquet.abc.tmp").write_bytes(b"half a file")
    assert len(store.frame("labels")) == 2


def test_none_and_errors_survive_the_round_trip(tmp_path):
    store = RunStore(tmp_path)
    store.append([Score(response_id="r", detector="d", value=None, error="no context")])
    (score,) = store.read(Score)
    assert score.value is None and score.error == "no context"


def test_manifest_keeps_versions_and_never_secrets(tmp_path):
    store = RunStore(tmp_path)
    store.update_manifest(
        config={"backend": {"api_key": "sk-123", "model": "m"}, "Authorization": "Bearer x"},
        components={"rouge_l": {"name": "rouge_l", "params": {}, "version": "1"}},
        notes=["one", "one"],
    )
    text = (tmp_path / "manifest.json").read_text()
    assert "sk-123" not in text and "Bearer" not in text
    manifest = json.loads(text)
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["config"]["backend"]["model"] == "m"
    assert "numpy" in manifest["versions"]
    assert manifest["notes"] == ["one"]


def test_other_schema_version_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"schema_version": 999}))
    with pytest.raises(InvalidInputError, match="schema version 999"):
        RunStore(tmp_path)


def test_broken_manifest_names_file_and_line(tmp_path):
    (tmp_path / "manifest.json").write_text("{\n  'bad'\n}")
    with pytest.raises(InvalidInputError, match=r"manifest.json, line 2"):
        RunStore(tmp_path)


def test_replace_with_nothing_removes_the_table(tmp_path):
    store = RunStore(tmp_path)
    store.append(_labels(2))
    store.replace([], table="labels")
    assert store.frame("labels").empty
    assert os.listdir(tmp_path / "labels.parts") == []


def test_replace_rewrites_the_compacted_file_and_drops_the_parts(tmp_path):
    import pyarrow.parquet as pq

    store = RunStore(tmp_path)
    store.append(_labels(3))
    store.compact("labels")
    store.append(_labels(2, labeler="y"))
    store.replace(_labels(1, labeler="z", start=5))
    assert os.listdir(tmp_path / "labels.parts") == []
    rows = pq.read_table(tmp_path / "labels.parquet").to_pylist()
    assert [(r["response_id"], r["labeler"], r["score"]) for r in rows] == [("r5", "z", 0.5)]
    store.replace([], table="labels")
    assert not (tmp_path / "labels.parquet").exists() and store.frame("labels").empty


def test_component_keys_that_merely_mention_tokens_are_not_redacted(tmp_path):
    store = RunStore(tmp_path)
    spec = {"name": "length", "params": {"unit": "tokens"}, "version": "1"}
    manifest = store.update_manifest(
        components={"length[unit=tokens]": spec, "token_f1": {"name": "token_f1"}},
        config={"access_token": "abc", "max_tokens": 5},
    )
    assert manifest["components"]["length[unit=tokens]"] == spec
    assert manifest["components"]["token_f1"] == {"name": "token_f1"}
    assert manifest["config"] == {"access_token": "<redacted>", "max_tokens": 5}


def test_a_part_written_before_failed_and_unreadable_existed_reads_the_defaults(tmp_path):
    import pyarrow.parquet as pq

    store = RunStore(tmp_path)
    store.append(
        [
            Label(response_id="a", labeler="j", hallucinated=None, error="503", retryable=True),
            Label(response_id="b", labeler="j", hallucinated=None, error="no reference"),
        ]
    )
    (part,) = (tmp_path / "labels.parts").glob("*.parquet")
    old = pq.read_table(part).drop(["failed", "unreadable"])  # as an earlier version wrote it
    pq.write_table(old, part)
    labels = {label.response_id: label for label in store.read(Label)}
    # A retryable label of an old part is a failed one; a permanent error is not.
    assert (labels["a"].failed, labels["a"].unreadable) == (True, 0)
    assert (labels["b"].failed, labels["b"].unreadable) == (False, 0)
    rows = store.arrow("labels", columns=["failed", "unreadable"]).to_pylist()
    assert [(r["failed"], r["unreadable"]) for r in rows] == [(False, 0), (False, 0)]
    store.append([Label(response_id="c", labeler="j", hallucinated=True, unreadable=2)])
    store.compact("labels")
    merged = {label.response_id: label.unreadable for label in store.read(Label)}
    assert merged == {"a": 0, "b": 0, "c": 2}
