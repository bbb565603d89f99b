"""An ``httpcore`` network backend on plain asyncio streams that sends a request in one write.

``httpcore`` reaches the network through a *network backend*; on asyncio its
default goes through ``anyio``, which wraps every read and write in a cancel
scope and a timeout scope and rebuilds a dict of socket attributes whenever
the pool asks whether an idle connection was closed. It also writes a request
as two ``send`` calls (the header block, then the body), and on loopback each
``send`` wakes the server's process. This backend

- keeps what ``httpcore`` writes until it next reads (an HTTP/1.1 client
  always reads the response after writing the request) and sends it as one
  buffer: one ``send`` per request instead of two;
- reads and writes on asyncio streams, with a deadline only when ``httpcore``
  passes a timeout (the ``openai`` backend bounds each attempt itself);
- maps failures to ``httpcore``'s errors as its own backends do
  (``ConnectError``, ``ReadError``, ``WriteError`` and the timeout kinds), so
  the pool and the backend's retries see the same exceptions.

TLS goes through :meth:`asyncio.StreamWriter.start_tls` (Python 3.11+).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Iterable
from typing import Any

__all__ = ["AsyncioNetwork"]

_FLUSH_AT = 1 << 16  # bytes kept back at most before they are sent anyway
_Errors = dict[type[OSError], Any]
"""An OS error type → the ``httpcore`` error raised for it, most specific first."""


@contextlib.asynccontextmanager
async def _deadline(timeout: float | None, errors: _Errors) -> AsyncIterator[None]:
    """Run the block within ``timeout`` seconds (``None``: no deadline), mapping its errors."""
    try:
        async with asyncio.timeout(timeout):
            yield
    except OSError as exc:  # TimeoutError and ssl.SSLError are OSErrors too
        raise _mapped(exc, errors) from exc


def _mapped(exc: OSError, errors: _Errors) -> Exception:
    """Return the ``httpcore`` error for ``exc`` (the first type in ``errors`` it is)."""
    kind = next((new for old, new in errors.items() if isinstance(exc, old)), None)
    return exc if kind is None else kind(str(exc) or type(exc).__name__)


class AsyncioNetwork:
    """The network backend (``httpcore.AsyncNetworkBackend``'s methods) for one ``httpcore``.

    Args:
        http: The ``httpcore`` module whose errors are raised (``httpcore2``).
    """

    def __init__(self, http: Any) -> None:
        self._http = http

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> _Stream:
        """Open a TCP connection (``TCP_NODELAY`` is asyncio's default)."""
        http = self._http
        local = None if local_address is None else (local_address, 0)
        errors = {TimeoutError: http.ConnectTimeout, OSError: http.ConnectError}
        async with _deadline(timeout, errors):
            reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        _set_options(writer, socket_options)
        return _Stream(http, reader, writer)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> _Stream:
        """Open a Unix socket connection."""
        http = self._http
        errors = {TimeoutError: http.ConnectTimeout, OSError: http.ConnectError}
        async with _deadline(timeout, errors):
            reader, writer = await asyncio.open_unix_connection(path)
        _set_options(writer, socket_options)
        return _Stream(http, reader, writer)

    async def sleep(self, seconds: float) -> None:
        """Wait (between connection retries)."""
        await asyncio.sleep(seconds)


def _set_options(writer: asyncio.StreamWriter, options: Iterable[Any] | None) -> None:
    sock = writer.get_extra_info("socket")
    for option in options or ():
        sock.setsockopt(*option)


class _Stream:
    """One connection (``httpcore.AsyncNetworkStream``'s methods); writes go out on next read."""

    def __init__(
        self, http: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._http = http
        self._reader = reader
        self._writer = writer
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._read_errors = {TimeoutError: http.ReadTimeout, OSError: http.ReadError}
        self._write_errors = {TimeoutError: http.WriteTimeout, OSError: http.WriteError}

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Send what is held back, then return up to ``max_bytes`` (``b""`` at the end)."""
        if self._held:
            await self._flush(timeout)
        try:
            if timeout is None:  # the common case, without a timeout scope
                return await self._reader.read(max_bytes)
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except OSError as exc:
            raise _mapped(exc, self._read_errors) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Hold ``buffer`` back until the next read (or until 64 KiB are held)."""
        if buffer:
            self._held.append(buffer)
            self._held_bytes += len(buffer)
            if self._held_bytes >= _FLUSH_AT:
                await self._flush(timeout)

    async def _flush(self, timeout: float | None) -> None:
        data = b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        try:
            if self._writer.is_closing():
                raise ConnectionResetError("The connection is closed.")
            self._writer.write(data)
            async with asyncio.timeout(timeout):
                await self._writer.drain()
        except OSError as exc:
            raise _mapped(exc, self._write_errors) from exc

    async def aclose(self) -> None:
        """Close the connection (what is still held back is dropped)."""
        self._held.clear()
        self._writer.close()
        await asyncio.sleep(0)  # one loop turn: the transport closes its socket

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> _Stream:
        """Upgrade this connection to TLS in place and return it."""
        http = self._http
        if self._held:
            await self._flush(timeout)
        errors = {TimeoutError: http.ConnectTimeout, OSError: http.ConnectError}
        try:
            async with _deadline(timeout, errors):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except BaseException:
            await self.aclose()
            raise
        return self

    def get_extra_info(self, info: str) -> Any:
        """Answer ``httpcore``'s questions: ``ssl_object``, addresses, ``socket``, ``is_readable``.

        ``is_readable`` is asked of an idle connection: true once the server has
        closed it (the stream is at its end) or the transport is closing.
        """
        if info == "is_readable":
            return self._reader.at_eof() or self._writer.is_closing()
        names = {
            "ssl_object": "ssl_object",
            "client_addr": "sockname",
            "server_addr": "peername",
            "socket": "socket",
        }
        return self._writer.get_extra_info(names[info]) if info in names else None
