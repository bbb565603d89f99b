"""Clustering many answer lists in rounds gives each list the classes it gets alone."""

from __future__ import annotations

import numpy as np
import pytest

from realitycheck.detectors._clustering import cluster_many
from realitycheck.errors import FatalBackendError, RetryableBackendError

WORDS = ["paris", "rome", "london", "city", "capital", "old", "new", "river"]


def _lists(seed: int, n: int = 30) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [
        [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 3)))) for _ in range(10)]
        for _ in range(n)
    ]


def _entails(a: str, b: str) -> bool:
    """A one-way relation: same first word, or every word of b is in a (not symmetric)."""
    return a.split()[0] == b.split()[0] or set(b.split()) <= set(a.split())


def _reference(texts: list[str]) -> list[int]:
    """The paper's greedy clustering, written out directly."""
    reps: list[int] = []
    classes = []
    for i, text in enumerate(texts):
        found = None
        for c, r in enumerate(reps):
            if texts[r] == text or (_entails(text, texts[r]) and _entails(texts[r], text)):
                found = c
                break
        if found is None:
            reps.append(i)
            found = len(reps) - 1
        classes.append(found)
    return classes


class Counting:
    def __init__(self, fail_on: str | None = None, error=FatalBackendError) -> None:
        self.calls: list[tuple[int, str]] = []
        self.fail_on, self.error = fail_on, error

    def __call__(self, pairs, question):
        self.calls.append((len(pairs), question))
        if self.fail_on is not None and any(self.fail_on in a + b for a, b in pairs):
            raise self.error("judge down")
        return [_entails(a, b) for a, b in pairs]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_list_gets_the_classes_of_the_direct_greedy_clustering(seed):
    lists = _lists(seed)
    check = Counting()
    got = cluster_many(lists, check, ["q"] * len(lists), reads_question=False)
    assert got == [_reference(texts) for texts in lists]
    # one call per round, at most one round per text after the first
    assert 0 < len(check.calls) <= 9
    assert all(question == "" for _, question in check.calls)


def test_a_check_that_reads_the_question_is_asked_per_question():
    lists = _lists(3, n=6)
    questions = ["a", "b", "a", "c", "b", "a"]
    check = Counting()
    got = cluster_many(lists, check, questions)
    assert got == [_reference(texts) for texts in lists]
    asked = {q for _, q in check.calls}
    assert asked <= {"a", "b", "c"} and len(asked) == 3


@pytest.mark.parametrize("error", [FatalBackendError, RetryableBackendError])
def test_a_failing_comparison_fails_only_its_own_list(error):
    lists = [["paris", "rome", "paris city"], ["london", "old river", "new"], ["a", "a", "a"]]
    check = Counting(fail_on="river", error=error)
    got = cluster_many(lists, check, ["q"] * 3, reads_question=False)
    assert got[0] == _reference(lists[0])
    assert isinstance(got[1], error) and "judge down" in str(got[1])
    assert got[2] == [0, 0, 0]


def test_lists_needing_no_comparison_make_no_call():
    check = Counting()
    assert cluster_many([["x", "x"], [], ["y"]], check, ["", "", ""]) == [[0, 0], [], [0]]
    assert check.calls == []
