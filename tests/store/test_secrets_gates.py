"""The scrubber's quick gates skip only texts its patterns cannot match.

:class:`~realitycheck.store.Scrubber` first checks a text for a configured
key's 8-grams and for each key shape's literals before running the patterns.
These tests run every pattern on every text, ungated, and ask for the very
same output, on texts made to sit near each gate: pieces of a configured
key, shapes in mixed case, the long s and the Kelvin sign (which ``re.I``
matches to "s" and "k"), and JSON with ``token`` in a key name.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from realitycheck.store import REDACTED, _secrets
from realitycheck.store._columns import _scrubbed_texts
from realitycheck.store._secrets import Scrubber

KEY = "sk-proj-Abc123XyZ987qwertyuiopASDFGHJKLzxcvbnm0123456789"
LONG_KEY = "L" + "q7Zp" * 20  # over 64 characters: its starts and ends are the pieces


def ungated(text: str) -> str:
    """What the scrubber gave before its gates: every pattern on every text."""
    pattern, _ = _secrets._pattern(_secrets._configured()) or (None, None)
    if text and pattern is not None:
        text = pattern.sub(REDACTED, text)
    if not text:
        return text
    for _, shape in _secrets._SHAPES:
        text = shape.sub(REDACTED, text)
    return _secrets._ASSIGNED.sub(
        lambda m: m["name"] + REDACTED if _secrets._looks_random(m["value"]) else m[0], text
    )


# Whole assignments, shapes and URIs, each of which one gate alone lets through.
WHOLE = [
    "token=aB3dE5fG7hJ9kL1mN3pQ",
    "api_key: 9876543210fedcbaXYZ",
    "\u212aey=aB3dE5fG7hJ9kL1mN3pQ",
    "\u017fecret=aB3dE5fG7hJ9kL1mN3pQ",
    "passwd='9876543210fedcbaXYZ'",
    "pwd =aB3dE5fG7hJ9kL1mN3pQ",
    "refresh_token\u00a0=aB3dE5fG7hJ9kL1mN3pQ",
    "(access-token=aB3dE5fG7hJ9kL1mN3pQ)",
    "ap\u0131_key=aB3dE5fG7hJ9kL1mN3pQ",  # re.I reads the dotless i as i; RE2 does not
    "pr\u0130vate_key=aB3dE5fG7hJ9kL1mN3pQ",
    "https://user:pw@host",
    "Bearer abcdef123456",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAIOSFODNN7EXAMPLE",
    "hf_abcdefghijklmnopqrstuvwxyz",
    "xoxb-ABCDEFGHIJKL",
    "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ9876543210",
    "sk-abcdefghMNBVCXYL",
    f"echo {KEY[9:25]}",
    f"echo {LONG_KEY}",
]
PIECES = [
    KEY,
    KEY[5:13],
    KEY[20:40],
    KEY[:7],
    LONG_KEY,
    LONG_KEY[:40],
    "sk-",
    "SK-",
    "sK-abcdefgh12345678",
    "sk-abcdefghMNBVCXYL",
    "Bearer ",
    "BEARER ",
    "bearer\t",
    "AKIA",
    "ASIA",
    "akia",
    "IOSFODNN7EXAMPLE",
    "hf_",
    "ghp_",
    "gho_",
    "xoxb-",
    "https://",
    "user:pass@",
    "@",
    "token",
    "tokens",
    "prompt_tokens",
    "api_key",
    "API-KEY",
    "\u017fecret",  # long s
    "\u212aey",  # Kelvin sign
    "passwd",
    "PWD",
    '"',
    "'",
    ": ",
    "=",
    " ",
    "\n",
    "aB3dE5fG7hJ9kL1mN3pQ",
    "0123456789abcdefXYZ",
    "Newton",
    "\u0130",
    "\u00df",
    *WHOLE,
]


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", LONG_KEY)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=12))
def test_gated_scrubbing_gives_what_every_pattern_gives(parts):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        patch.setenv("MY_SERVICE_TOKEN", LONG_KEY)
        text = "".join(parts)
        scrubber = Scrubber()
        assert scrubber.text(text) == ungated(text)


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), max_size=6),
    full=st.booleans(),
)
@example(texts=WHOLE, full=True)  # each gate met by one text alone
def test_a_column_scrubbed_at_once_gives_what_every_pattern_gives(texts, full):
    # The column's own gate is RE2 (Arrow), not Python: it must pass every text
    # a pattern could change.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        patch.setenv("MY_SERVICE_TOKEN", LONG_KEY)
        column = pa.chunked_array([pa.array(texts, pa.string())])
        got = _scrubbed_texts(column, Scrubber(), full=full).to_pylist()
        configured = Scrubber().configured
        assert got == [ungated(t) if full else configured(t) for t in texts]


def test_a_key_piece_and_a_shape_in_json_are_both_caught(keys):
    raw = (
        '{"replies": ["the key was ' + KEY[10:30] + '"], "usage": {"prompt_tokens": 9}, '
        '"note": "token=aB3dE5fG7hJ9kL1mN3pQ"}'
    )
    out = Scrubber().text(raw)
    assert KEY[10:30] not in out and "aB3dE5fG7hJ9kL1mN3pQ" not in out
    assert out.count(REDACTED) == 2
    assert '"prompt_tokens": 9' in out


def test_a_text_without_any_gram_is_returned_as_is(keys):
    text = '{"usage": {"prompt_tokens": 209}, "reasons": ["not a choice"]}'
    assert Scrubber().text(text) is text


def test_the_long_s_and_kelvin_sign_open_the_assigned_gate(keys):
    value = "aB3dE5fG7hJ9kL1mN3pQ"
    for name in ("\u017fecret", "\u212aey"):
        assert re.search(_secrets._ASSIGNED, f"{name}={value}")  # re.I matches them
        assert Scrubber().text(f"{name}={value}") == f"{name}={REDACTED}"
