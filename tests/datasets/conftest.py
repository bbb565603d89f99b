"""Fixtures for the dataset tests: a session cache of loaded bundles.

The ``data_dir`` fixture (the shared data folder) comes from ``tests/conftest.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from realitycheck.datasets import Bundle, datasets


@pytest.fixture(scope="session")
def load(data_dir: Path) -> Callable[[str], Bundle]:
    """Load a dataset from its key (``ragtruth[tasks=qa]``) once per session."""
    cache: dict[str, Bundle] = {}

    def _load(key: str) -> Bundle:
        if key not in cache:
            component = dataclasses.replace(datasets.create_from_key(key), data_dir=data_dir)
            cache[key] = component.load()
        return cache[key]

    return _load
