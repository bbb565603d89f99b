"""The patterns and text helpers the verdict reader is built from (:mod:`realitycheck.verdicts`)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

KEYS = (
    r"verdicts?|answer|classification|conclusion|judge?ment|decision|label|rating|grade"
    r"|assessment|evaluation|result|choice|correctness|category|output"
)
NEGATORS = re.compile(
    r"\b(?:not|no|never|neither|nor|none|cannot|without|whether|if|hardly|barely|rather"
    r"|instead|unless|nothing|nobody|isn|aren|wasn|weren|doesn|don|didn|won|wouldn|shouldn"
    r"|couldn|can|ain)\b|n[’']t\b",
    re.IGNORECASE,
)
HEDGES = re.compile(
    r"\b(?:probably|likely|possibly|perhaps|maybe|might|may|could|seems?|appears?|unclear"
    r"|uncertain|unsure|partially|partly|somewhat|mostly|largely|arguably|debatable"
    r"|borderline|depends|unable|impossible|difficult|hard to|not sure|cannot|can[’']t"
    r"|(?:don[’']t|do not) know|i (?:think|believe|guess|suppose|feel))\b",
    re.IGNORECASE,
)
# After a verdict: a condition voids it anywhere, a contrast in prose.
CONDITIONS = re.compile(
    r"\b(?:if|unless|provided|assuming|only\s+(?:if|when|in part|partly))\b", re.IGNORECASE
)
CONTRAST = re.compile(
    r"\b(?:but|however|while|whereas|although|though|yet|except|only|when)\b",
    re.IGNORECASE,
)
# What follows "Correct:" when "Correct" is a key, not a verdict.
VALUE_WORD = re.compile(
    r"^[\W_]*(?:yes|no|nope|true|false|none|null|nil|n/?a|partial(?:ly)?|unknown|maybe"
    r"|unclear|[01]|not|never|y|n|x)(?![\w/])|^\s*[✓✔✗✘❌✅]",
    re.IGNORECASE,
)
CONNECTIVES = re.compile(
    r"^(?:(?:therefore|thus|hence|so|overall|accordingly|consequently|ultimately|finally"
    r"|in conclusion|in summary|in short|in sum|to conclude|to sum up|all in all|as such"
    r"|as a result|in the end|conclusion|final)\b[\s,:：;—–-]*)+",
    re.IGNORECASE,
)
# A conclusion after a comma: "Both name Paris, so the answer is yes."
THEN = re.compile(
    r"(?:[,，;；:：—–]|\band)\s*(?:and\s+)?(?:so|therefore|thus|hence|consequently|accordingly)"
    r"\b[\s,，]*",
    re.IGNORECASE,
)
# Clauses before "…, the answer is X" that make it no conclusion of the judge's.
LEAD_IN = re.compile(
    r"\b(?:if|unless|assuming|provided|suppose|supposing|whether|would|could|should|might"
    r"|may|according|says?|said|claims?|claimed|thinks?|believes?|user|otherwise|but"
    r"|however)\b|[?？]",
    re.IGNORECASE,
)
SUBJECT = (
    r"(?:(?:the|this|that|my|our|its|their)\s+"
    r"(?:(?:proposed|submitted|given|candidate|predicted|generated|final|overall|whole"
    r"|entire|correct|right|best|model[’']?s?|student[’']?s?|assistant[’']?s?|ai[’']?s?)\s+)*"
    r"(?:answer|response|summary|sentence|claim|statement|output|prediction|reply|submission"
    r"|verdict|classification|label|assessment|judge?ment|evaluation|result|conclusion|grade"
    r"|rating|decision|category|choice|option)(?:\s+(?:to|for)\s+(?:the|this)\s+question)?"
    r"|(?:it|this|that)(?:\s+one)?)(?!\w)"
)
# A judgement the judge makes ("I'd say it's correct") is a conclusion ...
JUDGEMENT = (
    r"(?:i[’']d\s+say|i\s+would\s+say|i\s+(?:conclude|find|determine|judge)"
    r"|my\s+(?:final\s+)?(?:verdict|conclusion|judge?ment|assessment)\s+is)\s+(?:that\s+)?"
)
# ... a belief it holds ("I think it is correct") is a hedge.
BELIEF = re.compile(
    r"^(?:i\s+(?:think|believe|guess|suppose|feel|suspect|reckon)|it\s+(?:seems|appears|looks))\b",
    re.IGNORECASE,
)
CLASSED = r"(?:classified|rated|judged|graded|deemed|considered|categori[sz]ed|labell?ed|marked)"
COPULA = re.compile(
    rf"^(?:(?:{JUDGEMENT})?{SUBJECT}(?:[’']s|\s+(?:is|are|was|were|equals))(?:\s*[:：])?\s+"
    r"(?:(?:therefore|thus|hence|clearly|indeed|overall|ultimately|definitely|fully|entirely"
    r"|completely|wholly|simply|also)\s+)?"
    r"(?:(?:classified|rated|judged|graded|deemed|considered|categori[sz]ed)\s+(?:as\s+)?)?"
    # "The response should be classified as correct.": the judge's own classification.
    rf"|{SUBJECT}\s+(?:should|must)\s+be\s+{CLASSED}\s+(?:as\s+)?"
    # "I would rate this response as incorrect."
    rf"|i(?:[’']d|\s+would|\s+will)?\s+(?:rate|grade|classify|label|mark|judge|deem"
    rf"|consider|call)\s+{SUBJECT}\s+(?:as\s+)?)",
    re.IGNORECASE,
)
# Words that take back a verdict given before them, at the start of a clause: a strong
# one ("Wait", "Scratch that") takes it back by itself; a weak one ("Actually", "But")
# only when "no", another verdict or the verdict negated follows, or the cut falls
# right after it (what it was going to say is not in sight).
STRONG_REVISION = (
    r"wait|hold on|hmm+|oops|scratch that|i take (?:that|it) back|i was wrong"
    r"|i made a mistake|on (?:second|further) thoughts?|correction|sorry"
    r"|let me (?:reconsider|re-?check|double-check|re-?evaluate|re-?read|correct|revise)"
)
WEAK_REVISION = (
    r"actually|however|but|that said|then again|re-?reading|reconsidering"
    r"|(?:on|upon)(?:\s+(?:closer|further|second))?\s+(?:reflection|inspection|look|reading)"
)
CLAUSE_START = r"(?:^|[.!?;:,。！？；：，(]|\s[-–—])\s*(?:(?:but|and|oh|no|ok|okay)[\s,]+)?"
STRONG = re.compile(rf"{CLAUSE_START}(?:{STRONG_REVISION})\b", re.IGNORECASE | re.MULTILINE)
REVISION = re.compile(
    rf"{CLAUSE_START}(?:{STRONG_REVISION}|{WEAK_REVISION})\b", re.IGNORECASE | re.MULTILINE
)
# Words after a verdict that doubt it ("Correct! Or is it?").
DOUBT = re.compile(
    rf"{CLAUSE_START}(?:or is it|or not|or maybe|or rather|not sure)\b",
    re.IGNORECASE | re.MULTILINE,
)
# What follows a first word that answers the request, not the question ("Yes, let me
# check.", "No, I will not answer that.").
ACKNOWLEDGE = re.compile(
    r"^[\s.,!:;，。！：；—–-]*(?:let me|let[’']s|let us|i will|i[’']ll|i can|i am going"
    r"|i[’']m going|here is|here[’']s|i[’']d be happy|happy to|of course|sure|okay|ok"
    r"|certainly|to answer|to determine|to check|first"
    r"|i (?:will not|won[’']t|cannot|can[’']t|can not|am unable|am not able|refuse|decline"
    r"|do not know|don[’']t know)|i[’']m (?:unable|not able))\b",
    re.IGNORECASE,
)
OPEN = "\"'«“‘„「『【[(<‹"
CLOSE = "\"'»”’」』】])>›"
MARKUP = re.compile(r"\*+|`+|__+|~~|(?<!\w)_|_(?!\w)")
LINE_START = re.compile(r"^\s*(?:#+|>+|[-•*+]\s|\d+[.)]\s)?\s*")
ITEM = re.compile(r"^\s*(?:[-•*+]\s|\d+[.)]\s|\(?[a-z0-9]\)\s)", re.IGNORECASE)
FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)```", re.DOTALL)
INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")  # soft hyphen, zero widths
STRUCTURED = "\x00"  # stands, in the text left to read, where a structured reply was
SENTENCE = re.compile(r"[^.!?。！？;；]*(?:[.!?。！？;；]+|$)")


def split_lines(text: str, items: list[bool] | None = None) -> list[str]:
    """Return the lines of ``text`` that hold words, cleaned of Markdown, list markers and emoji.

    A line where a structured reply stood is kept as the placeholder alone.
    ``items``, when given, gets whether each line was an item of a list.
    """
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            continue
        if line.strip() == STRUCTURED:
            out.append(STRUCTURED)
            if items is not None:
                items.append(False)
            continue
        item = ITEM.match(MARKUP.sub("", line)) is not None
        line = MARKUP.sub("", LINE_START.sub("", line, count=1)).strip()
        line = LINE_START.sub("", lstrip_symbols(line), count=1)
        if any(ch.isalnum() for ch in line):
            out.append(line)
            if items is not None:
                items.append(item)
    return out


def is_symbol(ch: str) -> bool:
    """Whether ``ch`` is an emoji or another symbol (✅, ❌, ➡), or a variation selector."""
    return unicodedata.category(ch) in ("So", "Sk") or "\ufe00" <= ch <= "\ufe0f"


def lstrip_symbols(value: str) -> str:
    while value and (is_symbol(value[0]) or value[0].isspace()):
        value = value[1:]
    return value


def strip_markup(value: str) -> str:
    """Return ``value`` without Markdown, quotes, brackets, spaces and punctuation around it.

    Emoji are dropped before it only: "✅ Correct" is "Correct", "Correct ✗" is not.
    """
    value = MARKUP.sub("", value).strip()

    def loose(ch: str) -> bool:
        return ch.isspace() or unicodedata.category(ch)[0] == "P"

    while value and (value[0] in OPEN or loose(value[0]) or is_symbol(value[0])):
        value = value[1:]
    while value and (value[-1] in CLOSE or loose(value[-1])):
        value = value[:-1]
    return value


def sentences_of(line: str) -> list[str]:
    """Return the sentences of ``line`` (a semicolon ends one too)."""
    return [s.strip() for s in SENTENCE.findall(line) if any(ch.isalnum() for ch in s)]


def json_objects(text: str) -> Iterator[tuple[int, int, Any]]:
    """Yield ``(start, end, object)`` for every whole JSON object in ``text`` (fences included)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            yield start, end, value
        start = text.find("{", end)


def find_fields(obj: Any, names: Sequence[str]) -> Iterator[Any]:
    """Yield the values of the keys ``names`` (case-insensitive) in ``obj``, nested ones too."""
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            if isinstance(key, str) and key.casefold() in names:
                yield value
            elif isinstance(value, Mapping | list):
                yield from find_fields(value, names)
    elif isinstance(obj, list):
        for item in obj:
            yield from find_fields(item, names)


def cut_spans(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """Return ``text`` with ``spans`` (and code fences left empty by them) replaced by a newline."""
    out, position = [], 0
    for start, end in spans:
        out.append(text[position:start])
        out.append(f"\n{STRUCTURED}\n")
        position = end
    out.append(text[position:])
    return FENCE.sub(
        lambda m: m.group(0) if m.group(1).strip(STRUCTURED + " \n") else f"\n{STRUCTURED}\n",
        "".join(out),
    )


def unescape(value: str) -> str:
    try:
        out = json.loads(f'"{value}"')
    except json.JSONDecodeError:
        return value
    return out if isinstance(out, str) else value
