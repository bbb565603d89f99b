"""Q²'s text rules: answer spans of a response, its answer normalisation and token F1.

The rules and how they differ from Q²'s (spaCy's entities and noun chunks,
a dependency parse for personal questions) are in the documentation of
:mod:`realitycheck.labelers.q2`, which exports these functions.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from realitycheck.text import STOPWORDS, split_sentences, words

__all__ = ["answer_candidates", "personal", "q2_f1", "q2_normalize"]

_TOKEN = re.compile(r"[^\W_]+(?:[-'’.,][^\W_]+)*")
_CONNECTORS = frozenset({"of", "de", "du", "del", "la", "le", "von", "van", "der", "da"})
_DETERMINERS = frozenset(
    "a an the this that these those my your his her its our their some".split()
)
_PERSONAL = frozenset({"i", "you", "my", "your"})
_Q2_DROPPED = re.compile(r"\b(a|an|the|in|our)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def q2_normalize(text: str) -> str:
    """Return ``text`` normalised as Q²'s ``clean_text``.

    Lowercase, remove ASCII punctuation, remove the words *a*, *an*, *the*,
    *in* and *our*, and collapse spaces (SQuAD's normalisation removes only
    the articles).
    """
    dropped = _Q2_DROPPED.sub(" ", text.lower().translate(_PUNCTUATION))
    return re.sub(" +", " ", dropped).strip()


def q2_f1(span: str, answer: str) -> float:
    """Return Q²'s token F1 between the response's span and the knowledge's answer, in [0, 1].

    Tokens are :func:`q2_normalize`'s, split on spaces and counted with
    multiplicity; the F1 is 0 when no token is shared (and so when either
    side is empty).
    """
    gold, pred = q2_normalize(span).split(), q2_normalize(answer).split()
    same = sum((Counter(gold) & Counter(pred)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def _tokens(sentence: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(sentence)]


def _name_like(word: str) -> bool:
    return (word[0].isupper() or word[0].isdigit()) and word.lower() not in STOPWORDS


def _runs(sentence: str, tokens: list[tuple[str, int, int]]) -> list[str]:
    """Return the runs of name-like tokens (joined by spaces or connectors) of one sentence."""
    out, i = [], 0
    while i < len(tokens):
        if not _name_like(tokens[i][0]):
            i += 1
            continue
        j = i
        while j + 1 < len(tokens) and not sentence[tokens[j][2] : tokens[j + 1][1]].strip():
            following = tokens[j + 1][0]
            if _name_like(following):
                j += 1
            elif (
                following in _CONNECTORS
                and j + 2 < len(tokens)
                and _name_like(tokens[j + 2][0])
                and not sentence[tokens[j + 1][2] : tokens[j + 2][1]].strip()
            ):
                j += 2
            else:
                break
        lone_opening = i == 0 and j == 0 and not tokens[0][0][0].isdigit()
        if not lone_opening:
            out.append(sentence[tokens[i][1] : tokens[j][2]])
        i = j + 1
    return out


def _phrases(sentence: str, tokens: list[tuple[str, int, int]]) -> list[str]:
    """Return each determiner or possessive with the run of content words after it."""
    out = []
    for i, (word, start, _) in enumerate(tokens):
        if word.lower() not in _DETERMINERS:
            continue
        j = i
        while (
            j + 1 < len(tokens)
            and tokens[j + 1][0].lower() not in STOPWORDS
            and not sentence[tokens[j][2] : tokens[j + 1][1]].strip()
        ):
            j += 1
        if j > i:
            out.append(sentence[start : tokens[j][2]])
    return out


def answer_candidates(text: str) -> list[str]:
    """Return the response's answer spans: name-like runs first, then noun-phrase-like spans.

    Per sentence (:func:`realitycheck.text.split_sentences`), words are runs
    of letters and digits (inner ``-``, ``'``, ``.`` and ``,`` kept:
    ``9,817``, ``don't``). *Name-like*: a maximal run of words that each
    start with a capital or a digit and are not stopwords
    (:data:`realitycheck.text.STOPWORDS`), separated by spaces only, with
    *of*, *de*, *von*… allowed between two of them (``Tower of London``); a
    lone capitalised word that opens a sentence is left out. *Noun-phrase-
    like*: a determiner or possessive (*a*, *the*, *this*, *my*, *their*…)
    with the maximal run of non-stopwords right after it (``the Eiffel
    Tower``). Spans are kept in order of first appearance, name-like ones
    first (Q² puts spaCy's entities before its noun chunks), without a
    second copy of a span that differs only in case, and without *I*.
    """
    names: list[str] = []
    phrases: list[str] = []
    for sentence in split_sentences(text):
        tokens = _tokens(sentence)
        names += _runs(sentence, tokens)
        phrases += _phrases(sentence, tokens)
    out: list[str] = []
    seen: set[str] = set()
    for span in names + phrases:
        key = span.lower()
        if key not in seen and key != "i":
            seen.add(key)
            out.append(span)
    return out


def personal(question: str) -> bool:
    """Return whether ``question`` has one of the words *I*, *you*, *my*, *your* (Q² drops it)."""
    return bool(_PERSONAL & set(words(question)))
