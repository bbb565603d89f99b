"""Answering one request on an OpenAI-compatible server, in as many calls as it takes.

A request for ``n`` sequences may take several calls: a server that ignores
``n`` (``transformers serve``, Ollama) returns one sequence per call, one that
caps it (``llama-server``: "Field 'n': Value must be between 1 <= value <= 4")
refuses more than its cap. The rest is asked for in further calls, the k-th
with ``seed + k`` when a seed is set, and ``usage["calls"]`` counts every call
answered. A server that refuses the structured-output form sent is asked again
in the next form (:data:`~realitycheck.backends.openai._server.STRUCTURED_FORMS`),
and that form is kept for the rest of the run. What was learned about the
server is kept in its :class:`~realitycheck.backends.openai._server.ServerFacts`.

The answer records what was asked for and not given back in
``Generation.unsupported`` (one warning per server, model and feature). When a
later call fails after earlier ones answered, the answered sequences are kept
in the error generation (``texts`` and their features, ``usage["calls"]``),
so the call cache can keep them as a partial answer.

A request with ``top_k`` to a server that refused ``top_k`` earlier in the
run is answered, without a call, with the same fatal error naming the cause
(the refusal is learned from a reply; OpenAI's own endpoint is refused before
any call by the backend).

The functions take the backend's settings as a
:class:`~realitycheck.backends.openai._client.CallSettings`, not the backend.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from realitycheck.backends import Generation, GenerationRequest, server_name
from realitycheck.backends.openai._client import (
    CallSettings,
    LogprobsRefused,
    NCapped,
    StructuredOutputRefused,
    TopKRefused,
    call,
)
from realitycheck.backends.openai._parse import Choice, assemble, parse_choices
from realitycheck.backends.openai._server import (
    STRUCTURED_FORMS,
    facts_for,
    missing_features,
    response_format,
    warn_once,
)
from realitycheck.errors import BackendError, FatalBackendError, RetryableBackendError

__all__ = ["answer", "arguments"]

_WHAT = {
    "logprobs": "returned no token log-probabilities ('logprobs'); the answers are not "
    "cached as complete.",
    "top_logprobs": "returned no next-token alternatives ('top_logprobs'); the answers are "
    "not cached as complete.",
    "json_schema": "gave a reply that did not follow the request's JSON Schema ('json_schema'; "
    "{how}); such replies are read as they are, and cached.",
}
_HOW = {
    "json_schema": "sent as 'response_format' of type 'json_schema'",
    "json_object_schema": "sent beside 'response_format' of type 'json_object'",
    "json_object": "'response_format' of type 'json_object' was sent without it, after the "
    "server refused it",
    "text": "no 'response_format' was sent, after the server refused every structured form",
}


def arguments(
    backend: CallSettings,
    request: GenerationRequest,
    *,
    n: int,
    call: int,
    with_logprobs: bool,
    form: str,
) -> dict[str, Any]:
    """Return the body of call number ``call`` for ``request``, asking for ``n`` sequences."""
    chat = backend.mode == "chat"
    args: dict[str, Any] = {"model": backend.model, "n": n, "max_tokens": request.max_tokens}
    if chat:
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
    if request.json_schema and chat:
        structured = response_format(request.json_schema, form)
        if structured is not None:
            args["response_format"] = structured
    if request.seed is not None:
        args["seed"] = request.seed + call
    if with_logprobs:
        if chat:
            # llama-cpp-python's server drops log-probs unless top_logprobs is sent.
            args["logprobs"] = True
            args["top_logprobs"] = max(1, request.top_logprobs)
        else:
            args["logprobs"] = request.top_logprobs
    return args


async def answer(
    backend: CallSettings, client: Any, request: GenerationRequest, rng: random.Random
) -> Generation:
    """Answer ``request`` with ``request.n`` sequences (see the module docstring)."""
    facts = facts_for(backend.base_url, backend.model)
    if request.decoding == "top_k" and facts.top_k_refusal:
        return Generation(
            usage={"attempts": 0, "calls": 0},
            error=f"TopKRefused: {facts.top_k_refusal} (refused earlier in this run; this "
            "request was not sent)",
            retryable=False,
        )
    chat = backend.mode == "chat"
    asked_logprobs = request.logprobs or request.top_logprobs > 0
    with_logprobs = asked_logprobs and not facts.logprobs_refused
    choices: list[Choice] = []
    usage: dict[str, int] = {"attempts": 0, "calls": 0}

    def count() -> None:
        usage["attempts"] += 1

    form = STRUCTURED_FORMS[facts.structured]
    try:
        while len(choices) < request.n:
            want = request.n - len(choices)
            form = STRUCTURED_FORMS[facts.structured]
            args = arguments(
                backend,
                request,
                n=min(want, facts.n_cap or want),
                call=usage["calls"],
                with_logprobs=with_logprobs,
                form=form,
            )
            try:
                data = await call(backend, client, args, chat=chat, rng=rng, on_attempt=count)
            except NCapped as exc:
                facts.n_cap = exc.cap
                _warn(backend, "n", f"caps 'n' at {exc.cap} ({exc}); asking in more calls.")
                continue
            except StructuredOutputRefused as exc:
                if facts.structured == STRUCTURED_FORMS.index(form):
                    facts.structured += 1
                if facts.structured >= len(STRUCTURED_FORMS):
                    raise FatalBackendError(str(exc)) from None
                then = STRUCTURED_FORMS[facts.structured]
                _warn(
                    backend,
                    f"format:{form}",
                    f"refused response_format '{form}' ({exc}); sending '{then}' from now on.",
                )
                continue
            except LogprobsRefused as exc:
                facts.logprobs_refused = True
                with_logprobs = False
                _warn(backend, "logprobs-refused", f"refused token log-probs ({exc}).")
                continue
            except TopKRefused as exc:
                facts.top_k_refusal = f"{server_name(backend.base_url, backend.model)}: {exc}"
                raise TopKRefused(facts.top_k_refusal) from None
            got, got_usage = parse_choices(data, chat=chat)
            if not got:
                raise FatalBackendError("The server answered with no choices.")
            if len(got) < args["n"]:
                _warn(
                    backend,
                    "n",
                    f"returned {len(got)} of the {args['n']} sequences asked for ('n' is "
                    "ignored); the rest are asked for in further calls.",
                )
            choices.extend(got[:want])
            for name, value in got_usage.items():
                usage[name] = usage.get(name, 0) + value
            usage["calls"] += 1
    except BackendError as exc:
        # Answered sequences are kept as a partial answer, saying what they lack.
        kept = _assembled(choices, usage, request, with_logprobs, chat) if choices else Generation()
        return dataclasses.replace(
            kept,
            usage=dict(usage),
            error=f"{type(exc).__name__}: {exc}",
            retryable=isinstance(exc, RetryableBackendError),
        )
    generation = _assembled(choices, usage, request, with_logprobs, chat)
    if "json_schema" in generation.unsupported:
        facts.schema_ignored = True
    for feature in generation.unsupported:
        _warn(backend, feature, _WHAT[feature].format(how=_HOW[form]))
    return generation


def _assembled(
    choices: list[Choice],
    usage: dict[str, int],
    request: GenerationRequest,
    logprobs: bool,
    chat: bool,
) -> Generation:
    """Build the generation from ``choices``, naming in ``unsupported`` what they lack."""
    generation = assemble(
        choices, usage=usage, logprobs=logprobs, top_logprobs=request.top_logprobs > 0
    )
    return dataclasses.replace(
        generation, unsupported=missing_features(request, choices, chat=chat)
    )


def _warn(backend: CallSettings, feature: str, message: str) -> None:
    warn_once(backend.base_url, backend.model, feature, message)
