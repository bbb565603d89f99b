"""Shared text utilities: normalisation, words, sentences, content words, numbers.

Every function here is pure, deterministic and cheap; the lexical labelers and
the grounding detectors build on them so that "a word" or "a number" means the
same thing everywhere.

- :func:`normalize_answer` is the SQuAD answer normalisation (lowercase, drop
  ASCII punctuation, drop the articles *a*, *an*, *the*, collapse whitespace)
  and :func:`answer_tokens` its whitespace tokens.
- :func:`words` are lowercased runs of letters and digits (Unicode-aware), with
  inner apostrophes kept (``don't``); :func:`content_words` drops the
  :data:`STOPWORDS` from them.
- :func:`split_sentences` is a rule-based splitter: a break after ``.``, ``!``
  or ``?`` (and closing quotes or brackets) followed by whitespace, except after
  a handful of common abbreviations and single initials, and at every line break.
- :func:`extract_numbers` finds numbers written with digits and normalises
  them so that the same quantity compares equal (rules in its docstring).
- :func:`csv_cell` and :func:`csv_safe_frame` keep a text cell of a CSV file
  from being read as a formula by a spreadsheet (OWASP's advice on CSV
  injection); every CSV the toolkit writes goes through them.
- :func:`escape_controls` shows control, escape and bidi characters as
  ``[U+XXXX]``, for untrusted text on one terminal or log line.
- :func:`model_parts` cuts a model name at its real path separators only, and
  :func:`short_names` gives each of a set of names its shortest unambiguous
  run of trailing parts: the one rule for short model names in tables,
  findings and figures.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "STOPWORDS",
    "answer_tokens",
    "content_words",
    "csv_cell",
    "csv_safe_frame",
    "escape_controls",
    "extract_numbers",
    "model_parts",
    "normalize_answer",
    "normalize_number",
    "short_names",
    "split_sentences",
    "words",
]

_DELETE_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

# Function words of English: pronouns, determiners, auxiliaries, prepositions,
# conjunctions and a few frequent adverbs. Negations ("no", "not", "never") are
# kept out on purpose: they change what a sentence claims.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because
    been before being below between both but by can could did do does doing down
    during each either few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most
    my myself neither of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then
    there these they this those through to too under until up upon very was we
    were what when where which while who whom whose why will with would you your
    yours yourself yourselves it's i'm i've i'd i'll you're you've you'd you'll
    he's she's we're we've we'd we'll they're they've they'd they'll that's
    there's here's what's who's let's may might must shall
    """.split()
)


def normalize_answer(text: str) -> str:
    """Return ``text`` normalised as in the SQuAD evaluation script.

    Lowercase, remove every ASCII punctuation character, remove the articles
    ``a``, ``an`` and ``the`` as whole words, and collapse runs of whitespace
    into single spaces.
    """
    lowered = text.lower()
    no_punct = lowered.translate(_DELETE_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punct).split())


def answer_tokens(text: str) -> list[str]:
    """Return the whitespace tokens of :func:`normalize_answer` of ``text``."""
    return normalize_answer(text).split()


def words(text: str) -> list[str]:
    """Return the lowercased words of ``text``: runs of letters and digits.

    Apostrophes between letters stay inside the word (``don't``, ``o’clock``);
    every other character separates words. Works for any script.
    """
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """Return the :func:`words` of ``text`` that are not in :data:`STOPWORDS`."""
    return [w for w in words(text) if w not in STOPWORDS]


# A sentence ends at . ! ? (or an ellipsis), optionally followed by closing
# quotes or brackets, when whitespace follows. Line breaks always end one.
_SENTENCE_END = re.compile(r"""(?<=[.!?…])["'”’)\]]*\s+""")
_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st vs etc inc ltd co corp dept gen gov sen rep rev
    fig no vol pp approx est jan feb mar apr jun jul aug sep sept oct nov dec
    e.g i.e a.m p.m u.s u.k u.n
    """.split()
)
_LAST_TOKEN = re.compile(r"(\S+)\.[\"'”’)\]]*$")


def _ends_with_abbreviation(chunk: str) -> bool:
    match = _LAST_TOKEN.search(chunk)
    if match is None:
        return False
    token = match.group(1).lstrip("\"'“‘([").lower()
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, stripped, with empty pieces dropped.

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (plus any closing quotes or
    brackets) followed by whitespace, unless the word before the full stop is a
    common abbreviation (``Dr.``, ``e.g.``, ``U.S.``…) or a single letter (an
    initial). Every line break also ends a sentence. The rules are simple on
    purpose: no model, no language other than English-like punctuation.
    """
    sentences: list[str] = []
    for line in text.splitlines():
        start = 0
        pending = ""
        for match in _SENTENCE_END.finditer(line):
            chunk = line[start : match.end()]
            start = match.end()
            if _ends_with_abbreviation(chunk.rstrip()):
                pending += chunk
                continue
            piece = (pending + chunk).strip()
            pending = ""
            if piece:
                sentences.append(piece)
        piece = (pending + line[start:]).strip()
        if piece:
            sentences.append(piece)
    return sentences


# Digits with comma thousands separators ("1,000,000") or plain digits, then an
# optional decimal part. Not preceded by a letter, digit or dot, so neither the
# "2" of "B2B" nor the "3" of "1.5.3" is a number of its own.
_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?")


def normalize_number(text: str) -> str:
    """Return the canonical form of a number written with digits.

    Thousands separators are dropped (``1,000`` → ``1000``), leading zeros of
    the integer part are dropped (``007`` → ``7``) and trailing zeros of the
    decimal part are dropped with a bare decimal point (``5.0`` → ``5``,
    ``1.50`` → ``1.5``).
    """
    integer, _, fraction = text.replace(",", "").partition(".")
    integer = integer.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"{integer}.{fraction}" if fraction else integer


def extract_numbers(text: str) -> list[str]:
    """Return the numbers written with digits in ``text``, normalised, in order.

    Rules: a number is a run of digits, optionally with comma thousands
    separators (``1,000``) and a decimal part after a dot (``3.14``); each is
    normalised by :func:`normalize_number`, so ``1,000`` equals ``1000`` and
    ``5.0`` equals ``5``. Signs, percent signs and units are ignored (``-5%`` →
    ``5``), a date gives its parts (``2019-05-01`` → ``2019``, ``5``, ``1``),
    digits glued after a letter are not numbers (``B2B``, ``A4``) and number
    words (``five``) are not read. A comma not followed by exactly three digits
    separates numbers (``1,2`` → ``1``, ``2``); a dot used as a thousands
    separator (``1.000``) is read as a decimal point.
    """
    return [normalize_number(m.group(0)) for m in _NUMBER.finditer(text)]


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_cell(value: Any) -> Any:
    """Return a CSV cell that no spreadsheet reads as a formula.

    A text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    gets a leading ``'`` (OWASP: CSV injection), except a number written as text
    (``-0.5``, ``+3``), which stays as it is. Control, escape and bidi
    characters in a text (NUL, ESC, U+202E…; line breaks and tabs aside) are
    shown as ``[U+XXXX]`` (:func:`escape_controls`), so a spreadsheet or a
    terminal that shows the file is not driven by the data. Any other value is
    returned unchanged.
    """
    if not isinstance(value, str):
        return value
    value = escape_controls(value, keep="\n\r\t")
    if value.startswith(_FORMULA_START):
        if value[0] in "+-" and _is_number(value):
            return value
        return "'" + value
    return value


def csv_safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Return ``frame`` with :func:`csv_cell` applied to its text cells (a copy when changed).

    Numeric and boolean columns are left alone; column names are made safe too.
    """
    out = frame
    for i in range(frame.shape[1]):
        values = frame.iloc[:, i]
        if values.dtype.kind not in "OSUT" and str(values.dtype) not in ("string", "category"):
            continue
        safe = values.map(csv_cell)
        if not safe.equals(values):
            if out is frame:
                out = frame.copy()
            out.isetitem(i, safe.to_numpy(dtype=object))
    names = [csv_cell(c) for c in frame.columns]
    if names != list(frame.columns):
        out = out.set_axis(names, axis=1) if out is not frame else frame.set_axis(names, axis=1)
    return out


_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str, *, keep: str = "") -> str:
    r"""Return ``text`` with control, escape and bidi characters shown as ``[U+XXXX]``.

    Covers C0 (NUL, ESC, newlines included) and DEL, C1, and the bidi
    marks, embeddings, overrides and isolates: what could rewrite a terminal
    line or reorder what a reader sees. The characters in ``keep`` (``"\n"``
    for a block of lines, ``"\n\t"`` for a CSV cell) are left as they are.

    Examples:
        >>> escape_controls("a\x1b]0;x\x07b")
        'a[U+001B]]0;x[U+0007]b'
    """
    return _CONTROLS.sub(
        lambda m: m.group() if m.group() in keep else f"[U+{ord(m.group()):04X}]", text
    )


_PREFIX_PART = re.compile(r"(/?[A-Za-z0-9_.~:@+-]+)/")
"""One part of a path prefix and the ``/`` after it (a leading ``/`` starts an absolute path)."""


def model_parts(name: str) -> tuple[str, ...]:
    """The ``/``-separated parts of a model name, cut only at real path separators.

    A model name is untrusted text: an organisation or folder path
    (``meta-llama/Llama-3-8B``, ``/models/Qwen2.5-7B``) or anything at all
    (``<script>alert(1)</script> model``, ``org/<b>x</b>``). The path prefix
    is read from the left, one part at a time, and stops at the first part
    that does not look like a path part: the rest of the name is its last
    part, whole, whatever ``/`` it holds. A path part is a run of ASCII
    letters, digits and ``_ . ~ : @ + -`` (what organisation names, Hugging
    Face repo ids, Ollama tags and folder names are made of); the first part
    may also start a path with ``/``. So no part ever begins inside markup; a
    component key (``openai[model=org/x]``) or a name with spaces before its
    ``/`` is one part. The parts joined with ``/`` give the name back; a name
    whose prefix would leave nothing after its last ``/`` (``models/llama/``)
    keeps that ``/`` in its last part.

    Examples:
        >>> model_parts("meta-llama/Llama-3-8B")
        ('meta-llama', 'Llama-3-8B')
        >>> model_parts("org/<b>x</b>")
        ('org', '<b>x</b>')
        >>> model_parts("<script>alert(1)</script> model")
        ('<script>alert(1)</script> model',)
    """
    text = str(name)
    parts: list[str] = []
    at = 0
    while (match := _PREFIX_PART.match(text, at)) is not None:
        if match.end() == len(text):  # nothing after this "/": it is part of the last part
            break
        if parts and match.group(1).startswith("/"):
            break  # "a//b": an empty part is no path part
        parts.append(match.group(1))
        at = match.end()
    return (*parts, text[at:])


def short_names(names: Iterable[Any]) -> dict[str, str]:
    """Map each name to its shortest run of trailing :func:`model_parts` that no other name shares.

    ``meta-llama/Llama-3-8B`` alone becomes ``Llama-3-8B``; next to
    ``my-finetune/Llama-3-8B`` both keep their organisation; a name that is a
    whole suffix of another (``Llama-3-8B`` beside ``meta-llama/Llama-3-8B``)
    stays as it is and the longer one keeps enough parts to differ. Only real
    path separators are cut at: ``org/<b>x</b>`` becomes ``<b>x</b>``, never
    ``b>``, and ``<script>alert(1)</script> model`` stays whole. Distinct
    names always get distinct short names; names are taken as ``str``.

    Examples:
        >>> short_names(["meta-llama/Llama-3-8B", "org/<b>x</b>"])
        {'meta-llama/Llama-3-8B': 'Llama-3-8B', 'org/<b>x</b>': '<b>x</b>'}
    """
    distinct = list(dict.fromkeys(str(n) for n in names))
    parts = {n: model_parts(n) for n in distinct}
    out: dict[str, str] = {}
    for name in distinct:
        own = parts[name]
        out[name] = name
        for k in range(1, len(own) + 1):
            suffix = own[-k:]
            if not any(parts[o][-k:] == suffix for o in distinct if o != name):
                out[name] = "/".join(suffix)
                break
    while True:  # never one label for two names: those keep their whole name (distinct)
        shown: dict[str, list[str]] = {}
        for name, short in out.items():
            shown.setdefault(short, []).append(name)
        clash = [n for same in shown.values() if len(same) > 1 for n in same if out[n] != n]
        if not clash:
            return out
        out.update({n: n for n in clash})
