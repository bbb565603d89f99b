"""How one failed attempt is sorted: retryable, fatal, or a refusal the backend adapts to.

The messages are real ones where there are recordings (llama.cpp's two
servers, ``tests/backends/llamacpp/replies/``) and OpenAI's documented texts
otherwise. Only a refusal that names the structured-output form (or one of the
recognised 500s of llama.cpp's servers) downgrades it; an error that merely
says "format" keeps its class, and a generic 5xx stays retryable however often
it repeats.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realitycheck.backends.openai._client import (
    Classifier,
    StructuredOutputRefused,
    TopKRefused,
    _httpx,
    make_client,
    sdk,
)
from realitycheck.errors import FatalBackendError, RetryableBackendError

pytest.importorskip("openai")

REPLIES = Path(__file__).parent / "llamacpp" / "replies"
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}}}
STRUCTURED = {
    "model": "m",
    "messages": [{"role": "user", "content": "q"}],
    "temperature": 0.0,
    "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}},
}
PLAIN = {k: v for k, v in STRUCTURED.items() if k != "response_format"}


def _recorded_error(server: str, name: str) -> tuple[int, str]:
    reply = json.loads((REPLIES / server / f"{name}.json").read_text(encoding="utf-8"))["reply"]
    return reply["status"], json.loads(reply["body"])["error"]["message"]


def _status_error(status: int, message: str) -> Exception:
    httpx = _httpx()
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    body = {"message": message, "type": "server_error"}
    response = httpx.Response(status, request=request, json={"error": body})
    return sdk().APIStatusError(message, response=response, body=body)


def _classify(status: int, message: str, args: dict) -> Exception:
    classified = Classifier(args)(_status_error(status, message))
    assert classified is not None
    return classified[0]


LLAMA_CPP_PYTHON = _recorded_error("llama-cpp-python", "chat_json_schema")
LLAMA_SERVER_GEMMA = _recorded_error("llama-server-gemma-template", "chat_json_schema")


@pytest.mark.parametrize(
    ("status", "message"),
    [
        LLAMA_CPP_PYTHON,  # 500 "... Input should be 'text' or 'json_object' ..."
        LLAMA_SERVER_GEMMA,  # 500 "... does not match the expected peg-native format"
        (500, "The output does not match the expected format"),
        (
            400,
            "Invalid parameter: 'response_format' of type 'json_schema' is not supported "
            "with this model.",
        ),
        (422, "Input should be 'text' or 'json_object'"),
        (400, "json_object is not supported by this model"),
        (400, "Failed to compile the grammar for the reply"),
    ],
)
def test_a_named_refusal_of_the_structured_form_is_a_refusal(status, message):
    assert LLAMA_CPP_PYTHON[0] == LLAMA_SERVER_GEMMA[0] == 500
    assert isinstance(_classify(status, message, STRUCTURED), StructuredOutputRefused)
    # The same words without a response_format sent are no refusal of one.
    assert not isinstance(_classify(status, message, PLAIN), StructuredOutputRefused)


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        # OpenAI's 500 says the same words every time; a blip all the same.
        (
            500,
            "The server had an error while processing your request. Sorry about that!",
            RetryableBackendError,
        ),
        (
            500,
            "Internal error in the response format layer; please try again",
            RetryableBackendError,
        ),
        (500, "Internal error while compiling the json_schema", RetryableBackendError),
        (503, "The format service is unavailable", RetryableBackendError),
        (502, "Bad gateway: upstream sent an invalid response format", RetryableBackendError),
        (400, "Invalid format for 'stop': expected a list of strings", FatalBackendError),
        (422, "Unprocessable entity: wrong message format", FatalBackendError),
    ],
)
def test_an_error_that_merely_says_format_keeps_its_class(status, message, kind):
    error = _classify(status, message, STRUCTURED)
    assert type(error) is kind, error
    assert message in str(error)


def test_a_repeated_500_at_temperature_0_stays_retryable():
    classify = Classifier(PLAIN)
    message = "The server had an error while processing your request. Sorry about that!"
    for _ in range(7):
        classified = classify(_status_error(500, message))
        assert classified is not None and type(classified[0]) is RetryableBackendError


def test_a_refused_top_k_is_named_and_says_a_retry_cannot_help():
    args = {**PLAIN, "temperature": 1.0, "top_k": 40}
    error = _classify(422, "Unexpected fields {'top_k'}", args)
    assert isinstance(error, TopKRefused) and "will fail again" in str(error)


def test_clients_share_one_tls_context_until_the_ca_setting_changes(monkeypatch, tmp_path):
    from realitycheck.backends.openai import _client

    httpx = _client._httpx()
    made = []
    real = httpx.create_ssl_context

    def counted(*args, **kwargs):
        made.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(httpx, "create_ssl_context", counted)
    monkeypatch.setattr(_client, "_TLS", {})
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    args = {"concurrency": 4, "timeout": 5.0}
    first = make_client("http://127.0.0.1:1/v1", "k", **args)
    second = make_client("http://127.0.0.1:2/v1", "k", **args)
    assert len(made) == 1  # one context made, with the client's defaults
    assert made == [((), {})]

    def context(client):
        return client._client._transport._pool._ssl_context

    assert context(first) is context(second) is _client._TLS[(None, None)]
    # A CA bundle named later gets a context of its own, as a new client would
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))  # a folder of CA files, read when needed
    third = make_client("https://example.invalid/v1", "k", **args)
    assert len(made) == 2
    assert context(third) is not context(first)
