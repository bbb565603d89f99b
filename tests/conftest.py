"""Shared fixtures: where the real data lives, and small synthetic runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("REALITYCHECK_DATA_DIR", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real human-labelled data (../shared/data beside the clone)."""
    if not (DATA_DIR / "README.md").exists():
        pytest.fail(f"The shared data folder is missing: {DATA_DIR}. Clone beside ../shared.")
    return DATA_DIR
