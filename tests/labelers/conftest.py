"""Fixtures shared by the judge tests: counting or refusing the backends' calls."""

from __future__ import annotations

import pytest

from realitycheck.backends.mock import MockBackend
from realitycheck.backends.openai import OpenAIBackend


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """Count the requests the mock backend is sent, call by call."""
    counts: list[int] = []
    original = MockBackend.generate

    def generate(self, requests):
        counts.append(len(requests))
        return original(self, requests)

    monkeypatch.setattr(MockBackend, "generate", generate)
    return counts


@pytest.fixture
def no_calls(monkeypatch):
    """Make any call to the mock or openai backend fail the test."""

    def refuse(self, requests):
        raise AssertionError("a dry run called the backend")

    monkeypatch.setattr(MockBackend, "generate", refuse)
    monkeypatch.setattr(OpenAIBackend, "generate", refuse)
    monkeypatch.setattr(OpenAIBackend, "generate_each", refuse)
