"""The openai backend's HTTP layer: httpcore pools, proxies from the environment, bodies."""

from __future__ import annotations

import gzip
import socket
import zlib

import pytest
from _fake_openai_server import expected_choice

from realitycheck.backends import GenerationRequest
from realitycheck.backends._openai_http import WORKERS_PER_POOL, JsonPools, decoded_body
from realitycheck.errors import InvalidInputError

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture
def no_proxies(monkeypatch):
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(("workers", "pools"), [(1, 1), (16, 1), (17, 2), (32, 2), (128, 8)])
def test_one_pool_per_sixteen_workers(workers, pools, no_proxies):
    assert WORKERS_PER_POOL == 16
    assert len(JsonPools("http://127.0.0.1:9/v1", "k", workers=workers, ssl_context=None)) == pools


def test_an_http_proxy_from_the_environment_carries_the_calls(make_backend, server, no_proxies):
    # The fake server answers absolute-form targets, so it can stand in for the proxy: a
    # host that does not resolve is reached only if the calls really go through it.
    no_proxies.setenv("HTTP_PROXY", server.url.rsplit("/v1", 1)[0])
    backend = make_backend(base_url="http://api.example.invalid/v1", max_retries=0)
    (gen,) = backend.generate([GenerationRequest(prompt="via proxy")])
    assert gen.error == "", gen.error
    assert gen.texts == (expected_choice("via proxy", 0, temperature=0.0, max_tokens=64)["text"],)
    assert server.calls == 1


def test_no_proxy_sends_the_calls_directly(make_backend, server, no_proxies):
    no_proxies.setenv("HTTP_PROXY", f"http://127.0.0.1:{_free_port()}")  # nobody listens
    no_proxies.setenv("NO_PROXY", "127.0.0.1")
    (gen,) = make_backend(max_retries=0).generate([GenerationRequest(prompt="direct")])
    assert gen.error == "" and server.calls == 1


def test_a_proxy_it_cannot_use_is_named_before_any_call(make_backend, server, no_proxies):
    no_proxies.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(InvalidInputError, match="'socks5' proxy"):
        make_backend().generate([GenerationRequest(prompt="q")])
    assert server.calls == 0


def test_an_unreachable_server_is_a_retryable_error_record(make_backend, no_proxies):
    backend = make_backend(base_url=f"http://127.0.0.1:{_free_port()}/v1", max_retries=1)
    (gen,) = backend.generate([GenerationRequest(prompt="q")])
    assert gen.texts == () and gen.retryable and gen.usage == {"attempts": 2}
    assert "The connection failed (ConnectError" in gen.error, gen.error


def test_compressed_bodies_are_decoded():
    body = b'{"choices": []}' * 20
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw = raw_deflate.compress(body) + raw_deflate.flush()
    assert decoded_body(gzip.compress(body), [(b"Content-Encoding", b"gzip")]) == body
    assert decoded_body(zlib.compress(body), [(b"content-encoding", b"deflate")]) == body
    assert decoded_body(raw, [(b"Content-Encoding", b" Deflate ")]) == body
    assert decoded_body(body, [(b"Content-Type", b"application/json")]) == body
    assert decoded_body(body, [(b"Content-Encoding", b"identity")]) == body
    # A body that does not decode stays as it came (it then fails as JSON and is retried).
    assert decoded_body(b"not gzip", [(b"Content-Encoding", b"gzip")]) == b"not gzip"
