"""Clustering many answer lists in rounds gives each list the classes it gets alone."""

from __future__ import annotations

import numpy as np
import pytest

from realitycheck.detectors._clustering import Unclear, cluster_many
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
    assert [run.classes for run in got] == [_reference(texts) for texts in lists]
    assert all(run.complete and run.error is None and not run.unclear for run in got)
    # one call per round, at most one round per text after the first
    assert 0 < len(check.calls) <= 9
    assert all(question == "" for _, question in check.calls)


def test_a_check_that_reads_the_question_is_asked_per_question():
    lists = _lists(3, n=6)
    questions = ["a", "b", "a", "c", "b", "a"]
    check = Counting()
    got = cluster_many(lists, check, questions)
    assert [run.classes for run in got] == [_reference(texts) for texts in lists]
    asked = {q for _, q in check.calls}
    assert asked <= {"a", "b", "c"} and len(asked) == 3


@pytest.mark.parametrize("error", [FatalBackendError, RetryableBackendError])
def test_a_failing_comparison_fails_only_its_own_list(error):
    lists = [["paris", "rome", "paris city"], ["london", "old river", "new"], ["a", "a", "a"]]
    check = Counting(fail_on="river", error=error)
    got = cluster_many(lists, check, ["q"] * 3, reads_question=False)
    assert got[0].classes == _reference(lists[0]) and got[0].error is None
    assert isinstance(got[1].error, error) and "judge down" in str(got[1].error)
    assert not got[1].complete
    assert got[2].classes == [0, 0, 0]


def test_lists_needing_no_comparison_make_no_call():
    check = Counting()
    got = cluster_many([["x", "x"], [], ["y"]], check, ["", "", ""])
    assert [run.classes for run in got] == [[0, 0], [], [0]]
    assert check.calls == []


class Unsure(Counting):
    """Unclear on every comparison that involves ``word``, the relation elsewhere."""

    def __init__(self, word: str) -> None:
        super().__init__()
        self.word = word

    def __call__(self, pairs, question):
        verdicts = super().__call__(pairs, question)
        return [
            Unclear(f"no conclusion: {a!r}") if self.word in (a + " " + b).split() else v
            for (a, b), v in zip(pairs, verdicts, strict=True)
        ]


def _reference_or_stuck(texts: list[str], word: str) -> list[int] | None:
    """The greedy clustering, stopping (None) where an unclear pair could change a class."""
    reps: list[int] = []
    classes = []
    for i, text in enumerate(texts):
        found = None
        for c, r in enumerate(reps):
            if texts[r] == text:
                found = c
                break
            both = [(text, texts[r]), (texts[r], text)]
            known = [_entails(a, b) for a, b in both if word not in (a + " " + b).split()]
            if False in known:
                continue
            if len(known) < 2:
                return None
            found = c
            break
        if found is None:
            reps.append(i)
            found = len(reps) - 1
        classes.append(found)
    return classes


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_unclear_verdicts_decide_only_what_they_cannot_change(seed):
    lists = _lists(seed)
    got = cluster_many(lists, Unsure("river"), ["q"] * len(lists), reads_question=False)
    expected = [_reference_or_stuck(texts, "river") for texts in lists]
    assert any(e is None for e in expected) and any(e is not None for e in expected)
    for run, want in zip(got, expected, strict=True):
        assert run.error is None
        if want is None:
            assert run.stuck is not None and not run.complete
            assert run.stuck in run.unclear
        else:
            assert run.complete and run.stuck is None and run.classes == want
        assert 0 < run.asked or not run.unclear


@pytest.mark.parametrize("unclear_as", [False, True])
def test_unclear_as_gives_unclear_comparisons_a_verdict_and_counts_them(unclear_as):
    def reference(a: str, b: str) -> bool:
        return unclear_as if "river" in (a + " " + b).split() else _entails(a, b)

    lists = _lists(7)
    got = cluster_many(
        lists, Unsure("river"), ["q"] * len(lists), reads_question=False, unclear_as=unclear_as
    )
    assert sum(len(run.unclear) for run in got) > 0
    for run, texts in zip(got, lists, strict=True):
        reps: list[int] = []
        classes, unclear = [], 0
        for i, text in enumerate(texts):
            found = next((c for c, r in enumerate(reps) if texts[r] == text), None)
            if found is None:  # every class's first member is asked, both ways, in one call
                unclear += sum(2 * ("river" in f"{text} {texts[r]}".split()) for r in reps)
                found = next(
                    (
                        c
                        for c, r in enumerate(reps)
                        if reference(text, texts[r]) and reference(texts[r], text)
                    ),
                    None,
                )
            if found is None:
                reps.append(i)
                found = len(reps) - 1
            classes.append(found)
        assert run.complete and run.classes == classes
        assert len(run.unclear) == unclear
