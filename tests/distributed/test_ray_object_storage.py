"""Label and detect on a two-worker Ray cluster into a run on S3 (moto): workers write the parts.

The cluster is the ``cluster`` fixture of this folder's conftest; the S3
server runs in this process on 127.0.0.1, where the workers reach it too.
"""

from __future__ import annotations

import os

import pandas as pd
import pyarrow.fs as pafs
import pytest

pytest.importorskip("ray", reason="ray is not installed: pip install 'realitycheck[distributed]'")
pytest.importorskip("moto.server", reason="pip install 'moto[server]'")

from ray_components import Logged  # noqa: E402  (after the skip)
from test_ray_stages import (  # noqa: E402
    N_EXAMPLES,
    _log,
    _run,
    _table,
    assert_a_rerun_computes_only_the_missing_parts,
    detect_killing_one_worker,
)

from realitycheck import RunStore, detect, label  # noqa: E402
from realitycheck.executors import LocalExecutor  # noqa: E402
from realitycheck.labelers import labelers  # noqa: E402

pytestmark = pytest.mark.slow  # the cluster takes ~30 s to start on two cores


@pytest.fixture(scope="module")
def s3_run_uri():
    """A URI maker for runs in a bucket of a moto S3 server on 127.0.0.1."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = dict(endpoint_override=f"{host}:{port}", scheme="http", region="us-east-1")
    fs = pafs.S3FileSystem(access_key="k", secret_key="s", allow_bucket_creation=True, **options)
    fs.create_dir("runs")
    query = "&".join(f"{k}={v}" for k, v in options.items())
    yield lambda prefix: f"s3://k:s@runs/{prefix}?{query}"
    server.stop()


def _copy(local: RunStore, uri: str) -> RunStore:
    """The run's examples and responses, stored again in a run at ``uri``."""
    from realitycheck import Example, Response

    store = RunStore(uri)
    store.append(local.read(Example))
    store.append(local.read(Response))
    return store


def test_workers_write_parts_into_s3_and_the_run_matches_a_local_one(cluster, s3_run_uri, tmp_path):
    alone = _run(tmp_path / "alone")
    split = _copy(alone, s3_run_uri("split"))
    log = tmp_path / "split.log"
    for store, executor, logged in (
        (alone, LocalExecutor(), tmp_path / "alone.log"),
        (split, cluster, log),
    ):
        labs = [labelers.create_from_key(k) for k in ("rouge_l", "token_f1")]
        label(store, labs, batch_size=16, executor=executor)
        detect(store, [Logged(log=str(logged))], batch_size=16, executor=executor)
    assert not (tmp_path / "s3:").exists() and not os.path.exists("s3:")  # nothing went local
    pids = {entry["pid"] for entry in _log(log)}
    assert len(pids) == 2 and os.getpid() not in pids  # both workers wrote, not the driver
    ours = _table(split, "labels", ["response_id", "labeler"])
    theirs = _table(alone, "labels", ["response_id", "labeler"])
    assert len(ours) == 2 * N_EXAMPLES * 2
    pd.testing.assert_frame_equal(ours, theirs)
    scores = _table(split, "scores", ["response_id"])
    texts = _table(alone, "responses", ["response_id"]).set_index("response_id")["text"]
    assert dict(zip(scores.response_id, scores.value, strict=True)) == {
        rid: float(len(t)) for rid, t in texts.items()
    }


def test_a_ray_rerun_on_s3_computes_only_the_missing_parts(cluster, s3_run_uri, tmp_path):
    store = _copy(_run(tmp_path / "inputs"), s3_run_uri("rerun"))
    assert_a_rerun_computes_only_the_missing_parts(store, cluster, tmp_path)


def test_killing_a_worker_mid_stage_on_s3_loses_nothing_and_a_rerun_computes_nothing(
    cluster, s3_run_uri, tmp_path
):
    alone = _run(tmp_path / "alone")
    store = _copy(alone, s3_run_uri("killed"))
    log = tmp_path / "calls.log"
    det = Logged(log=str(log), victim=str(tmp_path / "victim.pid"))
    report, _ = detect_killing_one_worker(store, det, cluster)
    assert report.computed[det.key] == 2 * N_EXAMPLES
    # Every part on S3 reads (none torn), and the records are those of one process
    # (the same detector: its victim file exists now, so it no longer sleeps).
    detect(alone, [det], batch_size=16, executor=LocalExecutor())
    keys = ["response_id", "detector"]
    pd.testing.assert_frame_equal(_table(store, "scores", keys), _table(alone, "scores", keys))
    calls = len(_log(log))
    again = detect(store, [det], batch_size=16, executor=cluster)
    assert again.reused[det.key] == 2 * N_EXAMPLES and not again.computed.get(det.key)
    assert len(_log(log)) == calls  # nothing was scored again
