"""Prompt multiplicity against brute-force counts over every pair of prompt structures."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from realitycheck.analysis._multiplicity import (
    CATEGORIES,
    consistency_vs_correctness,
    multiplicity,
    self_consistency,
)
from realitycheck.errors import InvalidInputError

RNG = np.random.default_rng(7)
CHOICES = RNG.integers(0, 4, size=(60, 5))
CHOICES[:20] = CHOICES[:20, :1]  # 20 questions answered alike under every variant
CHOICES[20:25, 3] = -1  # a variant that gave no choice
GOLD = RNG.integers(0, 4, size=60)


def _pairs(row, *, same):
    given = [c for c in row if c >= 0]
    pairs = (
        itertools.product(range(len(given)), repeat=2)
        if same
        else itertools.permutations(range(len(given)), 2)
    )
    pairs = list(pairs)
    return sum(given[i] == given[j] for i, j in pairs) / len(pairs)


@pytest.mark.parametrize("with_replacement", [False, True])
def test_self_consistency_is_the_share_of_agreeing_pairs(with_replacement):
    got = self_consistency(CHOICES, with_replacement=with_replacement)
    expected = [_pairs(row, same=with_replacement) for row in CHOICES]
    np.testing.assert_allclose(got, expected)
    assert np.all(got[:20] == 1.0)


def test_ambiguity_accuracy_and_taxonomy():
    correct = CHOICES == GOLD[:, None]
    m = multiplicity(CHOICES, correct, tau=0.8)
    brute = np.mean(
        [
            any(a != b for a, b in itertools.combinations([c for c in r if c >= 0], 2))
            for r in CHOICES
        ]
    )
    assert m.ambiguity == pytest.approx(brute)
    per_variant = [correct[CHOICES[:, i] >= 0, i].mean() for i in range(5)]
    assert m.accuracy_mean == pytest.approx(np.mean(per_variant))
    assert m.accuracy_std == pytest.approx(np.std(per_variant))
    sc = np.array([_pairs(r, same=False) for r in CHOICES])
    for k in range(60):
        expected = (
            CATEGORIES[2] if sc[k] < 0.8 else CATEGORIES[0] if correct[k, 0] else CATEGORIES[1]
        )
        assert m.category[k] == expected
    assert sum(m.shares.values()) == pytest.approx(1.0)
    right = correct[:, 0]
    assert m.randomness_among_default_correct == pytest.approx(
        np.sum(right & (sc < 0.8)) / right.sum()
    )


def test_a_question_with_one_choice_has_no_category():
    table = np.array([[1, 1, 1], [2, -1, -1]])
    m = multiplicity(table, table == 1)
    assert np.isnan(m.self_consistency[1]) and m.category[1] == "" and m.questions == 1


def test_detection_that_tracks_consistency_not_correctness():
    # Six models: the score is high exactly on prompt-sensitive answers and
    # unrelated to correctness, so only the consistency axis separates.
    scores, correct, agnostic = [], [], []
    for m in range(6):
        agn = np.array([True, True, False, False] * 5)
        right = np.array([True, False] * 10)
        scores.append(np.where(agn, 0.1, 0.9) + 0.01 * m)
        correct.append(right)
        agnostic.append(agn)
    out = consistency_vs_correctness(scores, correct, agnostic)
    assert out["consistency"]["p_value"] == pytest.approx(2 / 2**6)  # exact two-sided minimum
    assert out["consistency"]["mean_difference"] == pytest.approx(-0.8)
    assert np.isnan(out["correctness"]["p_value"])  # every difference is exactly zero


@pytest.mark.parametrize(
    ("choices", "correct", "kwargs", "match"),
    [
        ([[1], [2]], [[True], [False]], {}, "at least two variants"),
        ([[1.5, 2]], [[True, False]], {}, "option indices"),
        ([[1, 2]], [[True]], {}, "same shape"),
        ([[1, 2]], [[True, False]], {"default": 2}, "default must be a column"),
        ([[1, 2]], [[True, False]], {"tau": 1.5}, "tau must be in"),
    ],
)
def test_bad_tables_are_refused(choices, correct, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        multiplicity(choices, correct, **kwargs)
