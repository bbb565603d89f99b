"""Greedy bidirectional-entailment clustering, one answer list or many at once.

The clustering of Farquhar et al. (2024): each text, in order, is compared
with the first member of every existing class and joins the first class it
entails and that entails it (both directions asked in the same call);
otherwise it starts a new class. Identical strings are equivalent without
asking. Classes are numbered 0, 1, … in order of appearance.

A check may answer a comparison with :class:`Unclear` instead of a verdict
(an LLM judge's reply that says neither yes nor no). Such a comparison
settles nothing: the text is placed only when the verdicts it has decide its
class whatever the unclear ones would have said (an earlier class already
refused in the other direction, or an earlier class matched both ways);
otherwise its list stops there, *stuck*, with no classes. ``unclear_as``
gives unclear comparisons a verdict instead (they are still counted).

:func:`cluster_many` clusters several answer lists in rounds: each round
asks, in one call of the check, the comparisons that place the next text of
every unfinished list. Each list gets exactly the comparisons, and so the
classes, it would get alone; only the number of calls changes (rounds, not
texts), which is what makes a batched classifier fast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from realitycheck.errors import BackendError

__all__ = ["GreedyClustering", "Unclear", "cluster_many"]

Pair = tuple[str, str]


@dataclass(frozen=True)
class Unclear:
    """A comparison the check could not decide; ``note`` says why, quoting the reply."""

    note: str


Verdict = bool | Unclear
Check = Callable[[Sequence[Pair], str], Sequence[Verdict]]


class GreedyClustering:
    """The clustering of one list of texts, advanced one verdict call at a time.

    Attributes:
        texts: The texts, in order.
        classes: The class of each text placed so far.
        asked: How many verdicts it has read.
        unclear: The unclear verdicts among them.
        stuck: The unclear verdict that left the next text's class undecided
            (then ``classes`` is incomplete), or ``None``.
        error: The backend error its comparisons raised, or ``None``.
    """

    def __init__(self, texts: Sequence[str], *, unclear_as: bool | None = None) -> None:
        self.texts = list(texts)
        self.unclear_as = unclear_as
        self.reps: list[int] = []  # index of the first member of each class
        self.classes: list[int] = []
        self.asked = 0
        self.unclear: list[Unclear] = []
        self.stuck: Unclear | None = None
        self.error: BackendError | None = None
        self._advance()

    @property
    def complete(self) -> bool:
        """Whether every text has its class."""
        return len(self.classes) == len(self.texts)

    @property
    def done(self) -> bool:
        """Whether nothing more is to be asked: complete, stuck or failed."""
        return self.complete or self.stuck is not None or self.error is not None

    def pairs(self) -> list[Pair]:
        """Return the comparisons that place the next text: ``(text, rep)`` then ``(rep, text)``."""
        text = self.texts[len(self.classes)]
        reps = [self.texts[r] for r in self.reps]
        return [(text, r) for r in reps] + [(r, text) for r in reps]

    def place(self, verdicts: Sequence[Verdict]) -> None:
        """Place the next text from the verdicts on :meth:`pairs`, then any that need none.

        The text joins the first class whose both verdicts are true. An
        unclear verdict (taken as ``unclear_as`` when that is set) on a class
        not already refused by its other verdict leaves the class undecided:
        the clustering is then ``stuck``.
        """
        n = len(self.reps)
        self.asked += len(verdicts)
        self.unclear.extend(v for v in verdicts if isinstance(v, Unclear))
        found = None
        for c in range(n):
            both = (verdicts[c], verdicts[n + c])
            read = [self.unclear_as if isinstance(v, Unclear) else bool(v) for v in both]
            if False in read:
                continue
            if None in read:
                self.stuck = next(v for v in both if isinstance(v, Unclear))
                return
            found = c
            break
        if found is None:
            self.reps.append(len(self.classes))
            found = n
        self.classes.append(found)
        self._advance()

    def _advance(self) -> None:
        """Place the texts that need no verdict: the first one, and exact repeats."""
        while not self.complete:
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
    unclear_as: bool | None = None,
) -> list[GreedyClustering]:
    """Cluster each answer list; return its clustering (classes, unclear verdicts, error).

    Args:
        lists: The answer lists, one per response.
        check: ``check(pairs, question) -> verdicts`` (``a`` entails ``b``;
            :class:`Unclear` when it cannot tell).
        questions: The question each list answers.
        reads_question: Whether ``check`` uses the question. When it does,
            a round asks one call per distinct question; when not, one call
            for every list (with ``question=""``).
        unclear_as: The verdict an unclear comparison counts as; ``None``
            = none (a list whose next class it leaves undecided is ``stuck``).

    A call that raises :class:`~realitycheck.errors.BackendError` is asked
    again list by list, so that only the lists whose comparisons fail get
    the error (in their ``error``).
    """
    runs = [GreedyClustering(texts, unclear_as=unclear_as) for texts in lists]
    while True:
        active = [k for k, run in enumerate(runs) if not run.done]
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
                        runs[k].error = exc
                continue
            start = 0
            for k, pairs in zip(group, asked, strict=True):
                runs[k].place(verdicts[start : start + len(pairs)])
                start += len(pairs)
    return runs
