"""A run on object storage (S3 through pyarrow.fs, served by moto): the same records, no loss.

Each test compares with the same work on a local folder, or reads the bucket
directly with pyarrow (not through the store) to see what was written.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pytest
from object_storage import SECRET, s3_uri

from realitycheck import Detector, Example, Response, RunStore, detect, label
from realitycheck.detectors import detectors
from realitycheck.errors import InvalidInputError, RunFolderError
from realitycheck.labelers import labelers
from realitycheck.store import LOCK_NAME, RunLock, check_run, lock_holder

N_EXAMPLES = 12  # 24 responses: three batches of 8


def _fill(store: RunStore) -> RunStore:
    examples, responses = [], []
    for i in range(N_EXAMPLES):
        eid = f"q/{i}"
        refs = (f"a red apple number {i}",)
        examples.append(
            Example(example_id=eid, dataset="q", task="qa", question="?", references=refs)
        )
        for model, text in (("m1", f"A red apple number {i}."), ("m2", f"A blue pear {i * 7}.")):
            responses.append(
                Response(response_id=f"{eid}/{model}", example_id=eid, model=model, text=text)
            )
    store.append(examples)
    store.append(responses)
    return store


def _sorted(store: RunStore, table: str, keys: list[str]) -> pd.DataFrame:
    return store.arrow(table).to_pandas().sort_values(keys).reset_index(drop=True)


def _stages(store: RunStore, **options) -> None:
    labs = [labelers.create_from_key(k) for k in ("rouge_l", "token_f1")]
    label(store, labs, batch_size=8, **options)
    detect(store, [detectors.create_from_key("length")], batch_size=8, **options)


def _bucket_files(uri: str) -> tuple[pafs.FileSystem, list[str]]:
    fs, root = pafs.FileSystem.from_uri(uri)
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    return fs, sorted(i.path[len(root) + 1 :] for i in infos if i.type == pafs.FileType.File)


def test_label_and_detect_on_s3_store_what_a_local_folder_stores(s3_bucket, tmp_path):
    uri = s3_bucket("runs/one")
    remote, local = _fill(RunStore(uri)), _fill(RunStore(tmp_path / "run"))
    _stages(remote)
    _stages(local)
    for table, keys in (("labels", ["response_id", "labeler"]), ("scores", ["response_id"])):
        ours = _sorted(remote, table, keys)
        assert len(ours) == (2 if table == "labels" else 1) * 2 * N_EXAMPLES
        pd.testing.assert_frame_equal(ours, _sorted(local, table, keys))
    assert remote.tables() == local.tables() == ["examples", "labels", "responses", "scores"]
    # What the bucket holds, read with pyarrow.dataset straight from S3, not through the store.
    fs, files = _bucket_files(uri)
    assert "manifest.json" in files and not [f for f in files if f.endswith(".tmp")]
    root = pafs.FileSystem.from_uri(uri)[1]
    direct = pads.dataset(f"{root}/scores.parquet", filesystem=fs).to_table().to_pandas()
    expected = pd.read_parquet(tmp_path / "run" / "scores.parquet")
    pd.testing.assert_frame_equal(
        direct.sort_values("response_id").reset_index(drop=True),
        expected.sort_values("response_id").reset_index(drop=True),
    )
    manifest = json.loads(fs.open_input_stream(f"{root}/manifest.json").read())
    assert set(manifest["components"]) == set(local.read_manifest()["components"])


def test_a_secret_in_the_uri_is_never_stored_nor_shown(s3_bucket):
    uri = s3_bucket("runs/secret")
    store = _fill(RunStore(uri))
    detect(store, [detectors.create_from_key("length")])
    assert SECRET not in store.location and "<redacted>" in store.location
    fs, files = _bucket_files(uri)
    root = pafs.FileSystem.from_uri(uri)[1]
    for name in files:
        assert SECRET.encode() not in fs.open_input_stream(f"{root}/{name}").read(), name
    with pytest.raises(RunFolderError, match="object storage") as info:
        store.path  # noqa: B018 (what needs a local folder says so)
    assert SECRET not in str(info.value)


@dataclass(frozen=True, kw_only=True)
class Flaky(Detector):
    """Response length; fails on the batch holding ``fail_on`` while ``flag`` exists.

    Every batch it scores is appended to ``log`` (one JSON list of ids per line).
    """

    log: str = ""
    flag: str = ""
    fail_on: str = ""

    def score(self, responses, run):
        ids = [r.response_id for r in responses]
        if os.path.exists(self.flag) and self.fail_on in ids:
            raise RuntimeError("planned failure")
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(ids) + "\n")
        return [self._score(r, float(len(r.text))) for r in responses]


Flaky.name = "flaky_length"


def test_a_stage_stopped_midway_keeps_its_parts_and_a_rerun_computes_only_the_rest(
    s3_bucket, tmp_path
):
    uri = s3_bucket("runs/crash")
    store = _fill(RunStore(uri))
    log, flag = tmp_path / "calls.log", tmp_path / "fail.flag"
    flag.touch()
    det = Flaky(log=str(log), flag=str(flag), fail_on="q/8/m1")  # the third batch of 8
    with pytest.raises(RuntimeError, match="planned failure"):
        detect(store, [det], batch_size=8)
    first = [rid for line in log.read_text().splitlines() for rid in json.loads(line)]
    _, files = _bucket_files(uri)
    assert len([f for f in files if f.startswith("scores.parts/")]) == 2
    assert set(RunStore(uri).frame("scores")["response_id"]) == set(first)
    assert len(first) == 16
    flag.unlink()
    report = detect(RunStore(uri), [det], batch_size=8)
    lines = log.read_text().splitlines()[2:]
    second = [rid for line in lines for rid in json.loads(line)]
    everything = set(store.frame("responses")["response_id"])
    assert sorted(second) == sorted(everything - set(first))
    assert report.reused[det.key] == 16 and report.computed[det.key] == 8
    scores = RunStore(uri).frame("scores")
    texts = store.frame("responses").set_index("response_id")["text"]
    assert dict(zip(scores.response_id, scores.value, strict=True)) == {
        rid: float(len(t)) for rid, t in texts.items()
    }


def test_a_file_uri_run_stores_what_the_local_folder_stores(tmp_path):
    through_uri = _fill(RunStore((tmp_path / "a").as_uri()))
    plain = _fill(RunStore(tmp_path / "b"))
    _stages(through_uri)
    _stages(plain)
    pd.testing.assert_frame_equal(
        _sorted(through_uri, "labels", ["response_id", "labeler"]),
        _sorted(plain, "labels", ["response_id", "labeler"]),
    )
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir())


def test_the_lock_on_s3_refuses_a_second_driver_and_is_released(s3_bucket):
    uri = s3_bucket("runs/locked")
    with RunLock(uri, command="realitycheck label") as first:
        holder = lock_holder(uri)
        assert holder is not None and holder["pid"] == os.getpid()
        second = RunLock(uri, command="realitycheck detect")
        holder["pid"] = -5  # another host's driver: never taken over
        holder.pop("token")
        holder["host"] = "elsewhere"
        RunStore(uri).remote.write_bytes(LOCK_NAME, json.dumps(holder).encode())
        with pytest.raises(RunFolderError, match="Another process is writing this run") as info:
            second.acquire()
        assert "elsewhere" in str(info.value) and SECRET not in str(info.value)
        first.release()  # no longer its lock: left for its holder
        assert lock_holder(uri)["host"] == "elsewhere"
        RunStore(uri).remote.delete(LOCK_NAME)
    with RunLock(uri, command="realitycheck label"):
        assert lock_holder(uri) is not None
    assert lock_holder(uri) is None


def test_a_stale_lock_on_s3_from_this_host_is_taken_over(s3_bucket):
    uri = s3_bucket("runs/stale")
    dead = {"pid": 2**22 + 12345, "host": os.uname().nodename, "command": "old", "since": "?"}
    RunStore(uri).remote.write_bytes(LOCK_NAME, json.dumps(dead).encode())
    with RunLock(uri, command="new") as lock:
        assert "stale" in lock.note and lock_holder(uri)["command"] == "new"


@pytest.mark.parametrize(
    ("location", "match"),
    [
        ("s3:///no-bucket", "not a URI pyarrow.fs can open"),
        ("nosuchfs://bucket/run", "not a URI pyarrow.fs can open"),
        ("s3://bucket", "names no folder"),
    ],
)
def test_a_bad_uri_is_refused_before_anything_is_read(location, match):
    with pytest.raises(InvalidInputError, match=match):
        RunStore(location)


def test_a_missing_bucket_names_the_uri_without_its_secret(s3_endpoint):
    uri = s3_uri(s3_endpoint, "no-such-bucket", "run")
    with pytest.raises(RunFolderError, match="no-such-bucket.*does not exist") as info:
        RunStore(uri)
    assert SECRET not in str(info.value) and "<redacted>@no-such-bucket/run" in str(info.value)


@pytest.mark.slow  # the S3 client retries a refused connection for ~6 s
def test_an_unreachable_endpoint_names_the_uri_without_its_secret():
    with pytest.raises(RunFolderError, match="Could not reach the run at s3://") as info:
        RunStore(s3_uri("127.0.0.1:1", "bucket", "run"))
    assert SECRET not in str(info.value)


def _dataset_key(tmp_path: Path) -> str:
    path = tmp_path / "data.jsonl"
    rows = [{"qid": f"q{i}", "answer": "word " * (i + 1), "label": i % 2} for i in range(6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"files[path={path},text=answer,columns=example_id:qid,name=mine]"


def test_the_cli_detects_into_s3_and_refuses_a_missing_bucket_without_a_traceback(
    s3_bucket, s3_endpoint, tmp_path, capsys
):
    from realitycheck.cli import main

    key, uri = _dataset_key(tmp_path), s3_bucket("cli/run")
    assert main(["-q", "detect", "-d", key, "-D", "length", "--out", uri]) == 0
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    local = tmp_path / "local"
    assert main(["-q", "detect", "-d", key, "-D", "length", "--out", str(local)]) == 0
    capsys.readouterr()
    ours, theirs = (
        _sorted(RunStore(uri), "scores", ["response_id"]),
        _sorted(RunStore(local), "scores", ["response_id"]),
    )
    assert len(ours) == 6
    pd.testing.assert_frame_equal(ours, theirs)
    missing = s3_uri(s3_endpoint, "no-such-bucket", "run")
    assert main(["-q", "detect", "-d", key, "-D", "length", "--out", missing]) != 0
    out = capsys.readouterr()
    assert "no-such-bucket" in out.err and "Traceback" not in out.err + out.out
    assert SECRET not in out.err + out.out


def test_an_unreadable_part_on_s3_is_named_with_the_way_out(s3_bucket):
    uri = s3_bucket("runs/torn")
    store = _fill(RunStore(uri))
    detect(store, [detectors.create_from_key("length")], batch_size=8)
    store.remote.write_bytes("scores.parts/20990101T000000000000-deadbeef.parquet", b"PAR1torn")
    with pytest.raises(
        RunFolderError, match=r"cannot be read .*realitycheck check --run URI"
    ) as info:
        store.arrow("scores")
    assert "scores.parts/20990101T000000000000-deadbeef.parquet" in str(info.value)
    assert SECRET not in str(info.value)
    assert check_run(uri, repair=True).moved  # the way out it names
    assert store.arrow("scores").num_rows == 2 * N_EXAMPLES
