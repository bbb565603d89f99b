"""Fixtures for the backend tests: the fake OpenAI server and a fast-retrying backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _fake_openai_server import FakeOpenAIServer

from realitycheck.backends.openai import OpenAIBackend


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A fresh fake OpenAI server on 127.0.0.1 (a random free port)."""
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def make_backend(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Build an ``openai`` backend pointed at the fake server, with tiny backoff delays."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def build(**params: Any) -> OpenAIBackend:
        defaults: dict[str, Any] = {
            "model": "fake-model",
            "base_url": server.url,
            "backoff": 0.01,
            "timeout": 5.0,
            "max_retries": 3,
        }
        return OpenAIBackend(**{**defaults, **params})

    return build
