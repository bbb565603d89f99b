"""Every generation test starts with an empty log of fake-backend calls."""

import pytest
from _generation_fakes import BATCHES, CALLS


@pytest.fixture(autouse=True)
def _fresh_log():
    CALLS.clear()
    BATCHES.clear()
    yield
    CALLS.clear()
    BATCHES.clear()
