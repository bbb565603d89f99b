"""Fixtures of the checks of every registered component."""

from __future__ import annotations

import pytest
from _component_fixtures import tiny_store

from realitycheck.store import RunData


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> RunData:
    """A tiny synthetic run every study is run on (shared: do not add records to it)."""
    return RunData(tiny_store(tmp_path_factory.mktemp("tiny_run")))
