"""Label and detect on a local two-worker Ray cluster: the same records, nothing lost, no rework.

The cluster is the ``cluster`` fixture of this folder's conftest.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("ray", reason="ray is not installed: pip install 'realitycheck[distributed]'")

from ray_components import Logged  # noqa: E402  (after the skip)

from realitycheck import Example, Response, RunStore, detect, label  # noqa: E402
from realitycheck.detectors import detectors  # noqa: E402
from realitycheck.executors import LocalExecutor, RayExecutor  # noqa: E402
from realitycheck.labelers import labelers  # noqa: E402
from realitycheck.pipeline import StageReport  # noqa: E402
from realitycheck.store import check_run  # noqa: E402

N_EXAMPLES = 30  # 60 responses: four batches of 16
pytestmark = pytest.mark.slow  # the cluster takes ~30 s to start on two cores


def _run(folder: Path) -> RunStore:
    """A run of 30 QA examples, two responses each (one right, one wrong)."""
    store = RunStore(folder)
    examples, responses = [], []
    for i in range(N_EXAMPLES):
        eid = f"q/{i}"
        examples.append(
            Example(
                example_id=eid,
                dataset="q",
                task="qa",
                question=f"What colour is fruit {i}?",
                references=(f"a red apple number {i}",),
            )
        )
        for model, text in (("m1", f"A red apple number {i}."), ("m2", f"A blue pear {i * 7}.")):
            responses.append(
                Response(response_id=f"{eid}/{model}", example_id=eid, model=model, text=text)
            )
    store.append(examples)
    store.append(responses)
    return store


def _log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _table(store: RunStore, name: str, keys: list[str]) -> pd.DataFrame:
    return store.arrow(name).to_pandas().sort_values(keys).reset_index(drop=True)


def _stages(store: RunStore, executor, log: Path) -> None:
    labs = [labelers.create_from_key(k) for k in ("rouge_l", "token_f1")]
    dets = [detectors.create_from_key("length"), Logged(log=str(log), pause=0.2)]
    label(store, labs, batch_size=16, executor=executor)
    detect(store, dets, batch_size=16, executor=executor)


def test_a_run_split_across_workers_stores_what_one_process_stores(cluster, tmp_path):
    alone, split = _run(tmp_path / "alone"), _run(tmp_path / "split")
    _stages(alone, LocalExecutor(), tmp_path / "alone.log")
    _stages(split, cluster, tmp_path / "split.log")
    pids = {entry["pid"] for entry in _log(tmp_path / "split.log")}
    assert len(pids) == 2 and os.getpid() not in pids  # both workers, not the driver
    for name, keys in (("labels", ["response_id", "labeler"]), ("scores", ["response_id"])):
        ours, theirs = _table(split, name, keys), _table(alone, name, keys)
        # The logged detector's key names its own log file; the rest must match exactly.
        if name == "scores":
            ours["detector"] = ours["detector"].str.replace("split.log", "X.log")
            theirs["detector"] = theirs["detector"].str.replace("alone.log", "X.log")
            ours["spec"] = ours["spec"].str.replace("split.log", "X.log")
            theirs["spec"] = theirs["spec"].str.replace("alone.log", "X.log")
            keys = ["response_id", "detector"]
            ours = ours.sort_values(keys).reset_index(drop=True)
            theirs = theirs.sort_values(keys).reset_index(drop=True)
        assert len(ours) == 2 * N_EXAMPLES * 2
        pd.testing.assert_frame_equal(ours, theirs)


def detect_killing_one_worker(store: RunStore, det: Logged, cluster) -> tuple[StageReport, int]:
    """Detect with ``det`` on the cluster, SIGKILL the worker of its victim batch; the report, pid.

    ``det.victim`` names the file where the first batch writes its worker's pid
    before it sleeps; the stage must still end without an error (Ray runs the
    killed task again on another worker).
    """
    victim = Path(det.victim)
    outcome: dict = {}

    def stage():
        try:
            outcome["report"] = detect(store, [det], batch_size=16, executor=cluster)
        except BaseException as exc:  # reported to the main thread
            outcome["error"] = exc

    worker = threading.Thread(target=stage)
    worker.start()
    deadline = time.monotonic() + 60
    while not (victim.exists() and victim.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(victim.read_text())
    os.kill(pid, signal.SIGKILL)
    worker.join(timeout=120)
    assert not worker.is_alive() and "error" not in outcome, outcome.get("error")
    assert pid not in {entry["pid"] for entry in _log(Path(det.log))}  # the victim never finished
    return outcome["report"], pid


def test_killing_a_worker_mid_stage_loses_nothing(cluster, tmp_path):
    store = _run(tmp_path / "run")
    det = Logged(log=str(tmp_path / "calls.log"), victim=str(tmp_path / "victim.pid"))
    report, _ = detect_killing_one_worker(store, det, cluster)
    scores = store.arrow("scores").to_pandas()
    texts = store.arrow("responses").to_pandas().set_index("response_id")["text"]
    assert len(scores) == 2 * N_EXAMPLES
    assert dict(zip(scores.response_id, scores.value, strict=True)) == {
        rid: float(len(t)) for rid, t in texts.items()
    }
    assert report.computed[det.key] == 2 * N_EXAMPLES
    assert not check_run(store.path).findings  # no torn or unreadable part
    assert not list(store.path.rglob("*.tmp"))


def test_a_rerun_computes_only_the_missing_parts(cluster, tmp_path):
    assert_a_rerun_computes_only_the_missing_parts(_run(tmp_path / "run"), cluster, tmp_path)


def assert_a_rerun_computes_only_the_missing_parts(store, cluster, tmp_path) -> None:
    """A detect stopped after two parts keeps them; a rerun computes each missing one once."""
    log, flag = tmp_path / "calls.log", tmp_path / "fail.flag"
    flag.touch()
    det = Logged(log=str(log), fail_on="q/20/m1", fail_flag=str(flag))
    one_at_a_time = RayExecutor(cluster.address, max_in_flight=1)
    with pytest.raises(RuntimeError, match="planned failure"):
        detect(store, [det], batch_size=16, executor=one_at_a_time)
    first = {rid for entry in _log(log) for rid in entry["ids"]}
    stored = set(store.frame("scores")["response_id"])
    assert first == stored and len(stored) == 32  # two batches of 16 before the failing one
    flag.unlink()
    report = detect(store, [det], batch_size=16, executor=cluster)
    second = [rid for entry in _log(log)[2:] for rid in entry["ids"]]
    everything = set(store.frame("responses")["response_id"])
    assert sorted(second) == sorted(everything - first)  # each missing response once
    assert report.reused[det.key] == 32 and report.computed[det.key] == 28
    assert set(store.frame("scores")["response_id"]) == everything


def test_generation_split_across_workers_stores_what_one_process_stores(cluster, tmp_path):
    from realitycheck.backends import CallCache
    from realitycheck.backends.mock import MockBackend
    from realitycheck.generation import SamplingPlan
    from realitycheck.pipeline import generate

    examples = _run(tmp_path / "inputs").read(Example)
    backend, plan = MockBackend(sample_replies=("one", "two", "three")), SamplingPlan(n_samples=3)
    runs = {}
    for name, executor in (("alone", LocalExecutor()), ("split", cluster)):
        runs[name] = RunStore(tmp_path / name)
        cache = CallCache(tmp_path / f"{name}.sqlite")
        report = generate(
            runs[name], examples, backend, plan, cache=cache, batch_size=4, executor=executor
        )
        assert report.computed == N_EXAMPLES and report.usage.calls == 2 * N_EXAMPLES
    # The workers wrote every answer into the shared cache: a new run there calls nothing.
    again = generate(
        RunStore(tmp_path / "again"),
        examples,
        backend,
        plan,
        cache=CallCache(tmp_path / "split.sqlite"),
        executor=cluster,
    )
    assert (again.usage.calls, again.usage.cached) == (0, 2 * N_EXAMPLES)
    split = _table(runs["split"], "responses", ["response_id"])
    alone = _table(runs["alone"], "responses", ["response_id"])
    assert len(split) == N_EXAMPLES
    pd.testing.assert_frame_equal(split, alone)
