"""One event loop for the process's calls to servers, and one client and one limit per server on it.

The openai backend's blocking entry points
(:meth:`~realitycheck.backends.openai.OpenAIBackend.generate_each`,
:func:`~realitycheck.backends.openai._loglik.score_pairs`) run their coroutine
with :func:`run` on one background event loop, a daemon thread started on the
first call, instead of a fresh loop per batch. On that loop:

- one :class:`openai.AsyncOpenAI` per server (API root, key, concurrency,
  timeout) keeps its connections alive from one batch to the next, so a batch
  opens no connections the last one already had;
- one limit per server and model (an :class:`asyncio.Semaphore` of the
  backend's ``concurrency``) caps the calls in flight across every batch at
  once. A stage may hand the backend its next batch while the last one's
  replies are still being read and written (two threads, one loop): the next
  batch's calls wait on the same limit, so the server never sees more than
  ``concurrency`` calls of that backend, and never fewer while there is work.

Called from any thread, inside a running event loop too (a notebook): the
caller's thread blocks until the work is done; an exception in it (Ctrl-C
too) cancels the work's calls, and :func:`cancel_calls` cancels every work
in flight (a stage stopped while another thread waits on a batch). After a
fork (``multiprocessing``, a Ray worker) the child starts its own loop on first
use, since threads do not survive a fork. The clients are closed when the process exits.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["Pool", "cancel_calls", "pool_here", "run", "start_soon"]

T = TypeVar("T")
_CLOSE_SECONDS = 5.0  # how long the exit waits for the clients to close


class Pool:
    """One server's client and the limit on its calls in flight, on the shared loop.

    Attributes:
        client: The SDK client (:func:`~realitycheck.backends.openai._client.make_client`).
        limit: At most ``concurrency`` holders at once.
    """

    def __init__(self, client: Any, concurrency: int) -> None:
        self.client = client
        self.limit = asyncio.Semaphore(concurrency)


class _Loop:
    """The background event loop of this process and the pools on it."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.pools: dict[tuple[Any, ...], Pool] = {}
        self.running: set[concurrent.futures.Future[Any]] = set()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="realitycheck-calls", daemon=True
        )
        self.thread.start()

    def run(self, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
        with _lock:  # registered before it can start: a cancel() now sees it
            future = asyncio.run_coroutine_threadsafe(work(), self.loop)
            self.running.add(future)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # a failure here or Ctrl-C: stop the work's calls too
            raise
        finally:
            with _lock:
                self.running.discard(future)

    def cancel(self) -> int:
        with _lock:
            running = list(self.running)
        return sum(future.cancel() for future in running)

    async def _close_pools(self) -> None:
        pools, self.pools = list(self.pools.values()), {}
        for pool in pools:
            try:
                await pool.client.close()
            except Exception:  # noqa: BLE001 - closing at exit; the process is leaving anyway
                pass

    def close(self) -> None:
        if os.getpid() != self.pid or not self.thread.is_alive():
            return
        future = asyncio.run_coroutine_threadsafe(self._close_pools(), self.loop)
        try:
            future.result(timeout=_CLOSE_SECONDS)
        except Exception:  # noqa: BLE001 - a slow close must not hold the exit
            future.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=_CLOSE_SECONDS)


_lock = threading.Lock()
_current: _Loop | None = None


def _shared() -> _Loop:
    global _current
    with _lock:
        if _current is None or _current.pid != os.getpid():
            _current = _Loop()
        return _current


def run(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Return what ``work()`` gives, run on the shared loop; the calling thread waits for it."""
    return _shared().run(work)


def start_soon(fn: Callable[[], object]) -> None:
    """Call ``fn()`` on the shared loop's thread soon, without waiting; what it raises is dropped.

    For set-up that may run ahead of the first call (importing the SDK while
    the data loads); the first call then finds it done, or does it itself.
    """

    def quietly() -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - the first real call reports the same problem
            pass

    _shared().loop.call_soon_threadsafe(quietly)


def cancel_calls() -> int:
    """Cancel every work running on the shared loop, whichever thread waits for it; return how many.

    A stage stopped by Ctrl-C (or a failed batch) calls this so that a batch
    another thread handed over stops its calls too instead of running to its end;
    the waiting threads see :class:`concurrent.futures.CancelledError`.
    """
    current = _current
    if current is None or current.pid != os.getpid():
        return 0
    return current.cancel()


def pool_here(key: tuple[Any, ...], make: Callable[[], Any], concurrency: int) -> Pool | None:
    """Return the pool for ``key`` on the shared loop (made by ``make()`` once); elsewhere ``None``.

    ``key`` names the server, the client's settings and the limit (it holds
    ``concurrency``); code on another loop (:meth:`agenerate` on the caller's
    own) gets ``None`` and makes its own client.
    """
    current = _current
    if current is None or current.pid != os.getpid():
        return None
    try:
        if asyncio.get_running_loop() is not current.loop:
            return None
    except RuntimeError:
        return None
    pool = current.pools.get(key)
    if pool is None:
        pool = current.pools[key] = Pool(make(), concurrency)
    return pool


@atexit.register
def _close_at_exit() -> None:
    current = _current
    if current is not None:
        current.close()
