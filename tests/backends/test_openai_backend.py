"""The openai backend against a real HTTP server on 127.0.0.1 (see _fake_openai_server)."""

from __future__ import annotations

import asyncio
import email.utils
import importlib.util
import logging
import math
import os
import random
import re
import subprocess
import sys
import time

import pytest
from _fake_openai_server import expected_choice

from realitycheck.backends import GenerationRequest, backends
from realitycheck.backends.openai import DEFAULT_BASE_URL, OpenAIBackend
from realitycheck.backends.openai._retry import MAX_RETRY_AFTER, backoff_delay, parse_retry_after
from realitycheck.errors import InvalidInputError, MissingDependencyError


def _request(prompt: str, **kw) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, **kw)


@pytest.mark.parametrize("mode", ["chat", "completions"])
@pytest.mark.parametrize("top_logprobs", [0, 3])
def test_samples_and_logprobs_are_parsed_into_the_generation(
    make_backend, server, mode, top_logprobs
):
    backend = make_backend(mode=mode)
    request = _request(
        "Who built the Eiffel Tower?",
        n=4,
        decoding="sampling",
        temperature=1.0,
        max_tokens=6,
        logprobs=True,
        top_logprobs=top_logprobs,
    )
    (gen,) = backend.generate([request])
    assert gen.error == "" and not gen.cached
    expected = [
        expected_choice(request.prompt, i, temperature=1.0, max_tokens=6, top_logprobs=top_logprobs)
        for i in range(4)
    ]
    assert gen.texts == tuple(e["text"] for e in expected)
    assert len(set(gen.texts)) > 1, "the server's samples differ; so must the parsed ones"
    assert gen.tokens == tuple(tuple(e["tokens"]) for e in expected)
    assert gen.token_logprobs == tuple(tuple(e["token_logprobs"]) for e in expected)
    if top_logprobs:
        assert gen.top_logprobs == tuple(tuple(e["top_logprobs"]) for e in expected)
        assert all(len(top) == 3 for seq in gen.top_logprobs for top in seq)
    else:
        assert gen.top_logprobs == ()
    assert gen.finish_reasons == ("stop",) * 4
    n_tokens = sum(len(e["tokens"]) for e in expected)
    assert gen.usage == {
        "prompt_tokens": 5,
        "completion_tokens": n_tokens,
        "total_tokens": 5 + n_tokens,
        "attempts": 1,
        "calls": 1,
    }
    (body,) = server.bodies
    assert ("messages" in body) == (mode == "chat") and body["n"] == 4


def test_without_logprobs_the_token_fields_stay_empty(make_backend):
    (gen,) = make_backend().generate([_request("What is the capital of France?")])
    assert gen.texts and gen.tokens == () and gen.token_logprobs == () and gen.top_logprobs == ()


def test_decoding_maps_to_the_api_parameters(make_backend, server):
    backend = make_backend()
    backend.generate(
        [
            _request("a", decoding="greedy", temperature=0.7, max_tokens=9),
            _request("b", decoding="top_p", temperature=0.8, top_p=0.95, stop=("\n",), seed=3),
            _request("c", decoding="top_k", temperature=1.0, top_k=40),
            GenerationRequest(
                messages=(
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "d"},
                )
            ),
        ]
    )
    bodies = {b["messages"][-1]["content"]: b for b in server.bodies}
    assert bodies["a"]["temperature"] == 0.0 and bodies["a"]["max_tokens"] == 9
    assert bodies["a"]["messages"] == [{"role": "user", "content": "a"}]
    assert "top_p" not in bodies["a"] and "logprobs" not in bodies["a"]
    assert bodies["b"]["top_p"] == 0.95 and bodies["b"]["stop"] == ["\n"]
    assert bodies["b"]["seed"] == 3 and bodies["b"]["temperature"] == 0.8
    assert bodies["c"]["top_k"] == 40 and "top_p" not in bodies["c"]
    assert bodies["d"]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert all(b["model"] == "fake-model" for b in server.bodies)


@pytest.mark.parametrize("fault", ["429", "500", "503", "drop", "malformed", "slow"])
def test_each_transient_fault_is_retried_then_answered(make_backend, server, fault):
    server.slow_seconds = 1.5
    backend = make_backend(timeout=0.5)
    prompt = f"Name a river. [fault={fault}]"
    (ok, gen) = backend.generate([_request("plain question"), _request(prompt)])
    assert gen.error == "", gen.error
    assert gen.texts == (expected_choice(prompt, 0, temperature=0.0, max_tokens=64)["text"],)
    assert server.attempts[prompt] == 2
    assert gen.usage["attempts"] == 2
    assert ok.error == "" and server.attempts["plain question"] == 1


def test_retry_after_is_honoured(make_backend, server):
    server.retry_after = "0.2"
    backend = make_backend(backoff=0.0)
    start = time.perf_counter()
    (gen,) = backend.generate([_request("q [fault=429*2]")])
    elapsed = time.perf_counter() - start
    assert gen.error == "" and server.attempts["q [fault=429*2]"] == 3
    assert elapsed >= 0.4


def test_a_retry_after_beyond_the_limit_ends_the_request(make_backend, server):
    server.retry_after = str(int(MAX_RETRY_AFTER) + 100)
    start = time.perf_counter()
    (gen,) = make_backend().generate([_request("q [fault=429]")])
    assert time.perf_counter() - start < 5
    assert "Retry-After" in gen.error and gen.texts == ()


@pytest.mark.parametrize(
    ("fault", "attempts", "message"),
    [
        ("500*99", 3, "Gave up after 3 attempts.*HTTP 500"),
        ("malformed*99", 3, "Gave up after 3 attempts.*not valid JSON"),
        ("drop*99", 3, "Gave up after 3 attempts.*connection failed"),
        ("400", 1, "FatalBackendError: HTTP 400"),
        ("401", 1, "FatalBackendError: HTTP 401"),
        ("404", 1, "FatalBackendError: HTTP 404"),
        ("501", 1, "FatalBackendError: HTTP 501"),
    ],
)
def test_failures_that_outlast_the_retries_become_error_records(
    make_backend, server, fault, attempts, message
):
    backend = make_backend(max_retries=2)
    bad = f"bad [fault={fault}]"
    sampled = {"decoding": "sampling", "temperature": 1.0}
    gens = backend.generate(
        [_request("first"), _request(bad, **sampled), _request("last", **sampled)]
    )
    assert [g.error == "" for g in gens] == [True, False, True]
    assert gens[1].texts == () and gens[1].usage == {"attempts": attempts, "calls": 0}
    assert server.attempts[bad] == attempts
    assert re.search(message, gens[1].error), gens[1].error
    # What outlasted the retries may pass on a later run; a 4xx never will.
    assert gens[1].retryable is (attempts > 1)


@pytest.mark.parametrize(
    "decoding", [{}, {"decoding": "sampling", "temperature": 1.0}], ids=["greedy", "sampling"]
)
def test_a_repeated_server_error_is_retried_at_any_temperature(make_backend, server, decoding):
    # OpenAI's 500 says the same words every time: two in a row are a blip, not a verdict.
    blip = "blip [fault=500*2]"
    (gen,) = make_backend(max_retries=6).generate([_request(blip, **decoding)])
    assert gen.error == "" and gen.texts and server.attempts[blip] == 3
    lasting = "lasting [fault=500*99]"
    (failed,) = make_backend(max_retries=4).generate([_request(lasting, **decoding)])
    assert server.attempts[lasting] == 5 and failed.retryable
    assert re.search("Gave up after 5 attempts.*HTTP 500: injected 500", failed.error), failed.error


def test_a_timeout_that_never_ends_is_an_error_after_the_retries(make_backend, server):
    server.slow_seconds = 2.0
    start = time.perf_counter()
    (gen,) = make_backend(timeout=0.2, max_retries=1).generate([_request("x [fault=slow*9]")])
    assert "timed out" in gen.error and server.attempts["x [fault=slow*9]"] == 2
    assert gen.retryable
    assert time.perf_counter() - start < 1.5


def test_a_server_that_refuses_logprobs_still_answers_without_them(make_backend, server, caplog):
    prompt = "q [fault=nologprobs]"
    with caplog.at_level(logging.WARNING, logger="realitycheck.backends.openai"):
        (gen,) = make_backend().generate([_request(prompt, logprobs=True, top_logprobs=2)])
    assert gen.error == "" and gen.texts and gen.token_logprobs == () and gen.top_logprobs == ()
    assert server.attempts[prompt] == 2 and "logprobs" not in server.bodies[-1]
    assert "refused token log-probs" in caplog.text


def test_a_server_that_ignores_n_is_asked_again_for_the_rest(make_backend, server):
    prompt = "q [fault=onechoice*9]"
    request = _request(prompt, n=3, decoding="sampling", temperature=1.0, seed=7, logprobs=True)
    backend = make_backend()
    (gen,) = backend.generate([request])
    assert [b["n"] for b in server.bodies] == [3, 2, 1]
    assert [b["seed"] for b in server.bodies] == [7, 8, 9]
    assert gen.texts == tuple(
        expected_choice(prompt, 0, temperature=1.0, max_tokens=64, seed=s)["text"]
        for s in (7, 8, 9)
    )
    assert len(gen.token_logprobs) == 3 and gen.usage["attempts"] == 3
    assert gen.usage["calls"] == 3 and backend_usage_calls(gen) == 3


def backend_usage_calls(gen) -> int:
    from realitycheck.backends import usage_of

    return usage_of([gen]).calls


@pytest.mark.parametrize("concurrency", [4, 20])
def test_concurrency_is_bounded(make_backend, server, concurrency):
    server.latency = 0.05
    count = 3 * concurrency
    gens = make_backend(concurrency=concurrency).generate([_request(f"q{i}") for i in range(count)])
    assert all(g.error == "" for g in gens)
    assert server.max_in_flight == concurrency
    assert [g.texts[0] for g in gens] == [
        expected_choice(f"q{i}", 0, temperature=0.0, max_tokens=64)["text"] for i in range(count)
    ]


def test_generate_works_inside_a_running_event_loop_and_agenerate_on_it(make_backend):
    backend = make_backend()

    async def inside() -> tuple[str, str]:
        (sync,) = backend.generate([_request("loop")])
        (native,) = await backend.agenerate([_request("loop")])
        return sync.texts[0], native.texts[0]

    sync_text, native_text = asyncio.run(inside())
    assert (
        sync_text == native_text == expected_choice("loop", 0, temperature=0, max_tokens=64)["text"]
    )


def test_no_requests_means_no_calls(make_backend, server):
    assert make_backend().generate([]) == [] and server.calls == 0


def test_on_result_reports_each_answer_once(make_backend):
    seen: list[int] = []
    gens = make_backend(concurrency=3).generate_each(
        [_request(f"p{i}") for i in range(7)], lambda i, g: seen.append(i)
    )
    assert sorted(seen) == list(range(7)) and len(gens) == 7


def test_the_api_key_is_read_at_call_time_and_sent(make_backend, server, monkeypatch):
    backend = make_backend(api_key_env="RC_TEST_KEY")
    monkeypatch.setenv("RC_TEST_KEY", "sk-first")
    backend.generate([_request("a")])
    monkeypatch.setenv("RC_TEST_KEY", "sk-second")
    backend.generate([_request("b")])
    assert server.auth_headers == {"Bearer sk-first", "Bearer sk-second"}
    assert "sk-" not in backend.spec_json and "sk-" not in repr(backend)


def test_openai_itself_without_a_key_fails_before_any_call(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("RC_ABSENT_KEY", raising=False)
    backend = OpenAIBackend(model="gpt-4o-mini", api_key_env="RC_ABSENT_KEY")
    assert backend.base_url == DEFAULT_BASE_URL
    with pytest.raises(InvalidInputError, match="set the environment variable 'RC_ABSENT_KEY'"):
        backend.generate([_request("q")])


def test_base_url_comes_from_the_environment_and_is_in_the_key(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    backend = OpenAIBackend(model="m")
    assert backend.base_url == "http://127.0.0.1:9/v1"
    assert backend.key == "openai[base_url=http://127.0.0.1:9/v1,model=m]"
    rebuilt = backends.create_from_key(backend.key)
    assert rebuilt.spec == backend.spec
    assert OpenAIBackend(model="m", concurrency=64).key == backend.key


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"model": ""}, "'model' parameter of openai must be a non-empty str"),
        ({"mode": "edit"}, r"'mode' parameter of openai must be one of \('chat', 'completions'\)"),
        ({"concurrency": 0}, "'concurrency' parameter of openai must be an int >= 1. Got 0"),
        ({"max_retries": -1}, "'max_retries' parameter of openai must be an int >= 0"),
        ({"timeout": 0}, "'timeout' parameter of openai must be a float > 0"),
        ({"backoff": -1.0}, "'backoff' parameter of openai must be a float >= 0"),
        ({"price_per_1k": (1.0,)}, "'price_per_1k' parameter of openai must be a pair"),
        ({"price_per_1k": (1.0, True)}, r"each item a float >= 0. Got \(1.0, True\)"),
        ({"base_url": "localhost:8000"}, "'base_url' parameter of openai must be an http"),
        (
            {"base_url": "http://u:pw@host/v1"},
            r"without credentials .* Got 'http://\*\*\*@host/v1'",
        ),
    ],
)
def test_bad_parameters_fail_when_the_backend_is_built(params, message):
    with pytest.raises(InvalidInputError, match=message):
        OpenAIBackend(**{"model": "m", "base_url": "http://127.0.0.1:9/v1", **params})


def test_credentials_in_base_url_are_refused_without_being_echoed(monkeypatch):
    with pytest.raises(InvalidInputError, match="without credentials") as info:
        OpenAIBackend(model="m", base_url="http://user:s3cret@host/v1")
    assert "s3cret" not in str(info.value) and "user" not in str(info.value)
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://me:s3cret@host/v1")
    with pytest.raises(InvalidInputError, match=r"read from \$OPENAI_BASE_URL") as info:
        OpenAIBackend(model="m")
    assert "s3cret" not in str(info.value)


def test_a_key_passed_as_api_key_env_is_refused_without_being_echoed():
    with pytest.raises(InvalidInputError, match="NAME of an environment variable") as info:
        OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", api_key_env="sk-abc123xyz")
    assert "abc123xyz" not in str(info.value)


@pytest.mark.parametrize(
    ("request_kw", "mode", "message"),
    [
        ({"prompt": "q", "decoding": "beam", "num_beams": 3}, "chat", "needs beam"),
        ({"prompt": "q", "hidden_layers": (2,)}, "chat", "needs hidden"),
        ({"messages": ({"role": "user", "content": "q"},)}, "completions", "'completions' mode"),
    ],
)
def test_requests_the_backend_cannot_serve_fail_before_any_call(
    make_backend, server, request_kw, mode, message
):
    with pytest.raises(InvalidInputError, match=message):
        make_backend(mode=mode).generate([_request("fine"), GenerationRequest(**request_kw)])
    assert server.calls == 0


def test_without_the_sdk_the_error_names_the_extra(make_backend, monkeypatch):
    backend = make_backend()
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependencyError, match=r"realitycheck\[openai\]"):
        backend.generate([_request("q")])


def test_usage_and_cost_count_what_was_paid(make_backend):
    backend = make_backend(price_per_1k=(2.0, 10.0))
    gens = backend.generate(
        [_request("one two three"), _request("four five"), _request("x [fault=401]")]
    )
    usage = backend.usage(gens)
    completion = sum(len(g.tokens[0]) if g.tokens else len(g.texts[0].split()) for g in gens[:2])
    assert (usage.calls, usage.errors, usage.attempts) == (2, 1, 3)
    assert usage.prompt_tokens == 5 and usage.completion_tokens == completion
    assert math.isclose(usage.cost, 5 / 1000 * 2.0 + completion / 1000 * 10.0)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "0.25"}, 0.25),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
        ({"Retry-After": email.utils.formatdate(1_000_030.0, usegmt=True)}, 30.0),
        ({"Retry-After": email.utils.formatdate(999_000.0, usegmt=True)}, 0.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers, expected):
    assert parse_retry_after(headers, now=1_000_000.0) == expected


def test_backoff_is_full_jitter_below_a_doubling_ceiling():
    rng = random.Random(0)
    for attempt in range(8):
        draws = [backoff_delay(attempt, base=0.5, rng=rng, cap=20.0) for _ in range(400)]
        ceiling = min(20.0, 0.5 * 2**attempt)
        assert 0.0 <= min(draws) and max(draws) <= ceiling
        assert max(draws) > 0.9 * ceiling and min(draws) < 0.1 * ceiling


def test_importing_never_imports_the_sdk_and_generating_does(server):
    # In a fresh interpreter: the SDK is imported on the first call, not by importing.
    script = (
        "import sys\n"
        "import realitycheck, realitycheck.backends.openai\n"
        "from realitycheck.backends import GenerationRequest, backends\n"
        "before = 'openai' in sys.modules\n"
        f"backend = backends.create('openai', model='m', base_url={server.url!r})\n"
        "(gen,) = backend.generate([GenerationRequest(prompt='q', max_tokens=4)])\n"
        "assert not gen.error, gen.error\n"
        "print(before, 'openai' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
    assert server.calls == 1


def test_an_unreachable_server_is_a_retryable_error_record(make_backend):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = make_backend(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    (gen,) = backend.generate([GenerationRequest(prompt="q")])
    assert gen.texts == () and gen.retryable and gen.usage == {"attempts": 2, "calls": 0}
    assert "The connection failed" in gen.error, gen.error


@pytest.mark.parametrize("key", ["sk-abc\ndef", "sk-\x01", "sk-\u20ac"])
def test_a_key_a_header_cannot_carry_fails_before_any_call(make_backend, server, key):
    backend = make_backend(api_key_env="RC_ODD_KEY")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RC_ODD_KEY", key)
        with pytest.raises(InvalidInputError, match="'RC_ODD_KEY' has characters") as caught:
            backend.generate([GenerationRequest(prompt="q")])
    assert key not in str(caught.value) and server.calls == 0


_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture
def no_proxies(monkeypatch):
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def test_an_http_proxy_from_the_environment_carries_the_calls(make_backend, server, no_proxies):
    # The fake server answers absolute-form targets, so it can stand in for the proxy: a
    # host that does not resolve is reached only if the calls really go through it.
    no_proxies.setenv("HTTP_PROXY", server.url.rsplit("/v1", 1)[0])
    backend = make_backend(base_url="http://api.example.invalid/v1", max_retries=0)
    (gen,) = backend.generate([GenerationRequest(prompt="via proxy")])
    assert gen.error == "", gen.error
    assert gen.texts == (expected_choice("via proxy", 0, temperature=0.0, max_tokens=64)["text"],)
    assert server.calls == 1


def test_a_proxy_the_client_cannot_use_is_named_before_any_call(make_backend, server, no_proxies):
    pytest.importorskip("httpx2")
    if importlib.util.find_spec("socksio") is not None:
        pytest.skip("socksio is installed: the client can use a SOCKS proxy")
    no_proxies.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(InvalidInputError, match="proxy the openai SDK's HTTP client cannot use"):
        make_backend().generate([GenerationRequest(prompt="q")])
    assert server.calls == 0
