"""The ``openai`` backend: any OpenAI-compatible endpoint, spoken to over plain HTTP.

Covers OpenAI, vLLM's server, Ollama, llama.cpp's server and TGI. Requests go
out concurrently (``concurrency`` at a time, one event loop), each with its own
deadline (``timeout``). Rate limits (429), server errors (5xx, 408, 409),
timeouts, dropped connections and malformed response bodies are retried with
exponential backoff and full jitter, waiting at least what a ``Retry-After``
header asks (:mod:`realitycheck.backends._retry`); the SDK's own retries are
switched off so these are the only ones. A request that still fails, or fails
for good (400, 401, 403, 404, 422), becomes a :class:`Generation` with
``error`` set: one bad request never loses the other answers.

Calls are posted as JSON straight onto ``httpcore`` connection pools, the
layer under ``httpx`` (both installed with ``openai``), one pool per 16
requests in flight, over an asyncio network backend that sends each request
in one write (:mod:`realitycheck.backends._openai_http`,
:mod:`realitycheck.backends._openai_net`); the body is read as plain JSON
(:mod:`realitycheck.backends._openai_parse`), so servers that add or omit
optional fields read alike. That skips the SDK's per-call request building,
parameter transformation and model building, ``httpx``'s client layer (URL
and header merging, cookies, auth and redirect handling, response models)
and ``anyio``'s scopes around every read and write: at concurrency 32
against a local server the client spends about half the CPU per request of
a plain ``httpx`` script posting the same bodies
(``benchmarks/openai_throughput.py``). Error bodies are read the way the SDK
reads them (``{"error": {"message": …}}``). The SDK itself is never imported
(only checked for, as the extra that pins the HTTP stack): importing it took
1-3 s of every CLI run. All ``https`` pools share one TLS context, because
building one reads the CA bundle (about 45 ms) and the generation stage makes
fresh pools for every stored batch.

The API key is read from the environment variable *named* by ``api_key_env``
at call time; it is never a parameter, so it never reaches a spec, a cache
key, the call cache or a run manifest.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import json
import logging
import math
import os
import random
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from realitycheck.backends._base import (
    REQUESTS,
    Backend,
    Generation,
    GenerationRequest,
    backend,
    require,
)
from realitycheck.backends._cache import Usage, usage_of
from realitycheck.backends._openai_http import (
    JsonPools,
    StatusError,
    classify,
    error_message,
    header_map,
)
from realitycheck.backends._openai_parse import Choice, assemble, parse_choices
from realitycheck.backends._retry import retrying
from realitycheck.errors import (
    BackendError,
    FatalBackendError,
    InvalidInputError,
    MissingDependencyError,
    RetryableBackendError,
)
from realitycheck.params import (
    Constraint,
    EnvVarName,
    Interval,
    NonEmptyStr,
    OneOf,
    SequenceOf,
    as_tuple,
    check_arg,
    param,
    required,
)

__all__ = ["DEFAULT_BASE_URL", "OpenAIBackend"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "OPENAI_BASE_URL"
Mode = Literal["chat", "completions"]
_NO_KEY = "no-key"  # what a server that needs no key receives
_HEADER_SAFE = re.compile(r"[\x20-\x7e\x80-\xff]*")  # visible Latin-1 and spaces
_REFUSAL = re.compile(r"logprob.*(not support|unsupported|not allowed|disabled|unavailable)", re.I)
logger = logging.getLogger(__name__)


def _resolve_base_url(value: Any) -> Any:
    """Return the API root: ``""`` means ``$OPENAI_BASE_URL``, else OpenAI's; no trailing ``/``."""
    if value == "":
        value = os.environ.get(BASE_URL_ENV, "") or DEFAULT_BASE_URL
    return value.rstrip("/") if isinstance(value, str) else value


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    return parts._replace(netloc=f"***@{parts.hostname or ''}").geturl()


class _HttpUrl(Constraint):
    """An http(s) URL with a host and without credentials (a rejected one is shown redacted)."""

    def accepts(self, value: Any) -> bool:
        """Return whether ``value`` is such a URL."""
        if not isinstance(value, str):
            return False
        parts = urlsplit(value)
        return (
            parts.scheme in ("http", "https")
            and bool(parts.hostname)
            and parts.username is None
            and parts.password is None
        )

    def describe(self) -> str:
        """Return what is accepted, with an example."""
        return (
            "an http(s) URL such as 'http://127.0.0.1:8000/v1', without credentials (put the "
            "key in the environment variable named by 'api_key_env')"
        )

    def shown(self, value: Any) -> str:
        """Show the value with any user name and password replaced by ``***``."""
        return repr(_redacted(value)) if isinstance(value, str) else super().shown(value)

    def hint(self, value: Any) -> str:
        """Say where the URL came from when it was read from the environment."""
        from_env = os.environ.get(BASE_URL_ENV, "").rstrip("/")
        if isinstance(value, str) and from_env and value == from_env:
            return f"It was read from ${BASE_URL_ENV}: {_redacted(value)!r}."
        return ""


def _prices(value: Any) -> Any:
    """Return the two prices as floats when they are numbers, else the value unchanged."""
    items = as_tuple(value)
    if isinstance(items, tuple) and all(Interval(float).accepts(p) for p in items):
        return tuple(float(p) for p in items)
    return value


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
    extra call when a seed is set). A request's ``json_schema`` is sent as a
    ``response_format`` of type ``json_schema`` (chat mode; OpenAI, vLLM and
    llama.cpp servers constrain the reply to it). When a server refuses token log-probs as
    unsupported, the request is answered without them and a warning is logged;
    detectors that need them then report the missing feature. In
    ``completions`` mode :meth:`loglik_tokens` scores fixed continuations
    from echoed prompt log-probs (``echo=True, max_tokens=0``).

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
        {"chat", "completion", "n", "logprobs", "top_logprobs", "json_schema", "loglik"}
    )

    model: str = required(NonEmptyStr())
    base_url: str = param("", _HttpUrl(), convert=_resolve_base_url)
    mode: Mode = param("chat", OneOf(Mode))
    # Never a secret's value: EnvVarName refuses one without echoing it.
    api_key_env: str = param("OPENAI_API_KEY", EnvVarName(), in_key=False)
    concurrency: int = param(8, Interval(int, 1), in_key=False)
    timeout: float = param(60.0, Interval(float, 0, closed="neither"), in_key=False)
    max_retries: int = param(6, Interval(int, 0), in_key=False)
    backoff: float = param(1.0, Interval(float, 0), in_key=False)
    price_per_1k: tuple[float, float] = param(
        (0.0, 0.0), SequenceOf(Interval(float, 0), length=2), convert=_prices, in_key=False
    )

    def usage(self, generations: Sequence[Generation]) -> Usage:
        """Return the tokens and cost of the generations this run paid for, at these prices."""
        return usage_of(generations, price_per_1k=self.price_per_1k)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Answer each request, in order (see :meth:`generate_each`)."""
        return self.generate_each(requests)

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Return ``log p(continuation | prompt)`` for each pair (see :meth:`loglik_tokens`)."""
        return [math.fsum(values) for values in self.loglik_tokens(pairs)]

    def loglik_tokens(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, ...]]:
        """Return each continuation token's log-probability, echoed by ``/completions``.

        Only in ``completions`` mode (:mod:`realitycheck.backends._openai_loglik`).

        Raises:
            InvalidInputError: In ``chat`` mode, before any call.
            BackendError: A call failed after the retries.
        """
        from realitycheck.backends._openai_loglik import score_pairs

        if self.mode != "completions":
            raise InvalidInputError(
                "The openai backend scores continuations only in mode='completions' (the "
                "chat API does not echo prompt log-probabilities). Got mode='chat'."
            )
        _sdk()
        return score_pairs(self, list(pairs), self._api_key())

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
        check_arg(requests, REQUESTS, name="requests", owner="openai.generate")
        for i, request in enumerate(requests):
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
        if key and not _HEADER_SAFE.fullmatch(key):
            raise InvalidInputError(  # never echo the value: it is a secret
                f"The API key in the environment variable {self.api_key_env!r} has characters "
                "an HTTP header cannot carry (a line break, a control character or one "
                "outside Latin-1); check how it was set."
            )
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
        pools = self._pools(api_key, workers)
        results: list[Generation] = [Generation() for _ in requests]
        pending = iter(enumerate(requests))
        rng = random.Random()

        async def worker(slot: int) -> None:
            for index, request in pending:
                generation = await self._answer(pools, slot, request, rng)
                results[index] = generation
                if on_result is not None:
                    on_result(index, generation)

        try:
            await asyncio.gather(*(worker(k) for k in range(workers)))
        finally:
            await pools.aclose()
        return results

    def _pools(self, api_key: str, workers: int) -> JsonPools:
        """Return connection pools for ``workers`` requests in flight (one per 16 of them)."""
        https = urlsplit(self.base_url).scheme == "https"
        return JsonPools(
            self.base_url, api_key, workers=workers, ssl_context=_tls_context() if https else None
        )

    async def _answer(
        self, pools: JsonPools, slot: int, request: GenerationRequest, rng: random.Random
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
                        functools.partial(self._post, pools, slot, args),
                        classify=classify,
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
        if request.json_schema and self.mode == "chat":
            schema = json.loads(request.json_schema)
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema, "strict": True},
            }
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

    async def _post(self, pools: JsonPools, slot: int, args: dict[str, Any]) -> Mapping[str, Any]:
        """Post one call on worker ``slot``'s pool; return the body (one attempt, no retry)."""
        path = "chat/completions" if self.mode == "chat" else "completions"
        async with asyncio.timeout(self.timeout):
            status, headers, body = await pools.post(slot, path, json.dumps(args).encode("utf-8"))
        if status >= 400:
            raise StatusError(status, error_message(body), header_map(headers))
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise RetryableBackendError(f"The response is not valid JSON ({exc}).") from None
        if not isinstance(data, dict):
            raise RetryableBackendError(
                f"The response is JSON but not an object (got {type(data).__name__})."
            )
        return data


def _sdk() -> None:
    """Check that the ``openai`` extra is installed, without importing the SDK (~1-3 s).

    The backend never calls the SDK; the extra pins the HTTP client it is built on.
    """
    try:
        found = importlib.util.find_spec("openai") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingDependencyError("openai", extra="openai", purpose="The openai backend")


@functools.cache
def _tls_context() -> Any:
    """The verifying TLS context all ``https`` pools share (CA bundle per ``httpx``'s defaults).

    Building one reads the CA bundle (about 45 ms); the generation stage calls
    the backend once per stored batch, each call with fresh pools, so a
    context per pool cost seconds per thousand requests.
    """
    _sdk()
    return importlib.import_module("httpx2").create_ssl_context()
