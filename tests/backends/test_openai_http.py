"""The openai backend's HTTP layer: httpcore pools, its asyncio network backend, proxies."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import shutil
import socket
import ssl
import subprocess
import threading
import zlib

import pytest
from _fake_openai_server import expected_choice

from realitycheck.backends import GenerationRequest
from realitycheck.backends import openai as openai_backend
from realitycheck.backends._openai_http import WORKERS_PER_POOL, JsonPools, core, decoded_body
from realitycheck.backends._openai_net import AsyncioNetwork
from realitycheck.errors import InvalidInputError

httpcore = core()
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


class _Recorder:
    """A loopback TCP server that records what it receives and can hang up on demand."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.peer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> _Recorder:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.peer = writer
            with contextlib.suppress(OSError):
                while data := await reader.read(1 << 16):
                    self.received.append(data)
                    writer.write(b"pong")
            writer.close()

        self._server = await asyncio.start_server(serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.peer is not None:
            self.peer.close()
        self._server.close()
        await self._server.wait_closed()
        await asyncio.sleep(0.01)  # the handler sees the end and closes its side


def test_a_request_goes_out_in_one_write_on_the_next_read():
    async def scenario() -> tuple[list[bytes], list[bytes], bytes]:
        async with _Recorder() as server:
            stream = await AsyncioNetwork(httpcore).connect_tcp("127.0.0.1", server.port)
            writes: list[bytes] = []
            real_write = stream._writer.write
            stream._writer.write = lambda data: (writes.append(data), real_write(data))[1]
            await stream.write(b"POST / HTTP/1.1\r\n\r\n")
            await stream.write(b"")
            await stream.write(b'{"body": 1}')
            held = list(writes)
            answer = await stream.read(100)
            await stream.aclose()
            return held, writes, answer

    held, writes, answer = asyncio.run(scenario())
    assert held == []
    assert writes == [b'POST / HTTP/1.1\r\n\r\n{"body": 1}']
    assert answer == b"pong"


def test_a_connection_the_server_closed_reads_as_readable_and_empty():
    async def scenario() -> tuple[bool, bool, bytes]:
        async with _Recorder() as server:
            stream = await AsyncioNetwork(httpcore).connect_tcp("127.0.0.1", server.port)
            await stream.write(b"ping")
            await stream.read(100)
            open_idle = stream.get_extra_info("is_readable")
            assert server.peer is not None
            server.peer.close()
            for _ in range(100):  # until the end of the stream has arrived
                await asyncio.sleep(0.01)
                if stream.get_extra_info("is_readable"):
                    break
            closed_idle = stream.get_extra_info("is_readable")
            rest = await stream.read(100)
            await stream.aclose()
            return open_idle, closed_idle, rest

    assert asyncio.run(scenario()) == (False, True, b"")


def test_network_failures_become_httpcore_errors():
    async def scenario() -> None:
        with pytest.raises(httpcore.ConnectError):
            await AsyncioNetwork(httpcore).connect_tcp("127.0.0.1", _free_port())
        async with _Recorder() as server:
            stream = await AsyncioNetwork(httpcore).connect_tcp("127.0.0.1", server.port)
            with pytest.raises(httpcore.ReadTimeout):
                await stream.read(100, timeout=0.05)  # the server says nothing unasked
            assert stream.get_extra_info("server_addr")[1] == server.port
            await stream.aclose()

    asyncio.run(scenario())


@pytest.fixture
def tls_relay(server, tmp_path):
    """A TLS endpoint for ``localhost`` (self-signed) relaying bytes to the fake server.

    Yields ``(port, client_context)``; the context trusts only that certificate.
    """
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
        + ["-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1"]
        + ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
        check=True,
        capture_output=True,
    )
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    upstream = server.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    loop = asyncio.new_event_loop()

    writers: list[asyncio.StreamWriter] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(upstream[0], int(upstream[1]))
        writers.extend((writer, up_writer))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def shut() -> None:
        listening.close()
        for writer in writers:
            writer.close()
        await asyncio.sleep(0.05)  # the pipes see the ends

    listening = loop.run_until_complete(asyncio.start_server(relay, "127.0.0.1", 0, ssl=served))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    trusting = ssl.create_default_context(cafile=str(cert))
    yield listening.sockets[0].getsockname()[1], trusting
    asyncio.run_coroutine_threadsafe(shut(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_https_is_verified_and_carries_the_calls(make_backend, server, tls_relay, no_proxies):
    port, trusting = tls_relay
    backend = make_backend(base_url=f"https://localhost:{port}/v1", max_retries=0)
    # The shared context trusts the system's CAs only: a self-signed server is refused.
    (refused,) = backend.generate([GenerationRequest(prompt="untrusted")])
    assert "ConnectError" in refused.error and "CERTIFICATE_VERIFY_FAILED" in refused.error
    assert server.calls == 0
    no_proxies.setattr(openai_backend, "_tls_context", lambda: trusting)
    gens = backend.generate([GenerationRequest(prompt=f"over tls {i}") for i in range(20)])
    assert [g.texts[0] for g in gens] == [
        expected_choice(f"over tls {i}", 0, temperature=0.0, max_tokens=64)["text"]
        for i in range(20)
    ]
    assert server.calls == 20


@pytest.mark.parametrize("key", ["sk-abc\ndef", "sk-\x01", "sk-\u20ac"])
def test_a_key_a_header_cannot_carry_fails_before_any_call(make_backend, server, key):
    backend = make_backend(api_key_env="RC_ODD_KEY")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RC_ODD_KEY", key)
        with pytest.raises(InvalidInputError, match="'RC_ODD_KEY' has characters") as caught:
            backend.generate([GenerationRequest(prompt="q")])
    assert key not in str(caught.value) and server.calls == 0
