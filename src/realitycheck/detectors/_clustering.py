"""Greedy bidirectional-entailment clustering, one answer list or many at once.

The clustering of Farquhar et al. (2024): each text, in order, is compared
with the first member of every existing class and joins the first class it
entails and that entails it (both directions asked in the same call);
otherwise it starts a new class. Identical strings are equivalent without
asking. Classes are numbered 0, 1, … in order of appearance.

:func:`cluster_many` clusters several answer lists in rounds: each round
asks, in one call of the check, the comparisons that place the next text of
every unfinished list. Each list gets exactly the comparisons, and so the
classes, it would get alone; only the number of calls changes (rounds, not
texts), which is what makes a batched classifier fast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from realitycheck.errors import BackendError

__all__ = ["GreedyClustering", "cluster_many"]

Pair = tuple[str, str]
Check = Callable[[Sequence[Pair], str], list[bool]]


class GreedyClustering:
    """The clustering of one list of texts, advanced one verdict call at a time."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self.reps: list[int] = []  # index of the first member of each class
        self.classes: list[int] = []
        self._advance()

    @property
    def done(self) -> bool:
        """Whether every text has its class."""
        return len(self.classes) == len(self.texts)

    def pairs(self) -> list[Pair]:
        """Return the comparisons that place the next text: ``(text, rep)`` then ``(rep, text)``."""
        text = self.texts[len(self.classes)]
        reps = [self.texts[r] for r in self.reps]
        return [(text, r) for r in reps] + [(r, text) for r in reps]

    def place(self, verdicts: Sequence[bool]) -> None:
        """Place the next text from the verdicts on :meth:`pairs`, then any that need none."""
        n = len(self.reps)
        found = next((c for c in range(n) if verdicts[c] and verdicts[n + c]), None)
        if found is None:
            self.reps.append(len(self.classes))
            found = n
        self.classes.append(found)
        self._advance()

    def _advance(self) -> None:
        """Place the texts that need no verdict: the first one, and exact repeats."""
        while not self.done:
            text = self.texts[len(self.classes)]
            same = next((c for c, r in enumerate(self.reps) if self.texts[r] == text), None)
            if same is None and self.reps:
                return
            if same is None:
                self.reps.append(len(self.classes))
                same = len(self.reps) - 1
            self.classes.append(same)


def cluster_many(
    lists: Sequence[Sequence[str]],
    check: Check,
    questions: Sequence[str],
    *,
    reads_question: bool = True,
) -> list[list[int] | BackendError]:
    """Cluster each answer list; return its classes, or the error its comparisons raised.

    Args:
        lists: The answer lists, one per response.
        check: ``check(pairs, question) -> verdicts`` (``a`` entails ``b``).
        questions: The question each list answers.
        reads_question: Whether ``check`` uses the question. When it does,
            a round asks one call per distinct question; when not, one call
            for every list (with ``question=""``).

    A call that raises :class:`~realitycheck.errors.BackendError` is asked
    again list by list, so that only the lists whose comparisons fail get
    the error.
    """
    runs = [GreedyClustering(texts) for texts in lists]
    failed: dict[int, BackendError] = {}
    while True:
        active = [k for k, run in enumerate(runs) if not run.done and k not in failed]
        if not active:
            break
        groups: dict[str, list[int]] = {}
        for k in active:
            groups.setdefault(questions[k] if reads_question else "", []).append(k)
        for question, group in groups.items():
            asked = [runs[k].pairs() for k in group]
            try:
                verdicts = check([p for pairs in asked for p in pairs], question)
            except BackendError:
                for k, pairs in zip(group, asked, strict=True):
                    try:
                        runs[k].place(check(pairs, questions[k]))
                    except BackendError as exc:
                        failed[k] = exc
                continue
            start = 0
            for k, pairs in zip(group, asked, strict=True):
                runs[k].place(verdicts[start : start + len(pairs)])
                start += len(pairs)
    return [failed.get(k, run.classes) for k, run in enumerate(runs)]
