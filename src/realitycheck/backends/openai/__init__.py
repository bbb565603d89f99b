"""The ``openai`` backend: any OpenAI-compatible endpoint, through the ``openai`` SDK.

Covers OpenAI, vLLM's server, Ollama, llama.cpp's servers, TGI and
``transformers serve``. Calls go through the SDK's :class:`openai.AsyncOpenAI`
(imported on the first call, never by ``import realitycheck``): one client
per server on the process's shared call loop, ``concurrency`` calls in flight
at most across every batch at once (:mod:`._loop`), each
attempt with its own deadline (``timeout``). Rate limits (429), server errors
(5xx, 408, 409), timeouts, dropped connections and malformed response bodies
are retried with exponential backoff and full jitter, waiting at least what a
``Retry-After`` header asks (:mod:`realitycheck.backends.openai._retry`); the SDK's
own retries are switched off so these are the only ones. A request that still
fails, or fails for good (400, 401, 403, 404, 422, 501, 505, or a server
error recognised as deterministic), becomes a :class:`Generation` with
``error`` set: one bad request never loses the other answers
(:mod:`._client`). A generic server error is retried however often it
repeats, at any temperature.

What the server really does is checked on every reply
(:mod:`._server`): a feature asked for and not given back (token
log-probs, next-token alternatives, a reply that follows the JSON Schema) is
named in ``Generation.unsupported`` with one warning per server, model and
feature. Answers without the log-probs or alternatives asked for are not
cached as complete; a reply that did not follow the schema is (it is still
read: a judge reads its conclusion and records ``schema_followed=false``). A
server that ignores or caps
``n`` gets the rest asked for in further calls; one that refuses
``response_format`` of type ``json_schema`` is sent ``json_object`` with the
schema beside it (``llama-cpp-python``'s server follows that), then plain
``json_object``, then plain text, for the rest of the run (:mod:`._answer`).

The API key is read from the environment variable *named* by ``api_key_env``
at call time; it is never a parameter, so it never reaches a spec, a cache
key, the call cache or a run manifest.
"""

from __future__ import annotations

import math
import os
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from realitycheck.backends import (
    REQUESTS,
    Backend,
    Generation,
    GenerationRequest,
    Usage,
    backend,
    require,
    server_name,
    usage_of,
)
from realitycheck.errors import InvalidInputError
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


def _resolve_base_url(value: Any) -> Any:
    """Return the API root: ``""`` means ``$OPENAI_BASE_URL``, else OpenAI's; no trailing ``/``."""
    if value == "":
        value = os.environ.get(BASE_URL_ENV, "") or DEFAULT_BASE_URL
    return value.rstrip("/") if isinstance(value, str) else value


def _is_openai(url: str) -> bool:
    """Whether ``url`` is OpenAI's own endpoint (it needs a key and refuses ``top_k``)."""
    return urlsplit(url).hostname == "api.openai.com"


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
    when not 1, its ``top_p``; ``top_k`` also sends ``top_k`` in the SDK's
    ``extra_body`` (vLLM and llama.cpp read it). OpenAI's own endpoint refuses
    ``top_k``, so such requests fail before any call; a server that answers a
    ``top_k`` with a 400 or 422 naming it gives a fatal, non-retryable error
    naming the cause, and later requests with ``top_k`` to it in this process
    get the same error without a call (each is a failed request: the other
    answers stand). Beam search and hidden states are not offered.

    In ``chat`` mode a request's ``prompt`` is sent as one user message; in
    ``completions`` mode requests must carry a ``prompt``. When a server
    returns fewer sequences than ``n`` (Ollama and ``transformers serve``
    ignore ``n``) or caps ``n`` (``llama-server``), the rest is asked for in
    further calls (with ``seed + k`` for the k-th call when a seed is set);
    ``usage["calls"]`` counts them all. A request's ``json_schema`` is sent as
    a ``response_format`` of type ``json_schema`` (chat mode); a server that
    refuses it is sent ``json_object`` with the schema beside it, then plain
    ``json_object``, then plain text. Every reply is checked against the
    schema, whatever form was sent; one that did not follow it is named
    ``json_schema`` in ``unsupported`` (one warning per server and model) and
    is still cached, since it is read as it is. Token log-probs are
    asked for in chat mode with ``logprobs`` and ``top_logprobs`` (at least 1:
    ``llama-cpp-python``'s server returns none without it). When a server
    refuses or ignores log-probs, the request is answered without them, a
    warning names the server, the model and the field, and the generation
    says so in ``unsupported``. In ``completions`` mode :meth:`loglik_tokens`
    scores fixed continuations from echoed prompt log-probs.

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
    remote: ClassVar[bool] = True

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

    def warm_up(self) -> None:
        """Import the ``openai`` SDK on the shared call loop's thread while the caller goes on."""
        from realitycheck.backends.openai import _loop
        from realitycheck.backends.openai._client import sdk

        _loop.start_soon(sdk)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Answer each request, in order (see :meth:`generate_each`)."""
        return self.generate_each(requests)

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Return ``log p(continuation | prompt)`` for each pair (see :meth:`loglik_tokens`)."""
        return [math.fsum(values) for values in self.loglik_tokens(pairs)]

    def loglik_tokens(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, ...]]:
        """Return each continuation token's log-probability, echoed by ``/completions``.

        Only in ``completions`` mode (:mod:`realitycheck.backends.openai._loglik`).

        Raises:
            InvalidInputError: In ``chat`` mode, before any call.
            BackendError: A call failed after the retries.
        """
        from realitycheck.backends.openai._client import sdk
        from realitycheck.backends.openai._loglik import score_pairs

        if self.mode != "completions":
            raise InvalidInputError(
                "The openai backend scores continuations only in mode='completions' (the "
                "chat API does not echo prompt log-probabilities). Got mode='chat'."
            )
        sdk()
        return score_pairs(self, list(pairs), self._api_key())

    def generate_each(
        self,
        requests: Sequence[GenerationRequest],
        on_result: Callable[[int, Generation], None] | None = None,
    ) -> list[Generation]:
        """Answer each request, calling ``on_result(index, generation)`` as each finishes.

        The calls run on the process's shared call loop while this thread
        waits, so batches handed over from several threads share one client
        and one ``concurrency`` limit (use :meth:`agenerate` to stay on your
        own loop).

        Raises:
            InvalidInputError: A request asks for what this backend cannot do, or no API key
                is set for OpenAI's own endpoint (before any call).
            MissingDependencyError: The ``openai`` package is not installed.
        """
        from realitycheck.backends.openai._client import run_blocking

        requests = list(requests)
        self._check(requests)
        api_key = self._api_key()
        return run_blocking(lambda: self._run(requests, on_result, api_key))

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
        from realitycheck.backends.openai._client import sdk

        sdk()
        check_arg(requests, REQUESTS, name="requests", owner="openai.generate")
        refuses_top_k = _is_openai(self.base_url)
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
            if request.decoding == "top_k" and refuses_top_k:
                raise InvalidInputError(
                    f"Request {i} uses decoding 'top_k', but the server "
                    f"{server_name(self.base_url, self.model)} refuses the 'top_k' parameter. "
                    "Use decoding 'top_p' or 'sampling' with this server."
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
        if _is_openai(self.base_url):
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
        from realitycheck.backends.openai._answer import answer
        from realitycheck.backends.openai._client import call_each

        if not requests:
            return []
        results: list[Generation] = [Generation() for _ in requests]

        async def work(client: Any, index: int, rng: random.Random) -> None:
            generation = await answer(self, client, requests[index], rng)
            results[index] = generation
            if on_result is not None:
                on_result(index, generation)

        await call_each(self, api_key, len(requests), work)
        return results
