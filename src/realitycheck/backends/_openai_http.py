"""Posting JSON bodies to an OpenAI-compatible API root over ``httpcore`` connection pools.

The ``openai`` backend talks to ``httpcore`` (the connection layer under
``httpx``, installed with the ``openai`` extra) directly instead of through an
``httpx.AsyncClient``. Per request the client layer merges the URL with the
base URL (two URL parses), merges the headers, reads and writes the cookie
jar, runs the auth flow and the redirect loop, and wraps the response in its
own models; at concurrency 32 against a local server that was about a fifth of
the client's CPU time per request (``benchmarks/openai_throughput.py``). Here
the target URLs and header lines are built once per pool and each request is a
single ``pool.request(...)`` call, which reads the whole body and returns the
connection to its pool. The pools reach the network through
:class:`~realitycheck.backends._openai_net.AsyncioNetwork` (one write per
request, no ``anyio`` scopes). :func:`classify` sorts what an attempt raised
(an HTTP error status, a timeout, ``httpcore``'s connection errors) into the
retryable and fatal failures of :mod:`realitycheck.backends._retry`.

What ``httpx`` did for the backend and is kept:

- *Proxies* from ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY`` and
  ``NO_PROXY``, read with :func:`urllib.request.getproxies` and
  :func:`urllib.request.proxy_bypass` (http and https proxies).
- *Compressed bodies*: no ``Accept-Encoding`` is sent, so servers answer
  uncompressed; a ``gzip`` or ``deflate`` body sent anyway is decoded.
- *TLS*: the caller passes the verifying context (shared by all pools).

Shape: one pool per :data:`WORKERS_PER_POOL` workers. ``httpcore``'s pool
scans all its connections on every request, so one pool for 128 workers costs
O(128) per call; 16 keeps the scan short while every worker keeps a warm
connection (``max_keepalive_connections`` = 16).
"""

from __future__ import annotations

import importlib
import json
import urllib.request
import zlib
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from realitycheck.backends._openai_net import AsyncioNetwork
from realitycheck.backends._retry import Classified, parse_retry_after
from realitycheck.errors import (
    BackendError,
    FatalBackendError,
    InvalidInputError,
    RetryableBackendError,
)

__all__ = [
    "WORKERS_PER_POOL",
    "JsonPools",
    "StatusError",
    "classify",
    "core",
    "decoded_body",
    "error_message",
    "header_map",
]

WORKERS_PER_POOL = 16
"""Workers (requests in flight) sharing one connection pool."""
_MAX_CONNECTIONS = 100  # per pool: never the limit (the workers are), as under httpx
_KEEPALIVE_EXPIRY = 5.0  # seconds an idle connection is kept (httpx's default)
_RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx
_GZIP_WINDOW = 16 + zlib.MAX_WBITS  # zlib's window bits for a gzip header
RawHeaders = Sequence[tuple[bytes, bytes]]


def core() -> Any:
    """Return the connection layer under ``httpx2``: ``httpcore2`` (the ``openai`` extra)."""
    return importlib.import_module("httpcore2")


class JsonPools:
    """Connection pools to one API root, posting JSON bodies; use one per event loop.

    Args:
        base_url: The API root, without a trailing ``/`` (e.g. ``http://127.0.0.1:8000/v1``).
        api_key: Sent as ``Authorization: Bearer <api_key>``.
        workers: Requests in flight at most; one pool per :data:`WORKERS_PER_POOL` of them.
        ssl_context: The verifying TLS context for ``https`` roots (and proxies).

    Raises:
        InvalidInputError: The environment names a proxy this client cannot use.
    """

    def __init__(self, base_url: str, api_key: str, *, workers: int, ssl_context: Any) -> None:
        http = core()
        self._base = base_url.rstrip("/") + "/"
        self._http = http
        self._urls: dict[str, Any] = {}
        self._headers = [
            (b"Authorization", f"Bearer {api_key}".encode("latin-1")),
            (b"Content-Type", b"application/json"),
            (b"Accept", b"application/json"),
            (b"User-Agent", b"realitycheck"),
        ]
        proxy = _proxy_for(base_url)
        self._pools = [
            _pool(http, ssl_context, proxy) for _ in range(-(-max(workers, 1) // WORKERS_PER_POOL))
        ]

    def __len__(self) -> int:
        """Return the number of pools."""
        return len(self._pools)

    async def post(self, worker: int, path: str, body: bytes) -> tuple[int, RawHeaders, bytes]:
        """Post ``body`` to ``<base_url>/<path>`` on worker ``worker``'s pool.

        Returns:
            The status code, the raw response headers and the (decoded) body.

        Raises:
            Exception: ``httpcore``'s errors (timeouts, dropped connections) unchanged.
        """
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = self._http.URL(self._base + path)
        pool = self._pools[worker % len(self._pools)]
        reply = await pool.request(b"POST", url, headers=self._headers, content=body)
        return reply.status, reply.headers, decoded_body(reply.content, reply.headers)

    async def aclose(self) -> None:
        """Close every pool (and its connections)."""
        for pool in self._pools:
            await pool.aclose()


def _pool(http: Any, ssl_context: Any, proxy: str | None) -> Any:
    limits = {
        "max_connections": max(_MAX_CONNECTIONS, WORKERS_PER_POOL),
        "max_keepalive_connections": WORKERS_PER_POOL,  # a warm connection per worker
        "keepalive_expiry": _KEEPALIVE_EXPIRY,
        "network_backend": AsyncioNetwork(http),
    }
    if proxy is None:
        return http.AsyncConnectionPool(ssl_context=ssl_context, **limits)
    parts = urlsplit(proxy)
    auth = None
    if parts.username is not None:
        auth = (unquote(parts.username), unquote(parts.password or ""))
    url = parts._replace(netloc=parts.netloc.rpartition("@")[2])  # the credentials go in auth
    return http.AsyncHTTPProxy(
        proxy_url=url.geturl(), proxy_auth=auth, ssl_context=ssl_context, **limits
    )


def _proxy_for(base_url: str) -> str | None:
    """Return the proxy URL the environment sets for ``base_url``, or ``None``.

    Raises:
        InvalidInputError: The proxy is not an ``http`` / ``https`` URL.
    """
    parts = urlsplit(base_url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    proxy = proxy if "://" in proxy else f"http://{proxy}"
    found = urlsplit(proxy)
    if found.scheme not in ("http", "https") or not found.hostname:
        raise InvalidInputError(
            f"The openai backend reaches {parts.scheme}:// URLs through http or https proxies "
            f"only; the environment names a {found.scheme!r} proxy for {parts.hostname}. Unset "
            "it or add the host to NO_PROXY."
        )
    return proxy


def header_map(headers: RawHeaders) -> Mapping[str, str]:
    """Return raw response headers as ``{lower-case name: value}`` (the last value wins)."""
    return {
        name.decode("latin-1").lower(): value.decode("latin-1").strip() for name, value in headers
    }


def decoded_body(body: bytes, headers: RawHeaders) -> bytes:
    """Return ``body`` undone of its ``Content-Encoding`` (``gzip`` / ``deflate``; else as is).

    A body that does not decode is returned unchanged, so it fails as JSON and is retried.
    """
    for name, value in headers:
        if name.lower() == b"content-encoding":
            coding = value.strip().lower()
            try:
                if coding in (b"gzip", b"x-gzip"):
                    return zlib.decompress(body, _GZIP_WINDOW)
                if coding == b"deflate":
                    return _inflate(body)
            except zlib.error:
                return body
    return body


def _inflate(body: bytes) -> bytes:
    """Decode ``deflate``: zlib-wrapped as the RFC says, or raw as some servers send it."""
    try:
        return zlib.decompress(body)
    except zlib.error:
        return zlib.decompress(body, -zlib.MAX_WBITS)


class StatusError(Exception):
    """An HTTP error status, with the server's message and headers."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.headers = headers


def error_message(body: bytes) -> str:
    """Return the message of an error body: ``error.message`` of its JSON, else its text."""
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:300] or "(no message)"
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:300]


def classify(exc: Exception) -> Classified | None:
    """Sort what an attempt raised into retryable and fatal failures."""
    if isinstance(exc, BackendError):
        return exc, None
    if isinstance(exc, TimeoutError):
        return RetryableBackendError("The request timed out."), None
    if isinstance(exc, StatusError):
        if exc.status in _RETRYABLE_STATUS or exc.status >= 500:
            return RetryableBackendError(str(exc)), parse_retry_after(exc.headers)
        return FatalBackendError(str(exc)), None
    http = core()
    if isinstance(exc, http.TimeoutException):
        return RetryableBackendError("The request timed out."), None
    if isinstance(exc, (http.UnsupportedProtocol, http.LocalProtocolError)):
        return FatalBackendError(f"The request cannot be sent ({exc})."), None
    if isinstance(exc, (http.NetworkError, http.ProtocolError, http.ProxyError)):
        return RetryableBackendError(f"The connection failed ({type(exc).__name__}: {exc})."), None
    return None
