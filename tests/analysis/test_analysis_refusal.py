"""The refusal rule shared by the leaderboard and QA-accuracy studies."""

import pandas as pd

from realitycheck.analysis import refusal_mask


def test_refusals_are_short_responses_or_phrases():
    texts = pd.Series(["", "No.", "I have no comment.", "one two three four five", "a b c d e f"])
    assert refusal_mask(texts, 5).tolist() == [True, True, True, True, False]
    assert refusal_mask(texts, 0).tolist() == [True, False, False, False, False]
    assert refusal_mask(texts, 0, ["NO COMMENT", "(f"]).tolist() == [
        True, False, True, False, False,
    ]  # fmt: skip


def test_phrases_are_matched_literally_not_as_patterns():
    texts = pd.Series(["a.b c d e f g", "axb c d e f g"])
    assert refusal_mask(texts, 0, ["a.b"]).tolist() == [True, False]
