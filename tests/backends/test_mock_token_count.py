"""The mock counts a prompt's tokens as many as :func:`tokenize` finds, without the regex."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from realitycheck.backends import GenerationRequest
from realitycheck.backends.mock import MockBackend, _token_count, tokenize

EVERY_CHARACTER = "".join(map(chr, range(sys.maxunicode + 1)))
# Whitespace to Python, and look-alikes that are not: zero-width space and joiner, the
# Mongolian vowel separator (whitespace before Unicode 6.3), BOM, word joiner.
SPACES = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u3000"
NOT_SPACES = "\u200b\u200d\u180e\ufeff\u2060\x00\x1b"


def test_the_regex_and_str_split_take_the_same_characters_for_spaces():
    assert set(re.findall(r"\s", EVERY_CHARACTER)) == {c for c in EVERY_CHARACTER if c.isspace()}
    assert all(c.isspace() for c in SPACES) and not any(c.isspace() for c in NOT_SPACES)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "   ",
        "a",
        " a",
        "a ",
        "a   ",
        "\n\na b\t\tc\n",
        "\x1c\x1d\x1e\x1f",
        "a\x1cb\x1dc\x1ed\x1fe",
        "a\x85b\xa0c\u2028d\u3000e ",
        "zero\u200bwidth\ufeffjoined\u180ehere",
        SPACES,
        NOT_SPACES,
        SPACES.join(NOT_SPACES) + SPACES,
    ],
)
def test_the_count_is_the_number_of_tokens_on_tricky_spaces(text):
    assert _token_count(text) == len(tokenize(text))


def test_the_count_is_the_number_of_tokens_on_random_texts():
    rng = np.random.default_rng(0)
    alphabet = list(SPACES + NOT_SPACES + "ab,.é中😀")
    for _ in range(2000):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 40))))
        assert _token_count(text) == len(tokenize(text)), repr(text)


def test_usage_counts_the_prompt_tokens_that_tokenize_finds():
    prompt = "grade\u3000this:\x1c answer\x85 \u200bhere \n"
    (generation,) = MockBackend(reply="ok").generate([GenerationRequest(prompt=prompt)])
    assert generation.usage["prompt_tokens"] == len(tokenize(prompt)) == 4
