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
  incorrect.``), or says that something *is* it (``So the answer is
  correct.``);
* **the first sentence**: of the first line, when it is the verdict alone
  followed by a full stop, a colon or a dash (``Incorrect. The reference
  says 1972.``);
* **bare**: the whole reply is the verdict (``Correct``, ``(B)``, ``"Yes."``).

Letters (``letters=True``, choices such as ``A``…``E``) are read from
structured fields, verdict lines and a bare reply only: never from a
sentence, where "A" is also a word.

A reading that follows a negation (``not``, ``n't``, ``never``, ``neither``,
``nor``, ``without``, ``cannot``, ``whether``, ``if``), a hedge (``probably``,
``likely``, ``partially``…) or a question mark is no verdict. When the places
above give two different verdicts the reply gives none (``two verdicts``).
A reply cut off by the length limit (``truncated=True``) gives a verdict only
from a closed structured field or from a verdict line (or first sentence) on
a line that the cut did not reach; never from its last line.

Case, Markdown emphasis (``**``, ``__``, backticks), quotes, brackets and the
punctuation of other languages (``。！：«»「」``) do not matter. The verdict
returned is spelled as in ``choices``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from realitycheck.errors import InvalidInputError

__all__ = ["REASONS", "Reading", "parse_verdict", "read_verdict"]

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
    r"|borderline|depends|unable|impossible|difficult|hard to|not sure|cannot|can[’']t)\b",
    re.IGNORECASE,
)
_CONNECTIVES = re.compile(
    r"^(?:(?:therefore|thus|hence|so|overall|accordingly|consequently|ultimately|finally"
    r"|in conclusion|in summary|in short|in sum|to conclude|to sum up|all in all|as such"
    r"|as a result|in the end|conclusion|final)\b[\s,:：;—–-]*)+",
    re.IGNORECASE,
)
_COPULA = re.compile(
    r"\b(?:is|are|was|were|be|as|equals)\s+(?:(?:therefore|thus|hence|clearly|indeed|overall"
    r"|ultimately|definitely|fully|entirely|completely|wholly|simply)\s+)?"
    r"(?:(?:labell?ed|classified|rated|judged|graded|deemed|marked|considered"
    r"|categori[sz]ed)\s+(?:as\s+)?)?",
    re.IGNORECASE,
)
_OPEN = "\"'«“‘„「『【[(<‹"
_CLOSE = "\"'»”’」』】])>›"
_MARKUP = re.compile(r"\*+|`+|__+|~~|(?<!\w)_|_(?!\w)")
_LINE_START = re.compile(r"^\s*(?:#+|>+|[-•*+]\s|\d+[.)]\s)?\s*")
_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)```", re.DOTALL)
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
            structured fields, verdict lines and a bare reply.
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
    text = text.replace(_STRUCTURED, "")
    found: list[tuple[str, str]] = []  # (verdict, how), in order of trust
    problems: list[str] = []
    rest = reader.structured(text, found, problems)
    lines = _lines(rest)
    if truncated and not rest.endswith("\n") and lines:
        lines = lines[:-1]  # the cut may have fallen inside the last line
    reader.verdict_lines(lines, found, problems)
    if lines:
        reader.first_sentence(lines[0], found, "first line")
    # The last line concludes only when no structured reply follows it.
    ends_structured = rest.strip().endswith(_STRUCTURED)
    if lines and not truncated and not ends_structured:
        if len(lines) > 1:
            reader.first_sentence(lines[-1], found, "final line")
        reader.last_sentence(lines[-1], found, problems)
        if not found and len(lines) == 1 and not any(p == "not a choice" for p in problems):
            got = reader.bare(lines[0])
            if got is not None:
                return Reading(got, "bare")
    verdicts = dict.fromkeys(v for v, _ in found)
    if len(verdicts) > 1:
        return Reading(None, "two verdicts")
    if verdicts:
        verdict, how = found[0]
        if how in ("final line", "first line") and len(lines) == 1 and len(text.strip()) > 0:
            if reader.bare(lines[0]) == verdict and rest.strip() == text.strip():
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


def _lines(text: str) -> list[str]:
    """Return the lines of ``text`` that hold words, cleaned of Markdown and list markers."""
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            continue
        line = _MARKUP.sub("", _LINE_START.sub("", line, count=1)).strip()
        if any(ch.isalnum() for ch in line):
            out.append(line)
    return out


def _strip(value: str) -> str:
    """Return ``value`` without Markdown, surrounding quotes, brackets, spaces and punctuation."""
    value = _MARKUP.sub("", value).strip()
    while value and (
        value[0] in _OPEN or value[0].isspace() or unicodedata.category(value[0])[0] == "P"
    ):
        value = value[1:]
    while value and (
        value[-1] in _CLOSE or value[-1].isspace() or unicodedata.category(value[-1])[0] == "P"
    ):
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
            self.lead = re.compile(
                rf"^(?:(?:option|choice|answer|letter)\s+)?[\[(]?({words})[\])]?"
                rf"[{close}]*(?=$|\s*[.:)\]—–,;。：！!]|\s+[-(—–])",
                re.IGNORECASE,
            )
        else:
            self.lead = re.compile(
                rf"^[{re.escape(_OPEN)}\s]*({words})[{close}]*"
                rf"(?=$|\s*[.,;:!。，；：！、—–(\[]|\s+-|\s+(?:because|since|as|for)\b)",
                re.IGNORECASE,
            )
        key = rf"(?:{_KEYS}|{re.escape(field)}|{re.escape(field.replace('_', ' '))})"
        self.key_line = re.compile(
            rf"(?<![\w-])(?:final\s+|overall\s+|my\s+)?{key}\b\s*(?:\([^)]{{0,60}}\))?"
            rf"\s*[\"'’]?\s*(?:[:：=\]】]|—|–|-{{1,2}}>?|=>)\s*(.*)$",
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

    def value(self, value: str, problems: list[str]) -> str | None:
        """Return the choice a value starts with (``"Incorrect — because…"``), or ``None``."""
        value = _MARKUP.sub("", value).strip()
        got = self.bare(value)
        if got is not None:
            return got
        match = self.lead.match(value)
        if match is None:
            self.why(value, problems)
            return None
        got = self.choice(match.group(1))
        clause = re.split(r"[.!?。！？;；]", value[match.end() :], maxsplit=1)[0]
        if _HEDGES.search(clause) or value[match.end() :].lstrip().startswith(("?", "？")):
            problems.append("hedged")
            return None
        for other in self.mention.finditer(clause):
            before = re.split(r"[,，、]", clause[: other.start()])[-1]
            if not _NEGATORS.search(before):
                if self.choice(other.group(0)) != got:
                    problems.append("two verdicts")
                    return None
            elif self.choice(other.group(0)) == got:
                problems.append("negated")  # "correct, but no: not correct"
                return None
        return got

    def clause(self, text: str, problems: list[str]) -> str | None:
        """Return the verdict a concluding clause states (``"So the answer is correct."``)."""
        text = _CONNECTIVES.sub("", _MARKUP.sub("", text).strip())
        if text.rstrip(_CLOSE + " ").endswith(("?", "？")):
            return None
        if self.lead.match(text):
            return self.value(text, problems)
        for copula in _COPULA.finditer(text):
            prefix, rest = text[: copula.start()], text[copula.end() :]
            if self.letters and not re.search(rf"\b(?:{_KEYS})\b", prefix, re.I):
                continue
            if len(prefix) > 100 or re.search(r"[,;:?—–]", prefix):
                continue
            if _NEGATORS.search(prefix) or self.mention.search(prefix):
                if _NEGATORS.search(prefix) and self.mention.search(rest):
                    problems.append("negated")
                continue
            if _HEDGES.search(prefix):
                problems.append("hedged")
                continue
            if self.lead.match(rest):
                return self.value(rest, problems)
            self.why(rest, problems)
        if not self.letters:
            self.why(text, problems)
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

    # -- the places of a conclusion ------------------------------------------

    def structured(self, text: str, found: list[tuple[str, str]], problems: list[str]) -> str:
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
                found.append((got, "json"))
        tags = "|".join(re.escape(n) for n in dict.fromkeys([self.field, "verdict", "answer"]))
        tag = re.compile(rf"<({tags})>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
        for match in tag.finditer(outside):
            got = self.value(match.group(2), problems)
            if got is None:
                problems.append("not a choice")
            else:
                found.append((got, "tag"))
        return tag.sub(f"\n{_STRUCTURED}\n", outside)

    def verdict_lines(
        self, lines: Sequence[str], found: list[tuple[str, str]], problems: list[str]
    ) -> None:
        for i, line in enumerate(lines):
            if self.key_alone.match(line) and i + 1 < len(lines):
                got = self.bare(lines[i + 1])
                if got is not None:
                    found.append((got, "verdict line"))
                continue
            for match in self.key_line.finditer(line):
                value = match.group(1)
                got = self.value(value, problems) if value.strip() else None
                if got is None and value.strip() and not self.letters:
                    got = self.clause(value, problems)
                if got is not None:
                    found.append((got, "verdict line"))
                    break

    def first_sentence(self, line: str, found: list[tuple[str, str]], how: str) -> None:
        if self.letters:
            return
        match = re.match(r"^(.*?)(?:[.。!！:：]|\s[—–-]\s|$)", line)
        if match is not None:
            got = self.bare(match.group(1))
            if got is not None:
                found.append((got, how))

    def last_sentence(self, line: str, found: list[tuple[str, str]], problems: list[str]) -> None:
        if self.letters:
            if re.search(rf"\b(?:{_KEYS})\b", line, re.I):
                sentences = _sentences(line)
                got = self.clause(sentences[-1], problems) if sentences else None
                if got is not None:
                    found.append((got, "final line"))
            return
        tail = re.search(r"[:：]([^:：]*)$", line)
        if tail is not None and not _NEGATORS.search(line[: tail.start()]):
            got = self.bare(tail.group(1))
            if got is not None:
                found.append((got, "final line"))
                return
        sentences = _sentences(line)
        if not sentences:
            return
        got = self.clause(sentences[-1], problems)
        if got is not None:
            found.append((got, "final line"))
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
