"""Shared fixtures: where the real data lives, and small synthetic runs."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from realitycheck.backends.openai._server import forget_servers

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("REALITYCHECK_DATA_DIR", REPO.parent / "shared" / "data"))
# No test reads or writes the user's embedding cache (fake models would fill it);
# the tests of that cache point it at their own folder.
os.environ["REALITYCHECK_EMBED_CACHE"] = "off"
# Nor exports the ONNX model into it: tests embed on torch unless they choose onnx.
os.environ["REALITYCHECK_EMBED_ENGINE"] = "torch"
# The fake OpenAI server (tests/backends is no package) imports as a top-level module.
sys.path.insert(0, str(REPO / "tests" / "backends"))


@pytest.fixture(scope="session")
def fake_openai() -> Any:
    """The fake OpenAI-compatible server module (``tests/backends/_fake_openai_server.py``).

    Its ``FakeOpenAIServer`` plays the faults a real server cannot produce on
    demand; tests outside ``tests/backends`` reach it through this fixture (or
    ``import _fake_openai_server``: its folder is on the path, see above).
    """
    return importlib.import_module("_fake_openai_server")


@pytest.fixture(autouse=True)
def _fresh_server_facts() -> Iterator[None]:
    """Each test starts without what earlier tests taught the openai backend about servers.

    The backend remembers, per process, what a server at a base URL ignores or
    refuses; a fake server of a later test may reuse a port.
    """
    forget_servers()
    yield
    forget_servers()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real human-labelled data (../shared/data beside the clone)."""
    if not (DATA_DIR / "README.md").exists():
        pytest.fail(f"The shared data folder is missing: {DATA_DIR}. Clone beside ../shared.")
    return DATA_DIR


def write_fruit_answers(path: Path, n: int) -> Path:
    """Write a user's JSONL of ``n`` answers by two models, every third one long and wrong.

    Fields: ``qid``, ``question``, ``answer``, ``references`` (``;``-separated),
    ``is_wrong`` (``yes``/``no``: the human label), ``llm``.
    """
    import json

    rows = []
    for i in range(n):
        wrong = i % 3 == 0
        rows.append(
            {
                "qid": f"q{i}",
                "question": f"What colour is fruit {i}?",
                "answer": "It is bright purple with stripes and sparkles" if wrong else "Red",
                "references": "Red;A red one",
                "is_wrong": "yes" if wrong else "no",
                "llm": "model-a" if i % 2 else "model-b",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="session")
def fruit_answers():
    """:func:`write_fruit_answers`, for tests in any folder (``fruit_answers(path, n)``)."""
    return write_fruit_answers
