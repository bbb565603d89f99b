"""List-of-text columns are scrubbed element by element, lists and nulls kept as they were.

The store scrubs a list column as one flat text column and rebuilds the lists
around it; this holds the result equal to scrubbing each element in Python,
for list and large-list columns, sliced and chunked, with null lists and null
elements.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from realitycheck.store._columns import _scrubbed_lists
from realitycheck.store._secrets import Scrubber

KEY = "Zk3v9QpL2xR7tYb1Wm4nHs8dC6fG0jK5"
TEXTS = [
    "a",
    "",
    None,
    KEY,
    f"the key {KEY[3:15]} leaked",
    "sk-abcdefgh12345678",
    "token=aB3dE5fG7hJ9kL1mN3pQ",
    "x y",
]
TYPES = [pa.list_(pa.string()), pa.large_list(pa.string()), pa.list_(pa.large_string())]


def each_element(rows, *, full: bool):
    scrubber = Scrubber()
    clean = scrubber.text if full else scrubber.configured
    return [None if r is None else [None if t is None else clean(t) for t in r] for r in rows]


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.none() | st.lists(st.sampled_from(TEXTS), max_size=4), max_size=8),
    kind=st.sampled_from(TYPES),
    start=st.integers(0, 2),
    split=st.booleans(),
    full=st.booleans(),
)
def test_lists_scrubbed_at_once_equal_each_element_scrubbed(rows, kind, start, split, full):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        array = pa.array(rows, kind).slice(min(start, len(rows)))
        half = len(array) // 2
        chunks = [array[:half], array[half:]] if split else [array]
        column = pa.chunked_array(chunks, kind)
        got = _scrubbed_lists(column, Scrubber(), full=full)
        assert got.type == kind
        assert got.to_pylist() == each_element(column.to_pylist(), full=full)


def test_a_column_without_secrets_is_returned_as_it_is(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    column = pa.chunked_array([pa.array([["a", "b"], None, []], pa.list_(pa.string()))])
    assert _scrubbed_lists(column, Scrubber(), full=False) is column
