"""Read the verdict an LLM's reply concludes with, or say why it gives none.

An LLM judge's reply is untrusted text: a verdict word in its reasoning is
not its verdict, and a negated verdict ("not correct") is not that verdict.
:func:`read_verdict` reads only a reply's *conclusion*, from these places:

* **structured**: the ``field`` of a JSON object (the whole reply, in a code
  fence, or inside prose; nested objects are searched too), a ``"field":
  "value"`` pair whose value is closed although the object was cut short, or
  an XML-style tag ``<field>value</field>``. When no object has ``field``,
  the usual names (``verdict``, ``answer``, ``choice``, ``label``,
  ``classification``, ``final_answer``, ``final_verdict``) are read instead.
  A field whose value is none of the choices gives no verdict (the reply's
  prose is not read in its place);
* **verdict lines**: a line whose key (``Verdict``, ``Final answer``,
  ``Final classification``, ``Answer``, ``Conclusion``, ``Label``,
  ``Judgement``, ``Decision``, ``Rating``, ``Grade``, ``Assessment``,
  ``Evaluation``, ``Result``, ``Choice``, ``Correctness``, ``Category``,
  ``Output`` or the ``field`` itself, words before it allowed) is followed by
  ``:``, ``=`` or a dash and the verdict (``Final classification:
  Inconsistent``, ``**Answer:** B``, ``Final answer — incorrect``), or a line
  that is such a key alone followed by a line that is the verdict;
* **the last sentence**: of the reply's last line, when it is the verdict
  (``Incorrect.``), starts with it after a connective (``Therefore,
  incorrect.``, ``…, so incorrect.``), or says that the answer judged *is*
  it (``So the answer is correct.``, ``It's incorrect.``, ``Both name
  Paris, so the answer is yes.``). The subject must be the answer judged or
  the verdict (``it``, ``this``, ``that``, ``the answer``, ``the proposed
  answer``, ``the response``, ``the summary``, ``my verdict``…) and the verb
  ``is``, ``are``, ``was``, ``were`` (or ``is classified as``, ``is deemed``…).
  A verdict said of anything else (``the reference answer is correct``),
  reported (``the user says the answer is correct``, ``the response claims
  to be correct``), hypothetical or required (``would be correct``, ``needs
  1972 to be correct``), or followed by a contrast or a condition
  (``correct, but…``, ``correct if…``) is none. A judgement before it is a
  conclusion (``I'd say it's correct``, ``I would say``, ``I conclude
  that``); a belief is a hedge (``I think``, ``I believe``, ``I guess``,
  ``it seems``);
* **the first sentence**: of the first line, when it is the verdict alone
  followed by a full stop, a colon, a dash or a comma (``Incorrect. The
  reference says 1972.``, ``Yes, both name Paris.``), but not a key and its
  value (``Correct: no``, ``Correct: false``) nor a comma followed by a
  hedge, a contrast, a condition or another verdict (``Yes, but…``);
* **bare**: the whole reply is the verdict (``Correct``, ``(B)``, ``"Yes."``,
  ``✅ Correct``).

Letters (``letters=True``, choices such as ``A``…``E``) are read from
structured fields, verdict lines, a bare reply, a last sentence whose
subject is the answer (``The answer is (C).``) and a first line that opens
with a bracketed letter (``(C) The submission is a superset…``) unless
several lines open so (a list of the options); never from other prose, where
"A" is also a word (a small "a", or "A" before a small word, is the article).

A reading that follows a negation (``not``, ``n't``, ``never``, ``neither``,
``nor``, ``without``, ``cannot``, ``whether``, ``if``), a hedge (``probably``,
``likely``, ``partially``…) or a question mark is no verdict. When the places
above give two different verdicts the reply gives none (``two verdicts``);
nor does a verdict that the reply takes back after it (``revised``): a
``Wait``, ``Hmm``, ``Hold on``, ``Scratch that``, ``Let me reconsider``…
after it, an ``Actually``, ``However``, ``But``, ``On reflection``… followed
by ``no``, by another verdict or by the verdict negated (``Correct. Wait,
no — it is not correct.``, ``No. Actually, yes.``), or a doubt (``Correct!
Or is it?``). An opening that answers the request rather than the question
is no verdict (``Yes, let me check.``, ``No, I will not answer that.``).

A reply cut off by the length limit (``truncated=True``) gives a verdict only
from a closed structured field, from a verdict line or first sentence on a
line that the cut did not reach, or from the line the cut fell in when what
concludes is complete before the cut: a verdict line ending in a full stop
(``Verdict: incorrect. The ref``), or the verdict opening the reply followed
by ``.``, ``!`` or a comma with no negation after it (``Yes. The``, ``Yes,
the sentence is supported by the``), and neither followed by a ``But``,
``Actually``… that the cut falls just after. A word at the cut with no
terminator (``Correct``, ``(C)``, ``The answer is corr``) is none, and the
last-sentence and bare rules never read a cut reply.

Case, Markdown emphasis (``**``, ``__``, backticks), quotes, brackets, emoji
and the punctuation of other languages (``。！：«»「」``) do not matter. The
verdict returned is spelled as in ``choices``. :func:`quote_reply` quotes a
reply in an error message.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from realitycheck.errors import InvalidInputError

__all__ = ["REASONS", "Reading", "parse_verdict", "quote_reply", "read_verdict"]

REASONS = {
    "json": "the field of a JSON object, or a closed field of a cut-short one",
    "tag": "an XML-style tag <field>verdict</field>",
    "verdict line": "a line such as 'Final classification: X'",
    "final line": "the last sentence of the last line ('Therefore, X.')",
    "first line": "the first sentence of the first line being the verdict ('X. Because…')",
    "bare": "the whole reply is the verdict",
    "empty": "the reply is empty",
    "truncated": "the reply was cut off before a complete conclusion",
    "two verdicts": "the conclusion gives two different verdicts",
    "revised": "the reply takes its verdict back after giving it ('Actually, …')",
    "negated": "the conclusion negates a verdict ('not correct')",
    "hedged": "the conclusion hedges ('probably correct', 'cannot tell')",
    "not a choice": "the verdict field holds none of the choices",
    "no conclusion": "no verdict line, structured field or concluding sentence",
}
"""Every ``Reading.reason``: the first six say how a verdict was read, the rest why none was."""


@dataclass(frozen=True)
class Reading:
    """What a reply concludes: its ``verdict`` (or ``None``) and ``reason`` (:data:`REASONS`)."""

    verdict: str | None
    reason: str


_KEYS = (
    r"verdicts?|answer|classification|conclusion|judge?ment|decision|label|rating|grade"
    r"|assessment|evaluation|result|choice|correctness|category|output"
)
_NEGATORS = re.compile(
    r"\b(?:not|no|never|neither|nor|none|cannot|without|whether|if|hardly|barely|rather"
    r"|instead|unless|nothing|nobody|isn|aren|wasn|weren|doesn|don|didn|won|wouldn|shouldn"
    r"|couldn|can|ain)\b|n[’']t\b",
    re.IGNORECASE,
)
_HEDGES = re.compile(
    r"\b(?:probably|likely|possibly|perhaps|maybe|might|may|could|seems?|appears?|unclear"
    r"|uncertain|unsure|partially|partly|somewhat|mostly|largely|arguably|debatable"
    r"|borderline|depends|unable|impossible|difficult|hard to|not sure|cannot|can[’']t"
    r"|(?:don[’']t|do not) know|i (?:think|believe|guess|suppose|feel))\b",
    re.IGNORECASE,
)
# After a verdict: a condition voids it anywhere, a contrast in prose.
_CONDITIONS = re.compile(
    r"\b(?:if|unless|provided|assuming|only\s+(?:if|when|in part|partly))\b", re.IGNORECASE
)
_CONTRAST = re.compile(
    r"\b(?:but|however|while|whereas|although|though|yet|except|only|when)\b",
    re.IGNORECASE,
)
# What follows "Correct:" when "Correct" is a key, not a verdict.
_VALUE_WORD = re.compile(
    r"^[\W_]*(?:yes|no|nope|true|false|none|null|nil|n/?a|partial(?:ly)?|unknown|maybe"
    r"|unclear|[01]|not|never|y|n|x)(?![\w/])|^\s*[✓✔✗✘❌✅]",
    re.IGNORECASE,
)
_CONNECTIVES = re.compile(
    r"^(?:(?:therefore|thus|hence|so|overall|accordingly|consequently|ultimately|finally"
    r"|in conclusion|in summary|in short|in sum|to conclude|to sum up|all in all|as such"
    r"|as a result|in the end|conclusion|final)\b[\s,:：;—–-]*)+",
    re.IGNORECASE,
)
# A conclusion after a comma: "Both name Paris, so the answer is yes."
_THEN = re.compile(
    r"(?:[,，;；:：—–]|\band)\s*(?:and\s+)?(?:so|therefore|thus|hence|consequently|accordingly)"
    r"\b[\s,，]*",
    re.IGNORECASE,
)
# Clauses before "…, the answer is X" that make it no conclusion of the judge's.
_LEAD_IN = re.compile(
    r"\b(?:if|unless|assuming|provided|suppose|supposing|whether|would|could|should|might"
    r"|may|according|says?|said|claims?|claimed|thinks?|believes?|user|otherwise|but"
    r"|however)\b|[?？]",
    re.IGNORECASE,
)
_SUBJECT = (
    r"(?:(?:the|this|that|my|our|its|their)\s+"
    r"(?:(?:proposed|submitted|given|candidate|predicted|generated|final|overall|whole"
    r"|entire|correct|right|best|model[’']?s?|student[’']?s?|assistant[’']?s?|ai[’']?s?)\s+)*"
    r"(?:answer|response|summary|sentence|claim|statement|output|prediction|reply|submission"
    r"|verdict|classification|label|assessment|judge?ment|evaluation|result|conclusion|grade"
    r"|rating|decision|category|choice|option)(?:\s+(?:to|for)\s+(?:the|this)\s+question)?"
    r"|(?:it|this|that)(?:\s+one)?)(?!\w)"
)
# A judgement the judge makes ("I'd say it's correct") is a conclusion ...
_JUDGEMENT = (
    r"(?:i[’']d\s+say|i\s+would\s+say|i\s+(?:conclude|find|determine|judge)"
    r"|my\s+(?:final\s+)?(?:verdict|conclusion|judge?ment|assessment)\s+is)\s+(?:that\s+)?"
)
# ... a belief it holds ("I think it is correct") is a hedge.
_BELIEF = re.compile(
    r"^(?:i\s+(?:think|believe|guess|suppose|feel|suspect|reckon)|it\s+(?:seems|appears|looks))\b",
    re.IGNORECASE,
)
_CLASSED = r"(?:classified|rated|judged|graded|deemed|considered|categori[sz]ed|labell?ed|marked)"
_COPULA = re.compile(
    rf"^(?:(?:{_JUDGEMENT})?{_SUBJECT}(?:[’']s|\s+(?:is|are|was|were|equals))(?:\s*[:：])?\s+"
    r"(?:(?:therefore|thus|hence|clearly|indeed|overall|ultimately|definitely|fully|entirely"
    r"|completely|wholly|simply|also)\s+)?"
    r"(?:(?:classified|rated|judged|graded|deemed|considered|categori[sz]ed)\s+(?:as\s+)?)?"
    # "The response should be classified as correct.": the judge's own classification.
    rf"|{_SUBJECT}\s+(?:should|must)\s+be\s+{_CLASSED}\s+(?:as\s+)?"
    # "I would rate this response as incorrect."
    rf"|i(?:[’']d|\s+would|\s+will)?\s+(?:rate|grade|classify|label|mark|judge|deem"
    rf"|consider|call)\s+{_SUBJECT}\s+(?:as\s+)?)",
    re.IGNORECASE,
)
# Words that take back a verdict given before them, at the start of a clause: a strong
# one ("Wait", "Scratch that") takes it back by itself; a weak one ("Actually", "But")
# only when "no", another verdict or the verdict negated follows, or the cut falls
# right after it (what it was going to say is not in sight).
_STRONG_REVISION = (
    r"wait|hold on|hmm+|oops|scratch that|i take (?:that|it) back|i was wrong"
    r"|i made a mistake|on (?:second|further) thoughts?|correction|sorry"
    r"|let me (?:reconsider|re-?check|double-check|re-?evaluate|re-?read|correct|revise)"
)
_WEAK_REVISION = (
    r"actually|however|but|that said|then again|re-?reading|reconsidering"
    r"|(?:on|upon)(?:\s+(?:closer|further|second))?\s+(?:reflection|inspection|look|reading)"
)
_CLAUSE_START = r"(?:^|[.!?;:,。！？；：，(]|\s[-–—])\s*(?:(?:but|and|oh|no|ok|okay)[\s,]+)?"
_STRONG = re.compile(rf"{_CLAUSE_START}(?:{_STRONG_REVISION})\b", re.IGNORECASE | re.MULTILINE)
_REVISION = re.compile(
    rf"{_CLAUSE_START}(?:{_STRONG_REVISION}|{_WEAK_REVISION})\b", re.IGNORECASE | re.MULTILINE
)
# Words after a verdict that doubt it ("Correct! Or is it?").
_DOUBT = re.compile(
    rf"{_CLAUSE_START}(?:or is it|or not|or maybe|or rather|not sure)\b",
    re.IGNORECASE | re.MULTILINE,
)
# What follows a first word that answers the request, not the question ("Yes, let me
# check.", "No, I will not answer that.").
_ACKNOWLEDGE = re.compile(
    r"^[\s.,!:;，。！：；—–-]*(?:let me|let[’']s|let us|i will|i[’']ll|i can|i am going"
    r"|i[’']m going|here is|here[’']s|i[’']d be happy|happy to|of course|sure|okay|ok"
    r"|certainly|to answer|to determine|to check|first"
    r"|i (?:will not|won[’']t|cannot|can[’']t|can not|am unable|am not able|refuse|decline"
    r"|do not know|don[’']t know)|i[’']m (?:unable|not able))\b",
    re.IGNORECASE,
)
_OPEN = "\"'«“‘„「『【[(<‹"
_CLOSE = "\"'»”’」』】])>›"
_MARKUP = re.compile(r"\*+|`+|__+|~~|(?<!\w)_|_(?!\w)")
_LINE_START = re.compile(r"^\s*(?:#+|>+|[-•*+]\s|\d+[.)]\s)?\s*")
_ITEM = re.compile(r"^\s*(?:[-•*+]\s|\d+[.)]\s|\(?[a-z0-9]\)\s)", re.IGNORECASE)
_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)```", re.DOTALL)
_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")  # soft hyphen, zero widths
_STRUCTURED = "\x00"  # stands, in the text left to read, where a structured reply was
_SENTENCE = re.compile(r"[^.!?。！？;；]*(?:[.!?。！？;；]+|$)")


def parse_verdict(
    text: str,
    *,
    choices: Sequence[str],
    field: str = "verdict",
    letters: bool = False,
    truncated: bool = False,
) -> str | None:
    """Return the verdict ``text`` concludes with (one of ``choices``), or ``None``.

    The rules are in the module documentation; :func:`read_verdict` also says
    why a reply gives no verdict.

    Args:
        text: The reply.
        choices: The verdicts accepted (``("correct", "incorrect")``; a yes/no
            question is ``("yes", "no")``). Matched case-insensitively,
            returned as spelled here; a choice may be several words.
        field: The JSON field (and tag) the prompt asked for.
        letters: Whether the choices are letters (``A``…``E``), read only from
            structured fields, verdict lines, a bare reply and a first line
            that opens with a bracketed letter.
        truncated: Whether the reply was cut off by the length limit
            (``finish_reason == "length"``).

    Raises:
        InvalidInputError: If ``choices`` is empty or holds an empty choice.
    """
    return read_verdict(
        text, choices=choices, field=field, letters=letters, truncated=truncated
    ).verdict


def read_verdict(
    text: str,
    *,
    choices: Sequence[str],
    field: str = "verdict",
    letters: bool = False,
    truncated: bool = False,
) -> Reading:
    """Return the :class:`Reading` of ``text``: its verdict and how it was read, or why none.

    Arguments as :func:`parse_verdict`.

    Raises:
        InvalidInputError: If ``choices`` is empty or holds an empty choice.
    """
    reader = _Reader(choices, field, letters)
    if not isinstance(text, str) or not text.strip():
        return Reading(None, "empty")
    text = _INVISIBLE.sub("", text.replace(_STRUCTURED, ""))
    found: list[_Found] = []
    problems: list[str] = []
    rest = reader.structured(text, found, problems)
    items: list[bool] = []
    lines = _lines(rest, items)
    # In a list of two items or more, an item that opens with a verdict is the verdict
    # of that item ("1. Consistent: …\n2. Unwanted: …"), not of the reply.
    listing = sum(items) > 1
    cut = None
    if truncated and not rest.endswith("\n") and lines and lines[-1] != _STRUCTURED:
        cut = lines.pop()  # the cut may have fallen inside the last line
    everything = [*lines, cut] if cut is not None else lines
    placed = [i for i, line in enumerate(everything) if line == _STRUCTURED]
    found[:] = [_Found(f.verdict, f.how, placed[-1] if placed else 0, 0) for f in found]
    words = [i for i, line in enumerate(lines) if line != _STRUCTURED]
    reader.verdict_lines(lines, found, problems)
    listed = sum(reader.opens_with_letter(line) for line in everything) > 1
    if words and not (listing and items[words[0]]):
        following = everything[words[0] + 1] if words[0] + 1 < len(everything) else ""
        reader.first_sentence(
            lines[words[0]], words[0], found, problems, "first line", listed, following
        )
    if cut is not None:
        complete = re.match(r"^(.*(?:[.!](?=\s|$)|[。！]))", cut)
        if complete is not None:
            reader.verdict_lines([complete.group(1)], found, problems, offset=len(lines))
        if not words and not (listing and items[-1]):
            reader.first_sentence(
                cut, len(lines), found, problems, "first line", listed, "", cut=True
            )
    # The last line concludes only when no structured reply follows it.
    ends_structured = rest.strip().endswith(_STRUCTURED)
    if words and not truncated and not ends_structured:
        last = words[-1]
        item = listing and items[last]
        if len(words) > 1 and not item:
            reader.first_sentence(lines[last], last, found, problems, "final line", listed, "")
        reader.last_sentence(lines[last], last, found, problems, item=item)
        if not found and len(words) == 1 and "not a choice" not in problems:
            got = reader.bare(lines[last])
            if got is not None:
                return Reading(got, "bare")
    verdicts = dict.fromkeys(f.verdict for f in found)
    if len(verdicts) > 1:
        return Reading(None, "two verdicts")
    if verdicts:
        verdict, how = found[0].verdict, found[0].how
        latest = max(found, key=lambda f: (f.line, f.column))
        after = "\n".join(
            [everything[latest.line][latest.column :], *everything[latest.line + 1 :]]
        )
        if reader.revised(verdict, after, cut=truncated):
            return Reading(None, "revised")
        if how in ("final line", "first line") and len(words) == 1 and cut is None:
            if reader.bare(lines[words[0]]) == verdict and rest.strip() == text.strip():
                how = "bare"
        return Reading(verdict, how)
    if "not a choice" in problems:
        return Reading(None, "not a choice")
    if truncated:
        return Reading(None, "truncated")
    for reason in ("two verdicts", "negated", "hedged"):
        if reason in problems:
            return Reading(None, reason)
    return Reading(None, "no conclusion")


def quote_reply(text: str, limit: int = 80) -> str:
    """Return a short quote of a reply for a message: spaces collapsed, the middle elided.

    A reply longer than ``limit`` characters keeps its start and its end
    (where a conclusion would be) around ``" … "``. The quote is written as
    ``repr`` writes it, quotes included: control, escape and bidi characters
    are escaped, so it is safe in a message that reaches a terminal or a file.

    Raises:
        InvalidInputError: If ``limit`` is below 5.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 5:
        raise InvalidInputError(
            f"The 'limit' parameter of quote_reply must be an int >= 5. Got {limit!r} instead."
        )
    short = " ".join(str(text).split())
    if len(short) > limit:
        head = limit // 2
        short = short[:head] + " … " + short[len(short) - (limit - head - 3) :]
    return repr(short)


@dataclass(frozen=True)
class _Found:
    """A verdict read, how, and where: its line and the column after which the reply goes on."""

    verdict: str
    how: str
    line: int = 0
    column: int = 0


def _lines(text: str, items: list[bool] | None = None) -> list[str]:
    """Return the lines of ``text`` that hold words, cleaned of Markdown, list markers and emoji.

    A line where a structured reply stood is kept as the placeholder alone.
    ``items``, when given, gets whether each line was an item of a list.
    """
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            continue
        if line.strip() == _STRUCTURED:
            out.append(_STRUCTURED)
            if items is not None:
                items.append(False)
            continue
        item = _ITEM.match(_MARKUP.sub("", line)) is not None
        line = _MARKUP.sub("", _LINE_START.sub("", line, count=1)).strip()
        line = _LINE_START.sub("", _lstrip_symbols(line), count=1)
        if any(ch.isalnum() for ch in line):
            out.append(line)
            if items is not None:
                items.append(item)
    return out


def _is_symbol(ch: str) -> bool:
    """Whether ``ch`` is an emoji or another symbol (✅, ❌, ➡), or a variation selector."""
    return unicodedata.category(ch) in ("So", "Sk") or "\ufe00" <= ch <= "\ufe0f"


def _lstrip_symbols(value: str) -> str:
    while value and (_is_symbol(value[0]) or value[0].isspace()):
        value = value[1:]
    return value


def _strip(value: str) -> str:
    """Return ``value`` without Markdown, quotes, brackets, spaces and punctuation around it.

    Emoji are dropped before it only: "✅ Correct" is "Correct", "Correct ✗" is not.
    """
    value = _MARKUP.sub("", value).strip()

    def loose(ch: str) -> bool:
        return ch.isspace() or unicodedata.category(ch)[0] == "P"

    while value and (value[0] in _OPEN or loose(value[0]) or _is_symbol(value[0])):
        value = value[1:]
    while value and (value[-1] in _CLOSE or loose(value[-1])):
        value = value[:-1]
    return value


def _sentences(line: str) -> list[str]:
    """Return the sentences of ``line`` (a semicolon ends one too)."""
    return [s.strip() for s in _SENTENCE.findall(line) if any(ch.isalnum() for ch in s)]


class _Reader:
    """The rules of the module documentation for one set of choices."""

    def __init__(self, choices: Sequence[str], field: str, letters: bool) -> None:
        if (
            isinstance(choices, str)
            or not choices
            or not all(isinstance(c, str) and c.strip() for c in choices)
        ):
            raise InvalidInputError(
                "The 'choices' parameter of parse_verdict must be a non-empty sequence of "
                f"non-empty strings. Got {choices!r} instead."
            )
        self.letters = letters
        self.field = field
        self.by_key = {" ".join(c.split()).casefold(): c for c in choices}
        ordered = sorted(self.by_key, key=len, reverse=True)
        words = "|".join(r"\s+".join(map(re.escape, c.split())) for c in ordered)
        self.mention = re.compile(rf"(?<![\w-])(?:{words})(?![\w-])", re.IGNORECASE)
        close = re.escape(_CLOSE)
        if letters:
            # A bracketed letter may be followed by anything ("(C) The submission…").
            self.lead = re.compile(
                rf"^(?:(?:option|choice|answer|letter)\s+)?(?:[\[(](?P<v>{words})[\])]"
                rf"|(?P<w>{words})\)?[{close}]*(?=$|\s*[.:)\]—–,;。：！!]|\s+[-(—–]))",
                re.IGNORECASE,
            )
            self.opening = re.compile(rf"^[\[(](?i:(?P<v>{words}))[\])](?=$|\s+[A-Z]|\s*[.:—–-])")
        else:
            self.lead = re.compile(
                rf"^[{re.escape(_OPEN)}\s]*(?P<v>{words})[{close}]*"
                rf"(?=$|\s*[.,;:!。，；：！、—–(\[（【]|\s+-|\s+(?:because|since|as|for)\b)",
                re.IGNORECASE,
            )
        key = rf"(?:{_KEYS}|{re.escape(field)}|{re.escape(field.replace('_', ' '))})"
        self.key_line = re.compile(
            rf"(?<![\w-])(?:final\s+|overall\s+|my\s+)?{key}\b\s*(?:\([^)]{{0,60}}\))?"
            rf"\s*[\"'’]?\s*(?:[:：=\]】→⇒]|—|–|-{{1,2}}>?|=>)\s*(.*)$",
            re.IGNORECASE,
        )
        self.key_alone = re.compile(
            rf"^(?:final\s+|overall\s+|my\s+)?{key}\s*(?:\([^)]{{0,60}}\))?\s*[:：=—–-]*$",
            re.IGNORECASE,
        )
        self.names = [field, "verdict", "answer", "choice", "label", "classification"]
        self.names += ["final_answer", "final_verdict"]
        self.names = list(dict.fromkeys(n.casefold() for n in self.names))

    # -- one value ---------------------------------------------------------

    def choice(self, value: str) -> str | None:
        return self.by_key.get(" ".join(value.split()).casefold())

    def bare(self, value: str) -> str | None:
        """Return the choice ``value`` is, quotes, brackets and punctuation aside (not ``"x?"``)."""
        if re.search(r"[?？][\W_]*$", value):
            return None
        stripped = _strip(value)
        if self.letters:
            stripped = re.sub(r"^(?:option|choice|answer|letter)\s+", "", stripped, flags=re.I)
            stripped = _strip(stripped)
        return self.choice(stripped)

    def lead_choice(self, match: re.Match[str]) -> str | None:
        return self.choice(match.group("v") or match.groupdict().get("w") or "")

    def mentions(self, text: str) -> Iterator[tuple[str, bool]]:
        """Yield each choice named in ``text`` and whether a negation governs it.

        With letters, only a capital letter counts, and not the article ("A
        superset").
        """
        for other in self.mention.finditer(text):
            word = other.group(0)
            if self.letters and (
                not word.isupper()
                or (word in ("A", "I") and re.match(r"\s+[a-z]", text[other.end() :]))
            ):
                continue
            before = re.split(r"[,，、.!?。！？;；:：]", text[: other.start()])[-1]
            choice = self.choice(word)
            if choice is not None:
                yield choice, bool(_NEGATORS.search(before))

    def agrees(self, got: str, after: str, problems: list[str], *, prose: bool) -> bool:
        """Whether the rest of the clause after a verdict leaves it standing.

        Not after a hedge, a condition (``correct if…``), a key's value
        (``Correct: no``), another verdict, the verdict negated, nor, in prose,
        a contrast (``correct, but…``).
        """
        clause, *ends = re.split(r"([.!?。！？;；])", after, maxsplit=1)
        if ends[:1] in (["?"], ["？"]) or _HEDGES.search(clause):
            problems.append("hedged")
            return False
        if _CONDITIONS.search(clause) or (prose and _CONTRAST.search(clause)):
            problems.append("hedged")
            return False
        if prose and _ACKNOWLEDGE.match(after):
            return False
        keyed = re.match(r"\s*(?:[:：=]|[-–—]+)\s*(.*)", after)
        if keyed and (_VALUE_WORD.match(keyed.group(1)) or self.lead.match(keyed.group(1))):
            return False  # "Correct: no" is a key and its value, not a verdict
        for other, negated in self.mentions(clause):
            if other != got and not negated:
                problems.append("two verdicts")
                return False
            if other == got and negated:
                problems.append("negated")  # "correct, but no: not correct"
                return False
        return True

    def value(self, value: str, problems: list[str], *, prose: bool = False) -> str | None:
        """Return the choice a value starts with (``"Incorrect — because…"``), or ``None``."""
        value = _MARKUP.sub("", value).strip()
        got = self.bare(value)
        if got is not None:
            return got
        match = self.lead.match(value)
        if match is None:
            self.why(value, problems)
            return None
        got = self.lead_choice(match)
        if got is None or not self.agrees(got, value[match.end() :], problems, prose=prose):
            return None
        return got

    def clause(self, text: str, problems: list[str]) -> str | None:
        """Return the verdict a concluding clause states (``"So the answer is correct."``)."""
        text = _CONNECTIVES.sub("", _MARKUP.sub("", text).strip())
        if text.rstrip(_CLOSE + " ").endswith(("?", "？")):
            return None
        tails = list(_THEN.finditer(text))
        if tails:  # "Both name Paris, so the answer is yes."
            text = text[tails[-1].end() :]
        if self.lead.match(text):
            return self.value(text, problems, prose=True)
        got = self.statement(text, problems)
        if got is None and not self.letters:
            self.why(text, problems)
        return got

    def statement(self, text: str, problems: list[str]) -> str | None:
        """Return the verdict of ``"<the answer> is <verdict>"`` (the subject allow-listed)."""
        candidates = [text]
        *before, last = re.split(r"[,，;；]", text)
        if before and not _LEAD_IN.search(",".join(before)):
            if not any(True for _ in self.mentions(",".join(before))):
                candidates.append(_CONNECTIVES.sub("", re.sub(r"^\s*and\s+", "", last)))
        for candidate in candidates:
            candidate = candidate.strip()
            if _BELIEF.match(candidate):
                problems.append("hedged")
                continue
            match = _COPULA.match(candidate)
            if match is None or self.mention.search(match.group(0)):
                continue
            if self.letters and not re.search(rf"\b(?:{_KEYS}|option)\b", match.group(0), re.I):
                continue
            rest = candidate[match.end() :]
            if self.lead.match(rest):
                return self.value(rest, problems, prose=True)
            self.why(rest, problems)
        return None

    def why(self, text: str, problems: list[str]) -> None:
        """Note why a clause that names a choice gave none (negated or hedged)."""
        for mention in self.mention.finditer(text):
            if self.letters and not mention.group(0).isupper():
                continue
            before = text[max(0, mention.start() - 40) : mention.start()]
            before = re.split(r"[.!?。！？;；]", before)[-1]
            if _NEGATORS.search(before):
                problems.append("negated")
            elif _HEDGES.search(before):
                problems.append("hedged")

    def opens_with_letter(self, line: str) -> bool:
        return self.letters and self.opening.match(line) is not None

    def revised(self, verdict: str, after: str, *, cut: bool) -> bool:
        """Whether the text after a verdict takes it back ("Actually, incorrect.", "Wait, no").

        A strong marker ("Wait") is enough; a weak one ("Actually", "But") is
        when followed by "no", another verdict or the verdict negated, or, in a
        reply that was ``cut`` short, by fewer than four words before the cut.
        """
        if _DOUBT.search(after) or _STRONG.search(after):
            return True
        for marker in _REVISION.finditer(after):
            rest = after[marker.end() :]
            if cut and len(rest.split()) < 4 and not re.search(r"[.!?。！？;；]", rest):
                return True  # "Verdict: correct. Actually" or "…, but the": the rest is cut
            if re.match(r"[\s,:：—–-]*(?:no|nope)\b(?![^\S\n]+\w)", rest, re.IGNORECASE):
                return True
            for other, negated in self.mentions(rest):
                if (other != verdict) != negated:
                    return True
        return False

    # -- the places of a conclusion ------------------------------------------

    def structured(self, text: str, found: list[_Found], problems: list[str]) -> str:
        """Read JSON fields and tags into ``found``; return ``text`` without them."""
        spans: list[tuple[int, int]] = []
        objects: list[Any] = []
        for start, end, obj in _json_objects(text):
            spans.append((start, end))
            objects.append(obj)
        values: list[Any] = []
        for names in ([self.field.casefold()], self.names):
            for obj in objects:
                values.extend(_fields(obj, names))
            if values:
                break
        outside = _cut(text, spans)
        if not values:
            # A cut-short object: a closed "field": "value" pair outside any whole object.
            keys = "|".join(re.escape(n) for n in [self.field, *self.names])
            pair = re.compile(rf'"(?:{keys})"\s*:\s*"((?:[^"\\]|\\.)*)"', re.IGNORECASE)
            for match in pair.finditer(outside):
                values.append(_unescape(match.group(1)))
            if values:
                outside = pair.sub(f"\n{_STRUCTURED}\n", outside)
        for value in values:
            got = self.value(value, problems) if isinstance(value, str) else None
            if got is None:
                problems.append("not a choice")
            else:
                found.append(_Found(got, "json"))
        tags = "|".join(re.escape(n) for n in dict.fromkeys([self.field, "verdict", "answer"]))
        tag = re.compile(rf"<({tags})>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
        for match in tag.finditer(outside):
            got = self.value(match.group(2), problems)
            if got is None:
                problems.append("not a choice")
            else:
                found.append(_Found(got, "tag"))
        return tag.sub(f"\n{_STRUCTURED}\n", outside)

    def verdict_lines(
        self,
        lines: Sequence[str],
        found: list[_Found],
        problems: list[str],
        offset: int = 0,
    ) -> None:
        for i, line in enumerate(lines, start=offset):
            if self.key_alone.match(line) and i - offset + 1 < len(lines):
                following = lines[i - offset + 1]
                got = self.bare(following)
                if got is not None:
                    found.append(_Found(got, "verdict line", i + 1, len(following)))
                continue
            for match in self.key_line.finditer(line):
                value = match.group(1)
                got = self.value(value, problems) if value.strip() else None
                if got is None and value.strip() and not self.letters:
                    got = self.clause(value, problems)
                if got is not None:
                    found.append(_Found(got, "verdict line", i, match.start(1)))
                    break

    def first_sentence(
        self,
        line: str,
        index: int,
        found: list[_Found],
        problems: list[str],
        how: str,
        listed: bool,
        following: str,
        *,
        cut: bool = False,
    ) -> None:
        """Read a line that opens with the verdict alone (``Incorrect. The reference…``).

        With letters, a line that opens with a bracketed letter (``(C) The
        submission…``), unless several lines do (a list of the options).
        ``following`` is the next line, where a colon's value may be.
        When the line is the one the cut fell in (``cut``), the verdict must
        be followed by ``.``, ``!`` or a comma, and a comma by no negation.
        """
        if self.letters:
            match = self.opening.match(line)
            if match is None or listed:
                return
            after = line[match.end() :]
            if re.match(r"[\s.:—–-]*(?:not|no|never|probably|maybe|perhaps)\b", after, re.I):
                return
            if cut and not re.search(r"\w", after):
                return  # "(C)" at the cut may go on "(C) and (D)…"
            got = self.lead_choice(match)
            if got is not None:
                found.append(_Found(got, how, index, match.end()))
            return
        ends = r"[.。!！,，;；]" if cut else r"[.。!！:：,，;；]|\s[—–-](?:\s|$)|$"
        match = re.match(rf"^(.*?)(?:{ends})", line)
        if match is None:
            return
        got = self.bare(match.group(1))
        if got is None:
            return
        after = line[match.end(1) :]
        if _ACKNOWLEDGE.match(after):
            return  # "Yes, let me check." answers the request, not the question
        if after.startswith((",", "，")):
            words = after[1:]
            if not re.search(r"\w", words) or not self.agrees(got, words, problems, prose=True):
                return
            if cut and _NEGATORS.search(words):
                return  # "Yes, the sentence is not supp…": the end is not in sight
        elif after.startswith((":", "：")) or after.strip().startswith(("—", "–", "-")):
            if not self.agrees(got, after, problems, prose=False):
                return
            value = after.strip()[1:].strip() or following  # "Correct:\nno"
            if not value or value == _STRUCTURED or _VALUE_WORD.match(value):
                return
            if self.lead.match(value):
                return  # "Correct: no" is a key and its value
        found.append(_Found(got, how, index, match.end(1)))

    def last_sentence(
        self, line: str, index: int, found: list[_Found], problems: list[str], *, item: bool
    ) -> None:
        """Read the last sentence of the last line; of a list's item, only a concluding one.

        The last item of a list concludes only after a connective or as a
        statement (``- So the answer is correct.``), not as a verdict that
        opens it (``2. Consistent: …``).
        """
        if self.letters:
            if re.search(rf"\b(?:{_KEYS}|option)\b", line, re.I):
                sentences = _sentences(line)
                got = self.clause(sentences[-1], problems) if sentences else None
                if got is not None:
                    found.append(_Found(got, "final line", index, len(line)))
            return
        tail = re.search(r"[:：]([^:：]*)$", line)
        if (
            not item
            and tail is not None
            and not _NEGATORS.search(line[: tail.start()])
            and self.bare(line[: tail.start()]) is None
        ):
            got = self.bare(tail.group(1))
            if got is not None:
                found.append(_Found(got, "final line", index, len(line)))
                return
        sentences = _sentences(line)
        if not sentences:
            return
        if item and not _CONNECTIVES.match(sentences[-1]):
            if self.lead.match(_MARKUP.sub("", sentences[-1]).strip()):
                return
        got = self.clause(sentences[-1], problems)
        if got is not None:
            found.append(_Found(got, "final line", index, len(line)))
        else:
            self.why(line, problems)


def _json_objects(text: str) -> Iterator[tuple[int, int, Any]]:
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


def _fields(obj: Any, names: Sequence[str]) -> Iterator[Any]:
    """Yield the values of the keys ``names`` (case-insensitive) in ``obj``, nested ones too."""
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            if isinstance(key, str) and key.casefold() in names:
                yield value
            elif isinstance(value, Mapping | list):
                yield from _fields(value, names)
    elif isinstance(obj, list):
        for item in obj:
            yield from _fields(item, names)


def _cut(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """Return ``text`` with ``spans`` (and code fences left empty by them) replaced by a newline."""
    out, position = [], 0
    for start, end in spans:
        out.append(text[position:start])
        out.append(f"\n{_STRUCTURED}\n")
        position = end
    out.append(text[position:])
    return _FENCE.sub(
        lambda m: m.group(0) if m.group(1).strip(_STRUCTURED + " \n") else f"\n{_STRUCTURED}\n",
        "".join(out),
    )


def _unescape(value: str) -> str:
    try:
        out = json.loads(f'"{value}"')
    except json.JSONDecodeError:
        return value
    return out if isinstance(out, str) else value
