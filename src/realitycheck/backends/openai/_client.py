"""One call to an OpenAI-compatible API root through the ``openai`` SDK, and what its failure means.

The backend talks to servers through the SDK's :class:`openai.AsyncOpenAI`
client: one per server on the process's shared call loop
(:mod:`realitycheck.backends.openai._loop`), its connection pool sized to the
backend's ``concurrency`` and kept from one batch to the next, the SDK's own retries switched off
(``max_retries=0``) because :mod:`realitycheck.backends.openai._retry` retries with
its own backoff. Fields that are not part of OpenAI's API (``top_k``) travel
as the SDK's extra body fields (``extra_body``). The reply body is read as plain JSON
(:mod:`realitycheck.backends.openai._parse`), so servers that add or omit
optional fields read alike. The SDK is imported on the first call, never by
``import realitycheck``.

:class:`Classifier` sorts what one attempt raised. Rate limits (429), server
errors (5xx but 501 and 505), 408, 409, timeouts and dropped connections are
retryable; 400, 401, 403, 404, 422, 501 and 505 are fatal. A server error is
retryable however often it repeats: OpenAI's 500 says the same words every
time, so two in a row are a blip as often as a fault, and only a message
recognised as deterministic is final. Some replies say what the server
cannot do, and the backend adapts instead of failing:

- :class:`NCapped`: the server caps ``n`` (llama.cpp's ``llama-server``:
  "Field 'n': Value must be between 1 <= value <= 4");
- :class:`StructuredOutputRefused`: the server refuses, or cannot honour, the
  ``response_format`` sent. Only named refusals count: a 400 or 422 whose
  message names ``response_format``, ``json_schema``, ``json_object`` or a
  grammar, and the two recognised 500s of llama.cpp's servers
  (``llama-cpp-python``'s "Input should be 'text' or 'json_object'" for
  ``response_format.type``; ``llama-server``'s "output that does not match the
  expected [peg-native] format", which a deterministic reply repeats on every
  retry). Any other error that merely mentions a "format" keeps its class;
- :class:`LogprobsRefused`: the server refuses token log-probabilities;
- :class:`TopKRefused`: the server refuses the ``top_k`` field (fatal, named).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import os
import random
import re
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Protocol, TypeVar

from realitycheck.backends.openai._retry import Classified, parse_retry_after, retrying
from realitycheck.errors import (
    BackendError,
    FatalBackendError,
    InvalidInputError,
    MissingDependencyError,
    RetryableBackendError,
)

__all__ = [
    "CallSettings",
    "Classifier",
    "LogprobsRefused",
    "NCapped",
    "StructuredOutputRefused",
    "TopKRefused",
    "call",
    "call_each",
    "make_client",
    "post",
    "run_blocking",
    "sdk",
]

T = TypeVar("T")

_CHAT_FIELDS = frozenset(
    {"model", "messages", "n", "max_tokens", "temperature", "top_p", "stop", "seed"}
    | {"logprobs", "top_logprobs", "response_format"}
)
_COMPLETION_FIELDS = frozenset(
    {"model", "prompt", "n", "max_tokens", "temperature", "top_p", "stop", "seed"}
    | {"logprobs", "echo"}
)
_RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx but these:
_FINAL_5XX = frozenset({501, 505})  # not implemented, HTTP version: the same every time
_N_FIELD = re.compile(r"""['"`]n['"`]|\b(?:field|parameter)\s+n\b""", re.I)
_N_CAP = re.compile(r"(?:<=|at most|between 1 and|maximum(?: is| of)?)\s*(\d+)", re.I)
_TOP_K = re.compile(r"\btop_k\b", re.I)
_FORMAT_NAMED = re.compile(r"response_format|json_schema|json_object|\bgrammar\b", re.I)
_FORMAT_500 = re.compile(  # the 500s llama.cpp's servers answer a structured form with
    r"Input should be 'text' or 'json_object'"  # llama-cpp-python: json_schema refused
    r"|does not match the expected (?:[\w-]+ )?format",  # llama-server: reply off the grammar
    re.I,
)
_LOGPROBS_REFUSAL = re.compile(
    r"logprob.*(not support|unsupported|not allowed|disabled|unavailable)", re.I
)


class CallSettings(Protocol):
    """What the calls to one server need to know: the backend's settings, read only.

    :class:`~realitycheck.backends.openai.OpenAIBackend` is one; the modules
    that make calls take this instead of the backend, so they need not import it.
    """

    @property
    def model(self) -> str:
        """The model name the server knows."""
        ...

    @property
    def base_url(self) -> str:
        """The API root."""
        ...

    @property
    def mode(self) -> str:
        """``"chat"`` or ``"completions"``."""
        ...

    @property
    def concurrency(self) -> int:
        """Most calls in flight at once."""
        ...

    @property
    def timeout(self) -> float:
        """Seconds one attempt may take."""
        ...

    @property
    def max_retries(self) -> int:
        """Retries per call after the first attempt."""
        ...

    @property
    def backoff(self) -> float:
        """Backoff base delay in seconds."""
        ...


def sdk() -> Any:
    """Import and return the ``openai`` SDK (the ``openai`` extra).

    Raises:
        MissingDependencyError: The SDK is not installed.
    """
    try:
        return importlib.import_module("openai")
    except ImportError:
        raise MissingDependencyError(
            "openai", extra="openai", purpose="The openai backend"
        ) from None


def make_client(base_url: str, api_key: str, *, concurrency: int, timeout: float) -> Any:
    """Return an :class:`openai.AsyncOpenAI` for ``base_url`` with the SDK's retries off.

    Its connection pool keeps ``concurrency`` connections alive (one per request
    in flight); close it with ``await client.close()`` on the loop that used it.
    """
    openai = sdk()
    httpx = _httpx()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    try:  # proxies come from HTTPS_PROXY / HTTP_PROXY / ALL_PROXY / NO_PROXY
        http_client = openai.DefaultAsyncHttpxClient(limits=limits, verify=_tls_context(httpx))
    except ImportError as exc:  # a SOCKS proxy without the package that speaks it
        raise InvalidInputError(
            f"The environment names a proxy the openai SDK's HTTP client cannot use ({exc}). "
            "Unset it or add the host to NO_PROXY."
        ) from None
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key,
        max_retries=0,
        timeout=timeout,
        http_client=http_client,
    )


async def call_each(
    settings: CallSettings,
    api_key: str,
    count: int,
    work: Callable[[Any, int, random.Random], Awaitable[None]],
) -> None:
    """Await ``work(client, index, rng)`` for each index below ``count``.

    At most ``settings.concurrency`` run at once. On the process's shared loop
    (:mod:`realitycheck.backends.openai._loop`, where :func:`run_blocking`
    runs) the client and that limit are the server's, shared with every other
    batch in flight and kept for the next; elsewhere (a caller's own loop) the
    batch makes its own client (:func:`make_client`) and closes it when done.
    The retries' random source is the batch's. When one ``work`` raises, the
    others are cancelled and the exception is raised as itself.
    """
    from realitycheck.backends.openai import _loop

    rng = random.Random()
    key = (settings.base_url, settings.model, api_key, settings.concurrency, settings.timeout)
    pool = _loop.pool_here(
        key,
        lambda: make_client(
            settings.base_url,
            api_key,
            concurrency=settings.concurrency,
            timeout=settings.timeout,
        ),
        settings.concurrency,
    )
    if pool is not None:
        shared = pool

        async def limited(index: int) -> None:
            async with shared.limit:
                await work(shared.client, index, rng)

        tasks = [asyncio.ensure_future(limited(index)) for index in range(count)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return
    workers = min(settings.concurrency, count)
    client = make_client(settings.base_url, api_key, concurrency=workers, timeout=settings.timeout)
    pending = iter(range(count))

    async def worker() -> None:
        for index in pending:
            await work(client, index, rng)

    try:
        await asyncio.gather(*(worker() for _ in range(workers)))
    finally:
        await client.close()


def run_blocking(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Return what ``work()`` gives, run on the process's shared call loop.

    The calling thread waits (:func:`realitycheck.backends.openai._loop.run`);
    it may be inside a running loop of its own.
    """
    from realitycheck.backends.openai import _loop

    return _loop.run(work)


def _tls_context(httpx: Any) -> Any:
    """The HTTP client's default TLS context, made once per process for each CA setting.

    The client would make one of its own (reading the CA files, 29 ms of CPU
    measured) for every server, every process. It is the context the client makes
    by default (``httpx.create_ssl_context()``, which reads ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR``), and one context serves any number of connections; it is
    made again when either variable changes.
    """
    setting = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _TLS_LOCK:
        if setting not in _TLS:
            _TLS[setting] = httpx.create_ssl_context()
        return _TLS[setting]


_TLS: dict[tuple[str | None, str | None], Any] = {}
_TLS_LOCK = threading.Lock()


@functools.cache
def _httpx() -> Any:
    """The SDK's HTTP client module, installed with it: ``httpx2`` in SDK 3, ``httpx`` before."""
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")


async def post(client: Any, args: Mapping[str, Any], *, chat: bool, timeout: float) -> dict:
    """Make one call (one attempt) and return the reply body as a JSON object.

    The call goes through the client's documented way of posting a body as it
    is (``client.post(path, cast_to=httpx.Response, body=...)``): the SDK's
    headers, authentication, connection pool and error mapping, without its
    per-call parameter transformation and response models (about a fifth of
    its client CPU per call), since the body is read as plain JSON anyway.
    Fields outside OpenAI's API travel as the SDK's extra body fields; the
    attempt is abandoned after ``timeout`` seconds.

    Raises:
        RetryableBackendError: The reply is not a JSON object.
        Exception: What the SDK raised, unchanged (see :class:`Classifier`).
    """
    known = _CHAT_FIELDS if chat else _COMPLETION_FIELDS
    standard = {k: v for k, v in args.items() if k in known}
    extra = {k: v for k, v in args.items() if k not in known}
    options: dict[str, Any] = {"extra_json": extra} if extra else {}
    path = "/chat/completions" if chat else "/completions"
    async with asyncio.timeout(timeout):
        reply = await client.post(path, cast_to=_httpx().Response, body=standard, options=options)
    body = await reply.aread()
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise RetryableBackendError(f"The response is not valid JSON ({exc}).") from None
    if not isinstance(data, dict):
        raise RetryableBackendError(
            f"The response is JSON but not an object (got {type(data).__name__})."
        )
    return data


async def call(
    settings: CallSettings,
    client: Any,
    args: Mapping[str, Any],
    *,
    chat: bool,
    rng: random.Random,
    on_attempt: Callable[[], None] | None = None,
) -> dict:
    """Make one call with the backend's retries and return the reply body (see :func:`post`).

    Each attempt's failure is sorted by a :class:`Classifier` of ``args``;
    ``on_attempt`` is called before each attempt.

    Raises:
        BackendError: The call failed for good, or after the retries.
    """
    return await retrying(
        functools.partial(post, client, args, chat=chat, timeout=settings.timeout),
        classify=Classifier(args),
        max_retries=settings.max_retries,
        base=settings.backoff,
        rng=rng,
        on_attempt=on_attempt,
    )


class NCapped(FatalBackendError):
    """The server refuses this many sequences per call; ``cap`` is the most it takes."""

    def __init__(self, message: str, cap: int) -> None:
        super().__init__(message)
        self.cap = cap


class StructuredOutputRefused(FatalBackendError):
    """The server refused, or could not honour, the ``response_format`` sent."""


class LogprobsRefused(FatalBackendError):
    """The server refused token log-probabilities."""


class TopKRefused(FatalBackendError):
    """The server refuses the ``top_k`` field."""


def status_message(exc: Any) -> str:
    """Return the server's message from an SDK status error (``error.message`` of its body)."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        body = body.get("message", body)
    text = str(body) if body is not None else str(getattr(exc, "message", exc))
    return text.strip()[:300] or "(no message)"


class Classifier:
    """Sort what the attempts of one call raised into retryable and fatal failures.

    Args:
        args: The call's body (what was asked decides what a refusal means).
    """

    def __init__(self, args: Mapping[str, Any]) -> None:
        self._args = args

    def __call__(self, exc: Exception) -> Classified | None:
        """Return ``(error, retry_after)`` for ``exc``; ``None`` when it is not a call failure."""
        if isinstance(exc, BackendError):
            return exc, None
        if isinstance(exc, TimeoutError):
            return RetryableBackendError("The request timed out."), None
        openai = sdk()
        if isinstance(exc, openai.APITimeoutError):
            return RetryableBackendError("The request timed out."), None
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return RetryableBackendError(
                f"The connection failed ({type(cause).__name__}: {cause})."
            ), None
        if isinstance(exc, openai.APIStatusError):
            return self._status(exc.status_code, status_message(exc), exc.response.headers)
        return None

    def _status(self, status: int, message: str, headers: Any) -> Classified:
        text = f"HTTP {status}: {message}"
        refusal = self._refusal(status, message, text)
        if refusal is not None:
            return refusal, None
        if status in _RETRYABLE_STATUS or (status >= 500 and status not in _FINAL_5XX):
            return RetryableBackendError(text), parse_retry_after(dict(headers.items()))
        return FatalBackendError(text), None

    def _refusal(self, status: int, message: str, text: str) -> BackendError | None:
        args = self._args
        refusing = status in (400, 422)
        if refusing and int(args.get("n", 1)) > 1 and _N_FIELD.search(message):
            caps = [int(c) for c in _N_CAP.findall(message) if 0 < int(c) < int(args["n"])]
            return NCapped(text, max(caps) if caps else 1)
        if refusing and "top_k" in args and _TOP_K.search(message):
            return TopKRefused(
                f"The server refuses the 'top_k' parameter ({text}). Use decoding 'top_p' or "
                "'sampling' with this server; the same request will fail again."
            )
        if "response_format" in args and (
            (refusing and (_FORMAT_NAMED.search(message) or _FORMAT_500.search(message)))
            or (status == 500 and _FORMAT_500.search(message))
        ):
            return StructuredOutputRefused(text)
        if refusing and args.get("logprobs") and _LOGPROBS_REFUSAL.search(message):
            return LogprobsRefused(text)
        return None
