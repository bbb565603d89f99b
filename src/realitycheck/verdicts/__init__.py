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

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from realitycheck.errors import InvalidInputError
from realitycheck.verdicts._reader import Found, Reader
from realitycheck.verdicts._text import INVISIBLE, STRUCTURED, split_lines

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


@functools.lru_cache(maxsize=64)
def _cached_reader(choices: tuple[str, ...], field: str, letters: bool) -> Reader:
    return Reader(choices, field, letters)


def _reader_for(choices: Sequence[str], field: str, letters: bool) -> Reader:
    """Return the reader of ``choices``, built once per set (it compiles their patterns).

    A judge reads thousands of replies against the same choices; building the
    reader per reply was most of the time spent reading. A reader holds
    configuration only, so one may serve every reply.
    """
    key = tuple(choices) if isinstance(choices, list | tuple) else None
    try:
        hash((key, field, letters))
    except TypeError:
        key = None
    if key is None:
        return Reader(choices, field, letters)  # refuses what is not a sequence of strings
    return _cached_reader(key, field, letters)


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
    reader = _reader_for(choices, field, letters)
    if not isinstance(text, str) or not text.strip():
        return Reading(None, "empty")
    text = INVISIBLE.sub("", text.replace(STRUCTURED, ""))
    found: list[Found] = []
    problems: list[str] = []
    rest = reader.structured(text, found, problems)
    items: list[bool] = []
    lines = split_lines(rest, items)
    # In a list of two items or more, an item that opens with a verdict is the verdict
    # of that item ("1. Consistent: …\n2. Unwanted: …"), not of the reply.
    listing = sum(items) > 1
    cut = None
    if truncated and not rest.endswith("\n") and lines and lines[-1] != STRUCTURED:
        cut = lines.pop()  # the cut may have fallen inside the last line
    everything = [*lines, cut] if cut is not None else lines
    placed = [i for i, line in enumerate(everything) if line == STRUCTURED]
    found[:] = [Found(f.verdict, f.how, placed[-1] if placed else 0, 0) for f in found]
    words = [i for i, line in enumerate(lines) if line != STRUCTURED]
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
    ends_structured = rest.strip().endswith(STRUCTURED)
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
