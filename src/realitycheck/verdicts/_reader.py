"""The reader of one reply against one set of choices (:mod:`realitycheck.verdicts`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from realitycheck.errors import InvalidInputError
from realitycheck.verdicts._text import (
    ACKNOWLEDGE,
    BELIEF,
    CLOSE,
    CONDITIONS,
    CONNECTIVES,
    CONTRAST,
    COPULA,
    DOUBT,
    HEDGES,
    KEYS,
    LEAD_IN,
    MARKUP,
    NEGATORS,
    OPEN,
    REVISION,
    STRONG,
    STRUCTURED,
    THEN,
    VALUE_WORD,
    cut_spans,
    find_fields,
    json_objects,
    sentences_of,
    strip_markup,
    unescape,
)


@dataclass(frozen=True)
class Found:
    """A verdict read, how, and where: its line and the column after which the reply goes on."""

    verdict: str
    how: str
    line: int = 0
    column: int = 0


class Reader:
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
        close = re.escape(CLOSE)
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
                rf"^[{re.escape(OPEN)}\s]*(?P<v>{words})[{close}]*"
                rf"(?=$|\s*[.,;:!。，；：！、—–(\[（【]|\s+-|\s+(?:because|since|as|for)\b)",
                re.IGNORECASE,
            )
        key = rf"(?:{KEYS}|{re.escape(field)}|{re.escape(field.replace('_', ' '))})"
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
        # The structured places, made once per reader (a reader reads thousands of replies).
        keys = "|".join(re.escape(n) for n in [field, *self.names])
        self.pair = re.compile(rf'"(?:{keys})"\s*:\s*"((?:[^"\\]|\\.)*)"', re.IGNORECASE)
        tags = "|".join(re.escape(n) for n in dict.fromkeys([field, "verdict", "answer"]))
        self.tag = re.compile(rf"<({tags})>(.*?)</\1>", re.IGNORECASE | re.DOTALL)

    # -- one value ---------------------------------------------------------

    def choice(self, value: str) -> str | None:
        return self.by_key.get(" ".join(value.split()).casefold())

    def bare(self, value: str) -> str | None:
        """Return the choice ``value`` is, quotes, brackets and punctuation aside (not ``"x?"``)."""
        if re.search(r"[?？][\W_]*$", value):
            return None
        stripped = strip_markup(value)
        if self.letters:
            stripped = re.sub(r"^(?:option|choice|answer|letter)\s+", "", stripped, flags=re.I)
            stripped = strip_markup(stripped)
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
                yield choice, bool(NEGATORS.search(before))

    def agrees(self, got: str, after: str, problems: list[str], *, prose: bool) -> bool:
        """Whether the rest of the clause after a verdict leaves it standing.

        Not after a hedge, a condition (``correct if…``), a key's value
        (``Correct: no``), another verdict, the verdict negated, nor, in prose,
        a contrast (``correct, but…``).
        """
        clause, *ends = re.split(r"([.!?。！？;；])", after, maxsplit=1)
        if ends[:1] in (["?"], ["？"]) or HEDGES.search(clause):
            problems.append("hedged")
            return False
        if CONDITIONS.search(clause) or (prose and CONTRAST.search(clause)):
            problems.append("hedged")
            return False
        if prose and ACKNOWLEDGE.match(after):
            return False
        keyed = re.match(r"\s*(?:[:：=]|[-–—]+)\s*(.*)", after)
        if keyed and (VALUE_WORD.match(keyed.group(1)) or self.lead.match(keyed.group(1))):
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
        value = MARKUP.sub("", value).strip()
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
        text = CONNECTIVES.sub("", MARKUP.sub("", text).strip())
        if text.rstrip(CLOSE + " ").endswith(("?", "？")):
            return None
        tails = list(THEN.finditer(text))
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
        if before and not LEAD_IN.search(",".join(before)):
            if not any(True for _ in self.mentions(",".join(before))):
                candidates.append(CONNECTIVES.sub("", re.sub(r"^\s*and\s+", "", last)))
        for candidate in candidates:
            candidate = candidate.strip()
            if BELIEF.match(candidate):
                problems.append("hedged")
                continue
            match = COPULA.match(candidate)
            if match is None or self.mention.search(match.group(0)):
                continue
            if self.letters and not re.search(rf"\b(?:{KEYS}|option)\b", match.group(0), re.I):
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
            if NEGATORS.search(before):
                problems.append("negated")
            elif HEDGES.search(before):
                problems.append("hedged")

    def opens_with_letter(self, line: str) -> bool:
        return self.letters and self.opening.match(line) is not None

    def revised(self, verdict: str, after: str, *, cut: bool) -> bool:
        """Whether the text after a verdict takes it back ("Actually, incorrect.", "Wait, no").

        A strong marker ("Wait") is enough; a weak one ("Actually", "But") is
        when followed by "no", another verdict or the verdict negated, or, in a
        reply that was ``cut`` short, by fewer than four words before the cut.
        """
        if DOUBT.search(after) or STRONG.search(after):
            return True
        for marker in REVISION.finditer(after):
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

    def structured(self, text: str, found: list[Found], problems: list[str]) -> str:
        """Read JSON fields and tags into ``found``; return ``text`` without them."""
        spans: list[tuple[int, int]] = []
        objects: list[Any] = []
        for start, end, obj in json_objects(text):
            spans.append((start, end))
            objects.append(obj)
        values: list[Any] = []
        for names in ([self.field.casefold()], self.names):
            for obj in objects:
                values.extend(find_fields(obj, names))
            if values:
                break
        outside = cut_spans(text, spans)
        if not values:
            # A cut-short object: a closed "field": "value" pair outside any whole object.
            for match in self.pair.finditer(outside):
                values.append(unescape(match.group(1)))
            if values:
                outside = self.pair.sub(f"\n{STRUCTURED}\n", outside)
        for value in values:
            got = self.value(value, problems) if isinstance(value, str) else None
            if got is None:
                problems.append("not a choice")
            else:
                found.append(Found(got, "json"))
        for match in self.tag.finditer(outside):
            got = self.value(match.group(2), problems)
            if got is None:
                problems.append("not a choice")
            else:
                found.append(Found(got, "tag"))
        return self.tag.sub(f"\n{STRUCTURED}\n", outside)

    def verdict_lines(
        self,
        lines: Sequence[str],
        found: list[Found],
        problems: list[str],
        offset: int = 0,
    ) -> None:
        for i, line in enumerate(lines, start=offset):
            if self.key_alone.match(line) and i - offset + 1 < len(lines):
                following = lines[i - offset + 1]
                got = self.bare(following)
                if got is not None:
                    found.append(Found(got, "verdict line", i + 1, len(following)))
                continue
            for match in self.key_line.finditer(line):
                value = match.group(1)
                got = self.value(value, problems) if value.strip() else None
                if got is None and value.strip() and not self.letters:
                    got = self.clause(value, problems)
                if got is not None:
                    found.append(Found(got, "verdict line", i, match.start(1)))
                    break

    def first_sentence(
        self,
        line: str,
        index: int,
        found: list[Found],
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
                found.append(Found(got, how, index, match.end()))
            return
        ends = r"[.。!！,，;；]" if cut else r"[.。!！:：,，;；]|\s[—–-](?:\s|$)|$"
        match = re.match(rf"^(.*?)(?:{ends})", line)
        if match is None:
            return
        got = self.bare(match.group(1))
        if got is None:
            return
        after = line[match.end(1) :]
        if ACKNOWLEDGE.match(after):
            return  # "Yes, let me check." answers the request, not the question
        if after.startswith((",", "，")):
            words = after[1:]
            if not re.search(r"\w", words) or not self.agrees(got, words, problems, prose=True):
                return
            if cut and NEGATORS.search(words):
                return  # "Yes, the sentence is not supp…": the end is not in sight
        elif after.startswith((":", "：")) or after.strip().startswith(("—", "–", "-")):
            if not self.agrees(got, after, problems, prose=False):
                return
            value = after.strip()[1:].strip() or following  # "Correct:\nno"
            if not value or value == STRUCTURED or VALUE_WORD.match(value):
                return
            if self.lead.match(value):
                return  # "Correct: no" is a key and its value
        found.append(Found(got, how, index, match.end(1)))

    def last_sentence(
        self, line: str, index: int, found: list[Found], problems: list[str], *, item: bool
    ) -> None:
        """Read the last sentence of the last line; of a list's item, only a concluding one.

        The last item of a list concludes only after a connective or as a
        statement (``- So the answer is correct.``), not as a verdict that
        opens it (``2. Consistent: …``).
        """
        if self.letters:
            if re.search(rf"\b(?:{KEYS}|option)\b", line, re.I):
                sentences = sentences_of(line)
                got = self.clause(sentences[-1], problems) if sentences else None
                if got is not None:
                    found.append(Found(got, "final line", index, len(line)))
            return
        tail = re.search(r"[:：]([^:：]*)$", line)
        if (
            not item
            and tail is not None
            and not NEGATORS.search(line[: tail.start()])
            and self.bare(line[: tail.start()]) is None
        ):
            got = self.bare(tail.group(1))
            if got is not None:
                found.append(Found(got, "final line", index, len(line)))
                return
        sentences = sentences_of(line)
        if not sentences:
            return
        if item and not CONNECTIVES.match(sentences[-1]):
            if self.lead.match(MARKUP.sub("", sentences[-1]).strip()):
                return
        got = self.clause(sentences[-1], problems)
        if got is not None:
            found.append(Found(got, "final line", index, len(line)))
        else:
            self.why(line, problems)
