import re
import string

import numpy as np
import pytest

from realitycheck.text import (
    STOPWORDS,
    answer_tokens,
    content_words,
    extract_numbers,
    normalize_answer,
    normalize_number,
    split_sentences,
    words,
)


def _squad_normalize(s: str) -> str:
    # The SQuAD evaluation script's steps, written out independently.
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def test_normalize_answer_matches_squad_steps_on_random_strings():
    rng = np.random.default_rng(0)
    pieces = [
        "The",
        "the",
        "A",
        "an",
        "An",
        "cat",
        "Cat's",
        ",",
        ".",
        "!",
        "  ",
        "\t",
        "é",
        "x-y",
        "and",
        "theory",
        "analysis",
        "a.",
        "(an)",
        "1,000",
        "—",
        "\n",
    ]
    for _ in range(500):
        text = "".join(rng.choice(pieces, size=rng.integers(0, 12)))
        assert normalize_answer(text) == _squad_normalize(text)
        assert answer_tokens(text) == _squad_normalize(text).split()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Cat, an apple!", "cat apple"),
        ("theory of a thing", "theory of thing"),
        ("  ", ""),
        ("...", ""),
    ],
)
def test_normalize_answer_examples(text, expected):
    assert normalize_answer(text) == expected


def test_words_are_lowercased_letter_and_digit_runs():
    assert words("Don't stop — naïve Café, 42 foo_bar!") == [
        "don't",
        "stop",
        "naïve",
        "café",
        "42",
        "foo",
        "bar",
    ]
    assert words("") == []


def test_content_words_drop_stopwords_but_keep_negations():
    assert content_words("The cat is not on the mat") == ["cat", "not", "mat"]
    assert "not" not in STOPWORDS and "no" not in STOPWORDS and "the" in STOPWORDS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith arrived. He left!", ["Dr. Smith arrived.", "He left!"]),
        ("It was in the U.S. in 2019. Then?", ["It was in the U.S. in 2019.", "Then?"]),
        (
            'He said "stop." Then J. R. Tolkien wrote.',
            ['He said "stop."', "Then J. R. Tolkien wrote."],
        ),
        ("one\ntwo three\n\n", ["one", "two three"]),
        ("No final stop", ["No final stop"]),
        ("3.14 is pi. e.g. this one.", ["3.14 is pi.", "e.g. this one."]),
        ("", []),
        ("   \n  ", []),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,000", "1000"),
        ("1000", "1000"),
        ("5.0", "5"),
        ("1.50", "1.5"),
        ("007", "7"),
        ("0.50", "0.5"),
        ("0", "0"),
        ("1,234,567.890", "1234567.89"),
    ],
)
def test_normalize_number(text, expected):
    assert normalize_number(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It costs $1,000 or 1000 dollars.", ["1000", "1000"]),
        ("Version 5.0 and 3.14.", ["5", "3.14"]),
        ("On 2019-05-01 about -5% fell", ["2019", "5", "1", "5"]),
        ("B2B and A4 sizes, 5km", ["5"]),
        ("1,2 and 1,0000", ["1", "2", "1", "0"]),
        ("COVID-19 in 2020", ["19", "2020"]),
        ("five apples", []),
    ],
)
def test_extract_numbers(text, expected):
    assert extract_numbers(text) == expected
