"""The generate stage on a server that drops asked features: named in meta, asked again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from _generation_fakes import make_examples

from realitycheck.backends import CallCache
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.generation import SamplingPlan, generate
from realitycheck.records import Response
from realitycheck.store import RunStore


def _fake_server_module() -> Any:
    name = "_fake_openai_server"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "backends" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def server():
    with _fake_server_module().FakeOpenAIServer() as fake:
        yield fake


def test_missing_logprobs_are_named_in_meta_and_asked_again_once_the_server_is_fixed(
    server, tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server.ignores = {"logprobs", "n"}
    backend = OpenAIBackend(model="tiny", base_url=server.url, backoff=0.01, max_retries=1)
    plan = SamplingPlan(n_samples=3)
    store = RunStore(tmp_path / "run")
    examples = make_examples(2)
    with CallCache(tmp_path / "calls.sqlite") as cache:
        report = generate(store, examples, backend, plan, cache=cache)
        assert (report.computed, report.lacking, report.failed) == (2, 2, 0)
        # one best answer and three samples per example, one call each: counted truthfully
        assert report.usage.calls == 8 == server.calls
        responses = store.read(Response)
        for response in responses:
            assert response.meta["unsupported"] == {
                "logprobs": f"{server.url} (model tiny) returned no 'logprobs'"
            }
            assert "token_logprobs" not in response.features.get("best", {})
        server.ignores = set()  # the server is fixed: a plain rerun asks again
        again = generate(store, examples, backend, plan, cache=cache)
        assert (again.computed, again.lacking, again.reused) == (2, 0, 0)
        assert server.calls == 8 + 4  # n is honoured now: one best and one n=3 call each
        fixed = store.read(Response)
        assert len(fixed) == 2 and all("unsupported" not in r.meta for r in fixed)
        assert all(r.features["best"]["token_logprobs"] for r in fixed)
        third = generate(store, examples, backend, plan, cache=cache)
        assert (third.computed, third.reused) == (0, 2) and server.calls == 12


def test_a_refused_request_counts_as_a_permanent_failure(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server.refuse_top_k = True
    backend = OpenAIBackend(model="tiny", base_url=server.url, backoff=0.01, max_retries=3)
    plan = SamplingPlan(n_samples=0, decoding="top_k", top_k=5)
    report = generate(RunStore(tmp_path / "run"), make_examples(1), backend, plan)
    assert (report.failed, report.permanent) == (1, 1) and server.calls == 1
    assert "refuses the 'top_k' parameter" in report.errors[0]
