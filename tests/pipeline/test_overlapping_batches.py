"""A label stage whose judge waits on a server runs two batches at once, under one limit.

The next batch's calls fill the time the last batch's replies are read and
its part is written (issue 23's throughput target); the backend's
``concurrency`` still caps the calls of both batches together, since every
batch runs on the process's shared call loop with one limit per server. A
batch that fails, or a stage stopped by Ctrl-C, cancels the calls of the
batch another thread is waiting on.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from realitycheck import Label, Labeler, RunStore, ingest, label
from realitycheck.backends import cancel_calls
from realitycheck.backends.mock import MockBackend
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.backends.openai import _loop as _openai_loop
from realitycheck.labelers.qa_judge import QAJudge

pytest.importorskip("openai")


@pytest.fixture
def slow_server(fake_openai: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with fake_openai.FakeOpenAIServer(latency=0.3) as server:
        yield server


def _judge(url: str, concurrency: int) -> QAJudge:
    backend = OpenAIBackend(
        model="judge-model", base_url=url, concurrency=concurrency, timeout=10.0, max_retries=0
    )
    return QAJudge(judge=backend)


def test_two_batches_share_the_servers_concurrency_limit(tmp_path, tiny, slow_server):
    store = RunStore(tmp_path)
    ingest(store, tiny)
    judge = _judge(slow_server.url, concurrency=6)
    assert judge.overlaps_batches
    report = label(store, [judge], batch_size=4, datasets=None)
    # 80 responses in 20 batches of 4: one batch alone has 4 calls in flight, two
    # overlapping batches 8; the shared limit holds them at the backend's 6.
    assert slow_server.max_in_flight == 6
    assert report.computed[judge.key] == 80
    rows = [r for r in store.read(Label) if r.labeler == judge.key]
    assert sorted(r.response_id for r in rows) == sorted(
        rid for (rid,) in store.keys("responses", ["response_id"])
    )
    assert len(rows) == 80 and not any(r.failed for r in rows)


def test_a_judge_on_a_local_model_runs_its_batches_in_turn():
    assert not QAJudge(judge=MockBackend()).overlaps_batches


# A labeler whose batches overlap: its first batch fails at once, the others wait on
# a long call on the shared loop, which the failure must cancel.
STARTED = threading.Event()
CANCELLED = threading.Event()


@dataclass(frozen=True, kw_only=True)
class HangingJudge(Labeler):
    """Fails its first batch; every other batch waits 60 s on the shared call loop."""

    @property
    def overlaps_batches(self) -> bool:
        return True

    def label(self, responses, examples, *, cache=None):
        if any(r.response_id.endswith("tiny/0/m1") for r in responses):
            STARTED.wait(10)  # let the other batch start its call first
            raise RuntimeError("the first batch fails")

        async def long_call() -> None:
            STARTED.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                CANCELLED.set()
                raise

        _openai_loop.run(long_call)
        return [self._label(r, False) for r in responses]


HangingJudge.name = "hanging_judge"


def test_a_failed_batch_cancels_the_calls_of_the_batch_in_flight(tmp_path, tiny):
    STARTED.clear()
    CANCELLED.clear()
    store = RunStore(tmp_path)
    ingest(store, tiny)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="the first batch fails"):
        label(store, [HangingJudge()], batch_size=40, datasets=None)
    assert CANCELLED.wait(5)
    assert time.monotonic() - start < 20  # not the 60 s the other batch's call would take


def test_cancel_calls_stops_a_work_another_thread_waits_for():
    outcome: list[BaseException] = []

    async def forever() -> None:
        await asyncio.sleep(60)

    def wait() -> None:
        try:
            _openai_loop.run(forever)
        except BaseException as exc:  # noqa: BLE001 - the test looks at what ended it
            outcome.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    deadline = time.monotonic() + 5
    while cancel_calls() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    thread.join(5)
    assert not thread.is_alive()
    assert outcome and type(outcome[0]).__name__ == "CancelledError"


def test_parts_of_a_server_judge_start_small_and_double_unless_a_batch_size_is_given(
    tmp_path, tiny, slow_server, monkeypatch
):
    from realitycheck.pipeline import _stages

    monkeypatch.setattr(_stages, "FIRST_REMOTE_BATCH", 8)
    sizes: list[int] = []
    real = _stages.compute_overlapping_part
    monkeypatch.setattr(
        _stages,
        "compute_overlapping_part",
        lambda shared, rows: sizes.append(len(rows)) or real(shared, rows),
    )
    store = RunStore(tmp_path)
    ingest(store, tiny)
    judge = _judge(slow_server.url, concurrency=6)
    monkeypatch.setattr(type(judge), "batch_rows", 32)
    report = label(store, [judge], datasets=None)
    # 80 responses: the first calls wait for 8 prompts, not for a whole part of 32.
    assert sorted(sizes) == [8, 16, 24, 32] and report.computed[judge.key] == 80
    assert [len(p) for p in _stages._batches(list(range(80)), 32, first=8)] == [8, 16, 32, 24]
    assert [len(p) for p in _stages._batches(list(range(80)), 32)] == [32, 32, 16]
    sizes.clear()
    store = RunStore(tmp_path / "given")
    ingest(store, tiny)
    label(store, [judge], batch_size=20, datasets=None)  # the user's size holds from the first part
    assert sizes == [20, 20, 20, 20]
