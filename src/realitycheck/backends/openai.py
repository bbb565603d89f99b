"""The ``openai`` backend: any OpenAI-compatible endpoint through the official SDK.

Covers OpenAI, vLLM's server, Ollama, llama.cpp's server and TGI. Requests go
out concurrently (``concurrency`` at a time, one event loop), each with its own
deadline (``timeout``). Rate limits (429), server errors (5xx, 408, 409),
timeouts, dropped connections and malformed response bodies are retried with
exponential backoff and full jitter, waiting at least what a ``Retry-After``
header asks (:mod:`realitycheck.backends._retry`); the SDK's own retries are
switched off so these are the only ones. A request that still fails, or fails
for good (400, 401, 403, 404, 422), becomes a :class:`Generation` with
``error`` set: one bad request never loses the other answers.

Calls go through the SDK client's ``post`` (its documented way to reach an
endpoint without the typed wrappers) and the body is read as plain JSON
(:mod:`realitycheck.backends._openai_parse`): that skips the SDK's per-call
parameter transformation and model building, which are most of its CPU cost
at high concurrency, and reads servers that add or omit optional fields alike.

The API key is read from the environment variable *named* by ``api_key_env``
at call time; it is never a parameter, so it never reaches a spec, a cache
key, the call cache or a run manifest.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import random
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

from realitycheck.backends._base import Backend, Generation, GenerationRequest, backend, require
from realitycheck.backends._cache import Usage, usage_of
from realitycheck.backends._openai_parse import Choice, assemble, parse_choices
from realitycheck.backends._retry import Classified, parse_retry_after, retrying
from realitycheck.errors import (
    BackendError,
    FatalBackendError,
    InvalidInputError,
    MissingDependencyError,
    RetryableBackendError,
)

__all__ = ["DEFAULT_BASE_URL", "OpenAIBackend"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MODES = ("chat", "completions")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NO_KEY = "no-key"  # what a server that needs no key receives
WORKERS_PER_CLIENT = 16
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_REFUSAL = re.compile(r"logprob.*(not support|unsupported|not allowed|disabled|unavailable)", re.I)
logger = logging.getLogger(__name__)
_not_in_key: dict[str, Any] = {"in_key": False}


@backend("openai")
@dataclass(frozen=True, kw_only=True)
class OpenAIBackend(Backend):
    """An OpenAI-compatible HTTP endpoint (chat or completions API).

    Decoding maps to the API as follows: ``greedy`` sends temperature 0;
    ``sampling``, ``top_p`` and ``top_k`` send the request's temperature and,
    when not 1, its ``top_p``; ``top_k`` also sends ``top_k`` as an extra body
    field (vLLM and llama.cpp read it; OpenAI refuses it, which becomes an
    error record). Beam search and hidden states are not offered.

    In ``chat`` mode a request's ``prompt`` is sent as one user message; in
    ``completions`` mode requests must carry a ``prompt``. When a server
    returns fewer sequences than ``n`` (Ollama and llama.cpp ignore ``n``),
    the rest is asked for in further calls (with ``seed + k`` for the k-th
    extra call when a seed is set). When a server refuses token log-probs as
    unsupported, the request is answered without them and a warning is logged;
    detectors that need them then report the missing feature.

    Attributes:
        model: The model name the server knows.
        base_url: The API root; ``""`` means ``$OPENAI_BASE_URL``, else OpenAI's.
            Resolved when the backend is built, so the spec names the real server.
        mode: ``"chat"`` (``/chat/completions``) or ``"completions"`` (``/completions``).
        api_key_env: The NAME of the environment variable holding the API key.
        concurrency: Most requests in flight at once.
        timeout: Seconds one attempt may take before it is abandoned and retried.
        max_retries: Retries per request after the first attempt.
        backoff: Backoff base delay in seconds (the wait ceiling doubles per retry).
        price_per_1k: Price per 1,000 prompt tokens and per 1,000 completion tokens.
    """

    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"chat", "completion", "n", "logprobs", "top_logprobs"}
    )

    model: str
    base_url: str = ""
    mode: str = "chat"
    api_key_env: str = field(default="OPENAI_API_KEY", metadata=_not_in_key)
    concurrency: int = field(default=8, metadata=_not_in_key)
    timeout: float = field(default=60.0, metadata=_not_in_key)
    max_retries: int = field(default=6, metadata=_not_in_key)
    backoff: float = field(default=1.0, metadata=_not_in_key)
    price_per_1k: tuple[float, float] = field(default=(0.0, 0.0), metadata=_not_in_key)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise InvalidInputError(
                "The 'model' parameter of openai must be a non-empty string. "
                f"Got {self.model!r} instead."
            )
        if self.mode not in MODES:
            raise InvalidInputError(
                f"The 'mode' parameter of openai must be one of {MODES}. Got {self.mode!r} instead."
            )
        if not isinstance(self.api_key_env, str) or not _ENV_NAME.match(self.api_key_env):
            # Never echo the value: a key pasted here by mistake must not reach a log.
            raise InvalidInputError(
                "The 'api_key_env' parameter of openai must be the NAME of an environment "
                "variable (letters, digits, underscores), not the key itself. Got a value "
                "that is not a variable name instead."
            )
        _check_number(self.concurrency, "concurrency", minimum=1, integer=True)
        _check_number(self.max_retries, "max_retries", minimum=0, integer=True)
        _check_number(self.timeout, "timeout", minimum=0, strict=True)
        _check_number(self.backoff, "backoff", minimum=0)
        prices = self.price_per_1k
        if not isinstance(prices, tuple | list) or len(prices) != 2:
            raise InvalidInputError(
                "The 'price_per_1k' parameter of openai must be a pair (prompt, completion). "
                f"Got {prices!r} instead."
            )
        for price in prices:
            _check_number(price, "price_per_1k", minimum=0)
        object.__setattr__(self, "price_per_1k", (float(prices[0]), float(prices[1])))
        url = self.base_url or os.environ.get("OPENAI_BASE_URL", "") or DEFAULT_BASE_URL
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInputError(
                "The 'base_url' parameter of openai must be an http(s) URL such as "
                f"'http://127.0.0.1:8000/v1'. Got {url!r} instead."
            )
        if parts.password or parts.username:
            raise InvalidInputError(
                "The 'base_url' parameter of openai must not carry credentials; put the key "
                "in the environment variable named by 'api_key_env'."
            )
        object.__setattr__(self, "base_url", url.rstrip("/"))

    def usage(self, generations: Sequence[Generation]) -> Usage:
        """Return the tokens and cost of the generations this run paid for, at these prices."""
        return usage_of(generations, price_per_1k=self.price_per_1k)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Answer each request, in order (see :meth:`generate_each`)."""
        return self.generate_each(requests)

    def generate_each(
        self,
        requests: Sequence[GenerationRequest],
        on_result: Callable[[int, Generation], None] | None = None,
    ) -> list[Generation]:
        """Answer each request, calling ``on_result(index, generation)`` as each finishes.

        Runs its own event loop; called from inside a running loop, it runs
        that loop in a helper thread (use :meth:`agenerate` to stay on yours).

        Raises:
            InvalidInputError: A request asks for what this backend cannot do, or no API key
                is set for OpenAI's own endpoint (before any call).
            MissingDependencyError: The ``openai`` package is not installed.
        """
        requests = list(requests)
        self._check(requests)
        api_key = self._api_key()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._run(requests, on_result, api_key))
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self._run(requests, on_result, api_key)).result()

    async def agenerate(
        self,
        requests: Sequence[GenerationRequest],
        on_result: Callable[[int, Generation], None] | None = None,
    ) -> list[Generation]:
        """Async form of :meth:`generate_each`, on the caller's event loop."""
        requests = list(requests)
        self._check(requests)
        return await self._run(requests, on_result, self._api_key())

    def _check(self, requests: list[GenerationRequest]) -> None:
        _sdk()
        for i, request in enumerate(requests):
            if not isinstance(request, GenerationRequest):
                raise InvalidInputError(
                    "The 'requests' parameter of openai.generate must hold GenerationRequest "
                    f"values. Got {type(request).__name__} at position {i} instead."
                )
            if request.decoding == "beam" or request.num_beams > 1:
                require({"beam"}, self, who=f"Request {i} (beam search)")
            if request.hidden_layers:
                require({"hidden"}, self, who=f"Request {i} (hidden_layers)")
            if self.mode == "completions" and request.messages:
                raise InvalidInputError(
                    f"Request {i} carries chat messages, but the openai backend is in "
                    "'completions' mode, which takes a prompt. Use mode='chat'."
                )

    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env, "")
        if key:
            return key
        if urlsplit(self.base_url).hostname == "api.openai.com":
            raise InvalidInputError(
                f"The openai backend needs an API key for {self.base_url}: set the environment "
                f"variable {self.api_key_env!r}."
            )
        return _NO_KEY

    async def _run(
        self,
        requests: list[GenerationRequest],
        on_result: Callable[[int, Generation], None] | None,
        api_key: str,
    ) -> list[Generation]:
        workers = min(self.concurrency, len(requests))
        # One SDK client per WORKERS_PER_CLIENT workers: the HTTP pool scans all its
        # connections on every request, so one pool for 128 workers costs O(128) per call.
        clients = [self._client(api_key) for _ in range(-(-workers // WORKERS_PER_CLIENT))]
        results: list[Generation] = [Generation() for _ in requests]
        pending = iter(enumerate(requests))
        rng = random.Random()

        async def worker(client: Any) -> None:
            for index, request in pending:
                generation = await self._answer(client, request, rng)
                results[index] = generation
                if on_result is not None:
                    on_result(index, generation)

        try:
            await asyncio.gather(*(worker(clients[k % len(clients)]) for k in range(workers)))
        finally:
            for client in clients:
                await client.close()
        return results

    def _client(self, api_key: str) -> Any:
        openai = _sdk()
        limits = type(openai.DEFAULT_CONNECTION_LIMITS)(  # a warm connection per worker
            max_connections=max(100, WORKERS_PER_CLIENT),
            max_keepalive_connections=WORKERS_PER_CLIENT,
        )
        return openai.AsyncOpenAI(
            api_key=api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,  # the retries are ours (see _retry)
            http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=self.timeout),
        )

    async def _answer(
        self, client: Any, request: GenerationRequest, rng: random.Random
    ) -> Generation:
        attempts = 0

        def count() -> None:
            nonlocal attempts
            attempts += 1

        with_logprobs = request.logprobs or request.top_logprobs > 0
        choices: list[Choice] = []
        usage: dict[str, int] = {}
        call = 0
        try:
            while len(choices) < request.n:
                args = self._arguments(request, request.n - len(choices), call, with_logprobs)
                try:
                    data = await retrying(
                        functools.partial(self._post, client, args),
                        classify=_classify,
                        max_retries=self.max_retries,
                        base=self.backoff,
                        rng=rng,
                        on_attempt=count,
                    )
                except FatalBackendError as exc:
                    if with_logprobs and _REFUSAL.search(str(exc)):
                        logger.warning(
                            "%s refused token log-probs (%s); answering without them.",
                            self.base_url,
                            str(exc)[:200],
                        )
                        with_logprobs = False
                        continue
                    raise
                got, got_usage = parse_choices(data, chat=self.mode == "chat")
                if not got:
                    raise FatalBackendError("The server answered with no choices.")
                choices.extend(got[: request.n - len(choices)])
                for name, value in got_usage.items():
                    usage[name] = usage.get(name, 0) + value
                call += 1
        except BackendError as exc:
            return Generation(
                error=f"{type(exc).__name__}: {exc}",
                retryable=isinstance(exc, RetryableBackendError),
                usage={"attempts": attempts},
            )
        return assemble(
            choices,
            usage={**usage, "attempts": attempts},
            logprobs=with_logprobs,
            top_logprobs=request.top_logprobs > 0,
        )

    def _arguments(
        self, request: GenerationRequest, n: int, call: int, with_logprobs: bool
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "n": n, "max_tokens": request.max_tokens}
        if self.mode == "chat":
            messages = [dict(m) for m in request.messages]
            args["messages"] = messages or [{"role": "user", "content": request.prompt}]
        else:
            args["prompt"] = request.prompt
        if request.decoding == "greedy":
            args["temperature"] = 0.0
        else:
            args["temperature"] = request.temperature
            if request.top_p != 1.0:
                args["top_p"] = request.top_p
            if request.decoding == "top_k":
                args["top_k"] = request.top_k
        if request.stop:
            args["stop"] = list(request.stop)
        if request.seed is not None:
            args["seed"] = request.seed + call
        if with_logprobs:
            if self.mode == "chat":
                args["logprobs"] = True
                if request.top_logprobs:
                    args["top_logprobs"] = request.top_logprobs
            else:
                args["logprobs"] = request.top_logprobs
        return args

    async def _post(self, client: Any, args: dict[str, Any]) -> Mapping[str, Any]:
        path = "/chat/completions" if self.mode == "chat" else "/completions"
        async with asyncio.timeout(self.timeout):
            body = await client.post(path, body=args, cast_to=bytes)
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise RetryableBackendError(f"The response is not valid JSON ({exc}).") from None
        if not isinstance(data, dict):
            raise RetryableBackendError(
                f"The response is JSON but not an object (got {type(data).__name__})."
            )
        return data


def _sdk() -> Any:
    try:
        import openai
    except ImportError:
        raise MissingDependencyError(
            "openai", extra="openai", purpose="The openai backend"
        ) from None
    return openai


def _classify(exc: Exception) -> Classified | None:
    """Sort what an attempt raised into retryable and fatal failures."""
    if isinstance(exc, BackendError):
        return exc, None
    if isinstance(exc, TimeoutError):
        return RetryableBackendError("The request timed out."), None
    openai = _sdk()
    if isinstance(exc, openai.APIStatusError):
        status = int(exc.status_code)
        message = f"HTTP {status}: {str(getattr(exc, 'message', exc))[:300]}"
        if status in _RETRYABLE_STATUS or status >= 500:
            return RetryableBackendError(message), parse_retry_after(exc.response.headers)
        return FatalBackendError(message), None
    if isinstance(exc, openai.APITimeoutError):
        return RetryableBackendError("The request timed out."), None
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return RetryableBackendError(
            f"The connection failed ({type(cause).__name__}: {cause})."
        ), None
    return None


def _check_number(
    value: object,
    name: str,
    *,
    minimum: float,
    integer: bool = False,
    strict: bool = False,
) -> None:
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    ok = isinstance(value, kinds) and not isinstance(value, bool)
    if ok and isinstance(value, int | float):
        ok = value > minimum if strict else value >= minimum
    if not ok:
        kind = "an int" if integer else "a number"
        sign = ">" if strict else ">="
        raise InvalidInputError(
            f"The {name!r} parameter of openai must be {kind} {sign} {minimum:g}. "
            f"Got {value!r} instead."
        )
