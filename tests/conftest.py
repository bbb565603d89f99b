"""Shared fixtures: where the real data lives, and small synthetic runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("REALITYCHECK_DATA_DIR", REPO.parent / "shared" / "data"))
# No test reads or writes the user's embedding cache (fake models would fill it);
# the tests of that cache point it at their own folder.
os.environ["REALITYCHECK_EMBED_CACHE"] = "off"
# Nor exports the ONNX model into it: tests embed on torch unless they choose onnx.
os.environ["REALITYCHECK_EMBED_ENGINE"] = "torch"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real human-labelled data (../shared/data beside the clone)."""
    if not (DATA_DIR / "README.md").exists():
        pytest.fail(f"The shared data folder is missing: {DATA_DIR}. Clone beside ../shared.")
    return DATA_DIR
