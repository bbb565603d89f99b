import re
import string

import numpy as np
import pytest

from realitycheck.text import (
    STOPWORDS,
    answer_tokens,
    content_words,
    extract_numbers,
    model_parts,
    normalize_answer,
    normalize_number,
    short_names,
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


# -- model names -------------------------------------------------------------------------------

SCRIPT = "<script>alert(1)</script> model"
BOLD = "org/<b>x</b>"
RLO = "acme/\u202egnp.exe"
LONG = "org/" + "very-long-model-name-" * 12 + "7b"


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("meta-llama/Llama-3-8B", ("meta-llama", "Llama-3-8B")),
        ("/models/Qwen2.5-7B", ("/models", "Qwen2.5-7B")),
        ("./runs/m/x", (".", "runs", "m", "x")),
        ("llama3.1:8b", ("llama3.1:8b",)),
        (BOLD, ("org", "<b>x</b>")),  # the "/" of "</b>" is markup, not a separator
        (SCRIPT, (SCRIPT,)),  # its first "/" follows "<script>alert(1)<": no path part
        ("openai[model=org/x]", ("openai[model=org/x]",)),  # a component key is one part
        ("Llama 3/8B", ("Llama 3/8B",)),  # a space before the "/": not a path
        ("org/sub/x y/z", ("org", "sub", "x y/z")),  # the prefix ends at the first odd part
        ("\u202eorg/x", ("\u202eorg/x",)),
        (RLO, ("acme", "\u202egnp.exe")),
        ("models/llama/", ("models", "llama/")),  # nothing after the last "/": kept
        ("a//b", ("a", "/b")),
        ("", ("",)),
    ],
)
def test_model_parts_cut_only_at_path_separators(name, parts):
    assert model_parts(name) == parts
    assert "/".join(parts) == name


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["meta-llama/Llama-3-8B", "openai/gpt-4o"], ["Llama-3-8B", "gpt-4o"]),
        (
            ["meta-llama/Llama-3-8B", "mine/Llama-3-8B"],
            ["meta-llama/Llama-3-8B", "mine/Llama-3-8B"],
        ),
        (["Llama-3-8B", "meta-llama/Llama-3-8B"], ["Llama-3-8B", "meta-llama/Llama-3-8B"]),
        ([BOLD, "openai/gpt-4o"], ["<b>x</b>", "gpt-4o"]),  # was "b>"
        ([SCRIPT, "openai/gpt-4o"], [SCRIPT, "gpt-4o"]),  # was "script> model"
        ([BOLD, "other/<b>x</b>"], [BOLD, "other/<b>x</b>"]),
        ([RLO, LONG], ["\u202egnp.exe", LONG[4:]]),
    ],
)
def test_short_names_are_the_shortest_unambiguous_run_of_parts(names, expected):
    assert [short_names(names)[n] for n in names] == expected


@pytest.mark.parametrize("seed", range(5))
def test_short_names_are_distinct_suffixes_on_random_hostile_names(seed):
    rng = np.random.default_rng(seed)
    pieces = ["org", "a", "b", "<b>x</b>", "</i>", "x y", "m", "/", "", "\u202e", "[k=v]"]
    names = {"".join(rng.choice(pieces, size=rng.integers(1, 6))) for _ in range(40)}
    short = short_names(names)
    assert len(set(short.values())) == len(names)
    for name, label in short.items():
        assert name.endswith(label)
        assert label == name or name[: len(name) - len(label)].endswith("/")
        # a label starts where a part starts: never inside a part (inside markup)
        parts = model_parts(name)
        starts = {len("/".join(parts[:k])) + (k > 0) for k in range(len(parts))}
        assert len(name) - len(label) in starts


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["meta-llama/Llama-3-8B"], ["Llama-3-8B"]),
        (
            ["meta-llama/Llama-3-8B", "my-finetune/Llama-3-8B", "x/other"],
            ["meta-llama/Llama-3-8B", "my-finetune/Llama-3-8B", "other"],
        ),
        (["a/b/c", "d/b/c", "e/c/x"], ["a/b/c", "d/b/c", "x"]),
        (["org/a", "org/b"], ["a", "b"]),
        (["a/", "b/"], ["a/", "b/"]),
        (["plain", "plain"], ["plain"]),
        ([], []),
    ],
)
def test_short_names_of_plain_paths(names, expected):
    short = short_names(names)
    assert list(short.values()) == expected
