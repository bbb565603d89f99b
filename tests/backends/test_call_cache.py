"""The shared call cache: dedupe, hits, durability across kill -9, threads and processes."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import pytest
from _fake_openai_server import expected_choice

from realitycheck.backends import Generation, GenerationRequest
from realitycheck.backends._cache import (
    CHUNK,
    CallCache,
    cached_generate,
    call_identity,
    default_cache_path,
)
from realitycheck.backends._usage import usage_of
from realitycheck.backends.mock import MockBackend
from realitycheck.errors import InvalidInputError


@dataclasses.dataclass(frozen=True, kw_only=True)
class EchoBackend(MockBackend):
    """The public mock (no ``generate_each``): echoes prompts, refuses 'err...', can crash."""

    replies: tuple[str, ...] = ("(.+)=>echo {1}",)
    fail_on: str = dataclasses.field(default="^err", metadata={"in_key": False})
    crash_on_call: int = dataclasses.field(default=0, metadata={"in_key": False})
    calls: ClassVar[list[int]] = []

    def generate(self, requests):
        EchoBackend.calls.append(len(requests))
        if self.crash_on_call and len(EchoBackend.calls) == self.crash_on_call:
            raise RuntimeError("simulated crash")
        return super().generate(requests)


@pytest.fixture(autouse=True)
def _fresh_echo_calls():
    EchoBackend.calls.clear()


def _text(prompt: str) -> str:
    return expected_choice(prompt, 0, temperature=0.0, max_tokens=64)["text"]


class Recorder:
    """A Progress that remembers what it was told."""

    def __init__(self) -> None:
        self.totals: list[int | None] = []
        self.advanced = 0

    @contextmanager
    def task(self, description, total):
        self.totals.append(total)
        recorder = self

        class Task:
            def advance(self, n: int = 1) -> None:
                recorder.advanced += n

        yield Task()


def test_duplicates_are_sent_once_and_a_rerun_is_served_without_calls(
    make_backend, server, tmp_path
):
    backend = make_backend()
    cache = CallCache(tmp_path / "calls.sqlite")
    requests = [
        GenerationRequest(prompt="same", tag="first"),
        GenerationRequest(prompt="other"),
        GenerationRequest(prompt="same", tag="second"),
        GenerationRequest(prompt="same", n=2, decoding="sampling", temperature=1.0),
    ]
    progress = Recorder()
    first = cached_generate(backend, requests, cache=cache, progress=progress)
    assert server.calls == 3 and len(cache) == 3
    assert progress.totals == [4] and progress.advanced == 4
    assert [g.cached for g in first] == [False, False, True, False]
    assert first[0].texts == first[2].texts == (_text("same"),)
    assert first[1].texts == (_text("other"),)

    again = cached_generate(make_backend(concurrency=32), requests, cache=cache, progress=progress)
    assert server.calls == 3, "a cache hit must not reach the server"
    assert all(g.cached for g in again)
    assert [g.texts for g in again] == [g.texts for g in first]
    assert [dataclasses.replace(g, cached=True) for g in first] == again
    assert progress.advanced == 8


def test_a_different_model_or_request_is_a_miss(make_backend, server, tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    cached_generate(make_backend(), [GenerationRequest(prompt="q")], cache=cache)
    cached_generate(make_backend(model="other"), [GenerationRequest(prompt="q")], cache=cache)
    cached_generate(make_backend(), [GenerationRequest(prompt="q", max_tokens=8)], cache=cache)
    assert server.calls == 3 and len(cache) == 3


def test_call_identity_leaves_out_how_to_call(make_backend):
    fast = call_identity(make_backend(concurrency=64, timeout=1.0, max_retries=0, backoff=0.5))
    slow = call_identity(make_backend(price_per_1k=(1.0, 2.0), api_key_env="OTHER"))
    assert fast == slow
    assert set(fast["params"]) == {"model", "base_url", "mode"}
    assert call_identity(make_backend(mode="completions")) != fast


def test_errors_are_not_cached(make_backend, server, tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    requests = [GenerationRequest(prompt="ok"), GenerationRequest(prompt="no [fault=401*9]")]
    first = cached_generate(make_backend(), requests, cache=cache)
    assert first[1].error and len(cache) == 1
    second = cached_generate(make_backend(), requests, cache=cache)
    assert second[0].cached and not second[1].cached and second[1].error
    assert server.attempts["no [fault=401*9]"] == 2 and server.attempts["ok"] == 1
    with pytest.raises(InvalidInputError, match="Failed calls are never cached"):
        cache.put("k", Generation(error="x"))


def test_the_api_key_is_never_written_to_the_cache(make_backend, server, tmp_path, monkeypatch):
    secret = "sk-test-SECRET-4242"
    monkeypatch.setenv("RC_TEST_KEY", secret)
    backend = make_backend(api_key_env="RC_TEST_KEY")
    path = tmp_path / "calls.sqlite"
    gens = cached_generate(
        backend,
        [GenerationRequest(prompt=f"q{i}", logprobs=True) for i in range(5)],
        cache=CallCache(path),
    )
    assert server.auth_headers == {f"Bearer {secret}"}, "the key must really have been used"
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("calls"))
    assert gens[0].texts[0].encode() in stored, "the answers are in the files searched"
    assert secret.encode() not in stored and b"SECRET" not in stored
    assert secret not in backend.spec_json and secret not in str(call_identity(backend))
    assert all(secret not in g.to_json() for g in gens)


KILL_SCRIPT = """
import sys
from realitycheck.backends import GenerationRequest
from realitycheck.backends._cache import CallCache, cached_generate
from realitycheck.backends.openai import OpenAIBackend
backend = OpenAIBackend(model="m", base_url=sys.argv[1], concurrency=2, timeout=60, max_retries=0)
requests = [GenerationRequest(prompt=f"question {i}") for i in range(12)]
cached_generate(backend, requests, cache=CallCache(sys.argv[2]))
raise SystemExit("the run was meant to be killed before it finished")
"""


@pytest.mark.slow
def test_a_run_killed_with_sigkill_repeats_no_completed_call(make_backend, server, tmp_path):
    path = tmp_path / "calls.sqlite"
    cache = CallCache(path)
    assert len(cache) == 0  # the parent creates the file before the child writes
    server.slow_after, server.slow_seconds = 5, 60.0
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}
    child = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, server.url, str(path)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (len(cache) >= 5 and server.in_flight == 2):
            assert child.poll() is None, f"the child ended early: {child.stderr.read()}"
            assert time.monotonic() < deadline, "the child never got stuck on the slow calls"
            time.sleep(0.02)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    done = len(cache)
    assert 5 <= done < 12

    server.slow_after = None
    before = server.calls
    requests = [GenerationRequest(prompt=f"question {i}") for i in range(12)]
    gens = cached_generate(make_backend(model="m", concurrency=4), requests, cache=cache)
    assert server.calls - before == 12 - done, "completed calls must not be paid again"
    assert sum(g.cached for g in gens) == done
    assert [g.texts for g in gens] == [(_text(f"question {i}"),) for i in range(12)]
    assert all(g.error == "" for g in gens) and len(cache) == 12
    cached_prompts = [f"question {i}" for i, g in enumerate(gens) if g.cached]
    assert all(server.attempts[p] == 1 for p in cached_prompts)


def test_a_backend_without_generate_each_is_called_in_chunks_and_keeps_finished_chunks(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    requests = [GenerationRequest(prompt=f"p{i}") for i in range(CHUNK + 5)]
    with pytest.raises(RuntimeError, match="simulated crash"):
        cached_generate(EchoBackend(crash_on_call=2), requests, cache=cache)
    assert len(cache) == CHUNK
    gens = cached_generate(EchoBackend(), requests, cache=cache)
    assert EchoBackend.calls == [CHUNK, 5, 5]
    assert [g.texts[0] for g in gens] == [f"echo p{i}" for i in range(CHUNK + 5)]
    assert sum(g.cached for g in gens) == CHUNK


def test_without_a_cache_duplicates_are_still_sent_once():
    requests = [
        GenerationRequest(prompt="a"),
        GenerationRequest(prompt="a"),
        GenerationRequest(prompt="err"),
    ]
    gens = cached_generate(EchoBackend(), requests, cache=None)
    assert EchoBackend.calls == [2]
    assert [g.cached for g in gens] == [False, True, False]
    assert gens[2].error.startswith("FatalBackendError: HTTP 400") and not gens[2].texts


def test_many_threads_share_one_cache(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")

    def work(t: int) -> None:
        for i in range(40):
            cache.put(f"{t}-{i}", Generation(texts=(f"{t}/{i}",)))
            cache.get_many([f"{t}-{j}" for j in range(i + 1)])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 320
    assert cache.get("7-39") == Generation(texts=("7/39",), cached=True)


def _write_many(cache: CallCache, name: str, go: threading.Event) -> None:
    go.wait(30)
    for i in range(300):
        cache.put(f"{name}-{i}", Generation(texts=(str(i),)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks the test process")
def test_several_processes_write_to_one_cache_at_once(tmp_path):
    path = tmp_path / "calls.sqlite"
    cache = CallCache(path)
    assert len(cache) == 0  # the parent's connection is open when the children fork
    context = multiprocessing.get_context("fork")
    go = context.Event()
    children = [context.Process(target=_write_many, args=(cache, str(p), go)) for p in range(3)]
    for child in children:
        child.start()
    go.set()  # the three start writing together
    for child in children:
        child.join(timeout=60)
    assert [child.exitcode for child in children] == [0, 0, 0]
    assert len(cache) == 900
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_default_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_path() == tmp_path / "here" / "calls.sqlite"
    assert CallCache().path == tmp_path / "here" / "calls.sqlite"
    monkeypatch.delenv("REALITYCHECK_CACHE_DIR")
    assert default_cache_path() == Path.home() / ".cache" / "realitycheck" / "calls.sqlite"


def test_stored_generations_round_trip_with_every_field(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    generation = Generation(
        texts=("a b", "c"),
        tokens=(("a", " b"), ("c",)),
        token_logprobs=((-0.5, -1.25), (-2.0,)),
        top_logprobs=(({"a": -0.5, "x": -3.0}, {" b": -1.25}), ({"c": -2.0},)),
        token_entropies=((0.1, 0.2), (0.3,)),
        hidden=({"mean@L2": (1.0, 2.0)}, {"mean@L2": (3.0, 4.0)}),
        finish_reasons=("stop", "length"),
        usage={"prompt_tokens": 3, "completion_tokens": 3},
        unsupported=("top_logprobs",),
    )
    cache.put("k", generation)
    cache.close()
    assert CallCache(tmp_path / "calls.sqlite").get("k") == dataclasses.replace(
        generation, cached=True
    )
    assert "k" in cache and "absent" not in cache


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScriptedBackend(MockBackend):
    """Answers each request with the next scripted generation, recording what it was asked."""

    script: ClassVar[list[Generation]] = []
    asked: ClassVar[list[GenerationRequest]] = []

    def generate(self, requests):
        ScriptedBackend.asked.extend(requests)
        return [ScriptedBackend.script.pop(0) for _ in requests]


def test_an_answer_lacking_an_asked_feature_is_returned_but_not_stored(tmp_path):
    ScriptedBackend.asked.clear()
    lacking = Generation(texts=("a",), unsupported=("logprobs",), usage={"calls": 1})
    ScriptedBackend.script[:] = [lacking, dataclasses.replace(lacking, unsupported=())]
    request = GenerationRequest(prompt="q", logprobs=True)
    with CallCache(tmp_path / "calls.sqlite") as cache:
        (first,) = cached_generate(ScriptedBackend(), [request], cache=cache)
        assert first.unsupported == ("logprobs",) and len(cache) == 0
        (second,) = cached_generate(ScriptedBackend(), [request], cache=cache)
        assert second.unsupported == () and not second.cached and len(cache) == 1
    assert len(ScriptedBackend.asked) == 2


@pytest.mark.parametrize(
    ("unsupported", "stored"),
    [
        (("json_schema",), True),  # a reply off the schema is still read: an answer
        (("logprobs",), False),
        (("top_logprobs",), False),
        (("n",), False),
        (("echo",), False),
        (("logprobs", "json_schema"), False),
    ],
)
def test_only_a_missing_feature_the_answer_needs_keeps_it_out_of_the_cache(
    tmp_path, unsupported, stored
):
    ScriptedBackend.asked.clear()
    answer = Generation(texts=("a",), unsupported=unsupported, usage={"calls": 1})
    ScriptedBackend.script[:] = [answer, answer]
    request = GenerationRequest(prompt="q", logprobs=True, json_schema='{"type": "object"}')
    with CallCache(tmp_path / "calls.sqlite") as cache:
        (first,) = cached_generate(ScriptedBackend(), [request], cache=cache)
        assert first.unsupported == unsupported and len(cache) == int(stored)
        (second,) = cached_generate(ScriptedBackend(), [request], cache=cache)
        assert second.cached is stored and second.unsupported == unsupported
    assert len(ScriptedBackend.asked) == (1 if stored else 2)


def test_a_partial_answer_is_kept_and_only_the_rest_is_asked_for(tmp_path):
    ScriptedBackend.asked.clear()
    partial = Generation(
        texts=("s1", "s2"),
        finish_reasons=("stop", "stop"),
        error="RetryableBackendError: HTTP 503",
        retryable=True,
        usage={"calls": 2, "completion_tokens": 4, "attempts": 5},
    )
    rest = Generation(
        texts=("s3",), finish_reasons=("length",), usage={"calls": 1, "completion_tokens": 2}
    )
    ScriptedBackend.script[:] = [partial, rest]
    request = GenerationRequest(prompt="q", n=3, decoding="sampling", temperature=1.0, seed=7)
    with CallCache(tmp_path / "calls.sqlite") as cache:
        (failed,) = cached_generate(ScriptedBackend(), [request], cache=cache)
        assert failed.error and failed.retryable and failed.texts == ()
        assert usage_of([failed]).calls == 2 and usage_of([failed]).completion_tokens == 4
        (done,) = cached_generate(ScriptedBackend(), [request], cache=cache)
        assert [(r.n, r.seed) for r in ScriptedBackend.asked] == [(3, 7), (1, 9)]
        assert done.texts == ("s1", "s2", "s3") and done.finish_reasons == ("stop",) * 2 + (
            "length",
        )
        assert usage_of([done]).calls == 1  # what this run paid for
        stored = cache.get(request.cache_key(call_identity(ScriptedBackend())))
        assert stored is not None and stored.texts == done.texts
        assert stored.usage["calls"] == 3 and len(cache) == 1  # the partial entry is gone


def test_usage_counts_only_what_this_run_paid_for():
    gens = [
        Generation(
            texts=("a",), usage={"prompt_tokens": 10, "completion_tokens": 4, "attempts": 2}
        ),
        Generation(texts=("b",), usage={"prompt_tokens": 7, "completion_tokens": 1, "attempts": 1}),
        Generation(texts=("c",), usage={"prompt_tokens": 99, "completion_tokens": 99}, cached=True),
        Generation(error="HTTP 500", usage={"attempts": 4}),
    ]
    usage = usage_of(gens, price_per_1k=(1.0, 3.0))
    assert (usage.calls, usage.cached, usage.errors, usage.attempts) == (2, 1, 1, 7)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (17, 5, 22)
    assert usage.cost == pytest.approx(17 / 1000 * 1.0 + 5 / 1000 * 3.0)
    assert usage.as_dict()["total_tokens"] == 22
    with pytest.raises(
        InvalidInputError,
        match="'generations' parameter of usage_of must be an iterable of Generation values. "
        "Got 'x' at position 0",
    ):
        usage_of(["x"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cached_generate("openai", [], cache=None), "must be a Backend. Got 'openai'"),
        (
            lambda: cached_generate(
                EchoBackend(), [GenerationRequest(prompt="a"), "b"], cache=None
            ),
            "'requests' parameter of cached_generate must be a list, each item a "
            "GenerationRequest. .* Item 1 is 'b'.",
        ),
        (lambda: CallCache(timeout=0), "'timeout' parameter of CallCache must be a float > 0"),
    ],
)
def test_bad_arguments_are_refused(call, message):
    with pytest.raises(InvalidInputError, match=message):
        call()


def test_a_pickled_cache_reopens_the_same_file(tmp_path):
    import pickle

    cache = CallCache(tmp_path / "calls.sqlite", timeout=5)
    cache.put_value("key", "value")
    copy = pickle.loads(pickle.dumps(cache))  # what a Ray worker receives
    assert (copy.path, copy.timeout) == (cache.path, 5.0)
    assert copy.get_values(["key"]) == {"key": "value"}
    copy.put_value("other", "written by the copy")
    assert cache.get_values(["other"]) == {"other": "written by the copy"}
