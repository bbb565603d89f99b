"""Text and list-of-text columns are scrubbed as each text would be, at Arrow's speed.

The store finds the texts that could hold a secret with one RE2 pass (a
configured key's 8-grams, the key shapes' starts) and scrubs only those in
Python; it scrubs a list column as one flat text column and rebuilds the
lists around it. These tests hold both equal to scrubbing each text in
Python, for list and large-list columns, sliced and chunked, with null lists
and null elements, and the RE2 pattern equal to ``in`` for any literal.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from realitycheck.store._columns import _any_of, _scrubbed_lists, _scrubbed_texts
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


# Regex syntax, bytes RE2 treats apart and any other character.
CHARS = st.sampled_from([*".*+?()[]{}|^$\\-/ ab", "\u00e9", "\n", "\x00"]) | st.characters(
    exclude_categories=("Cs",)
)


@settings(max_examples=300, deadline=None)
@given(
    literals=st.frozensets(st.text(CHARS, min_size=1, max_size=8), min_size=1, max_size=6),
    texts=st.lists(st.text(CHARS, max_size=30), max_size=10),
)
@example(literals=frozenset({"."}), texts=["a"])
@example(literals=frozenset({"a|b", "(x"}), texts=["a", "b", "(x"])
@example(literals=frozenset({"\\d", "}"}), texts=["7", "\\d}"])
def test_the_re2_pattern_finds_what_in_finds(literals, texts):
    texts = texts + [f"x{literal}y" for literal in literals]
    found = pc.match_substring_regex(pa.array(texts, pa.string()), _any_of(literals))
    assert found.to_pylist() == [any(lit in t for lit in literals) for t in texts]


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.sampled_from(TEXTS), max_size=12), full=st.booleans())
def test_texts_scrubbed_at_once_equal_each_text_scrubbed(rows, full):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        column = pa.chunked_array([pa.array(rows, pa.string())])
        got = _scrubbed_texts(column, Scrubber(), full=full)
        scrubber = Scrubber()
        clean = scrubber.text if full else scrubber.configured
        assert got.to_pylist() == [None if t is None else clean(t) for t in rows]
