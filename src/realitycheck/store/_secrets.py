"""Keeping secrets out of everything written: the run folder and the terminal.

:func:`scrub_text` replaces, in any text:

- the values of the configured keys: environment variables named by a
  backend's ``api_key_env`` (registered with :func:`register_secret_env`),
  the usual ones (``OPENAI_API_KEY``, ``HF_TOKEN`` …) and any variable whose
  name ends like a secret (``…_KEY``, ``…_TOKEN``, ``…_SECRET``,
  ``…_PASSWORD``);
- the ``user:password@`` part of a URI (``s3://key:secret@bucket/run``);
- common key shapes: ``sk-…`` (OpenAI, Anthropic), ``Bearer …``, AWS access
  key ids (``AKIA…``), Hugging Face (``hf_…``), GitHub (``ghp_…``), Slack
  (``xox…``) and long high-entropy values after ``key=``, ``token=``,
  ``secret=``, ``password=`` (or ``:``).

Each becomes ``<redacted>``. A configured key is also caught when only its
start or end shows (a server that echoes ``sk-abc...wxyz``): every run of 8
or more of its characters is replaced, and of a key over 64 characters (an
OpenAI project key has 164) every start or end of 8 or more.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = [
    "REDACTED",
    "Scrubber",
    "TRIGGER_RE2",
    "register_from_specs",
    "register_secret_env",
    "scrub",
    "scrub_text",
]

REDACTED = "<redacted>"
_MIN_SECRET = 8
_MAX_RUNS_OF = 64
"""Keys up to this long are caught by any run of 8+ of their characters; longer by ends."""
_WELL_KNOWN = {
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HUGGINGFACEHUB_API_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_OPENAI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "TOGETHER_API_KEY",
    "GROQ_API_KEY",
    "COHERE_API_KEY",
    "GITHUB_TOKEN",
}
_REGISTERED: set[str] = set()
_SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|SECRET_KEY|PASSWORD|PASSWD|CREDENTIALS?|AUTH)$", re.I
)
# Each shape with the literals (casefolded) it cannot match without: a text with
# none of them is not searched by that shape, which matches nothing there anyway.
_SHAPES: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (("://",), re.compile(r"(?<=://)[^/@\s:]+:[^/@\s]+(?=@)")),
    (("sk-",), re.compile(r"\bsk-[A-Za-z0-9_\-*.]{8,}")),
    (("bearer",), re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=\-*]{6,}", re.I)),
    (("akia", "asia"), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{16,}")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}")),
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
]
# Every name _ASSIGNED knows holds one of these (casefolded, so that the long s and
# the Kelvin sign, which its re.I matches to "s" and "k", count too).
_ASSIGNED_WORDS = ("key", "token", "secret", "passw", "pwd")
_ASSIGNED = re.compile(
    r"(?P<name>(?<![A-Za-z0-9_])(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|"
    r"private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|key|token|secret|"
    r"password|passwd|pwd)[\"']?\s*[=:]\s*[\"']?)"
    r"(?P<value>[A-Za-z0-9._~+/\-]{16,})",
    re.I,
)


def register_secret_env(name: str) -> None:
    """Treat the value of the environment variable ``name`` as a secret from now on."""
    if name:
        _REGISTERED.add(str(name))


def _is_secret_name(name: str) -> bool:
    return name in _WELL_KNOWN or name in _REGISTERED or bool(_SECRET_NAME.search(name))


def _configured() -> tuple[str, ...]:
    """The values of every configured secret in the environment, longest first."""
    values = {
        v for k, v in os.environ.items() if _is_secret_name(k) and len(v.strip()) >= _MIN_SECRET
    }
    return tuple(sorted(values, key=len, reverse=True))


_PATTERNS: dict[tuple[str, ...], tuple[re.Pattern[str], frozenset[str]] | None] = {}


def _pattern(values: tuple[str, ...]) -> tuple[re.Pattern[str], frozenset[str]] | None:
    """A pattern matching each value and every run of 8+ of its characters, and its 8-grams.

    A text can hold a match only if it holds one of the 8-grams, which ``in``
    finds far faster than the pattern's hundreds of alternatives (a 51-character
    key has 1,176 runs): the pattern then reads only the texts that do.
    """
    if values not in _PATTERNS:
        pieces: set[str] = set()
        grams: set[str] = set()
        for value in values:
            sizes = range(_MIN_SECRET, len(value) + 1)
            if len(value) > _MAX_RUNS_OF:
                # Every run of a 164-character key would be 12,000 pieces: its starts and
                # ends only (what a server echoes), each holding its first or last 8-gram.
                pieces.update(value[:size] for size in sizes)
                pieces.update(value[-size:] for size in sizes)
                grams.update((value[:_MIN_SECRET], value[-_MIN_SECRET:]))
                continue
            for size in sizes:
                pieces.update(value[i : i + size] for i in range(len(value) - size + 1))
            grams.update(p for p in pieces if len(p) == _MIN_SECRET)
        ordered = sorted(pieces, key=len, reverse=True)
        _PATTERNS.clear()
        pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        _PATTERNS[values] = (pattern, frozenset(grams)) if pattern is not None else None
    return _PATTERNS[values]


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def _looks_random(value: str) -> bool:
    """High entropy and mixed character classes: a token, not a word or a path."""
    classes = sum(any(f(c) for c in value) for f in (str.islower, str.isupper, str.isdigit))
    return classes >= 2 and _entropy(value) >= 3.5


# The store's quick gate, an RE2 pattern matched case-insensitively over a whole text
# column in one Arrow pass: every key shape starts with one of these, and every name
# _ASSIGNED knows starts with one of the words after a character that is not a letter,
# digit or "_" (so "prompt_tokens" in a raw reply's usage is none); a text without any
# is left as it is. RE2's classes and \s match no fewer characters than Python's here,
# but RE2 does not read "i" as the dotless i and the dotted capital I, as re.I does: both
# are spelled out, as characters (RE2 does not read \u escapes).
TRIGGER_RE2 = (
    r"sk-|bearer|AKIA|ASIA|hf_|gh[pousr]_|xox|://[^/@\s]+@|"
    "(?:^|[^_0-9A-Za-z])(?:ap[i\u0131\u0130]|access|secret|pr[i\u0131\u0130]vate|auth|refresh|"
    "key|token|passw|pwd)"
)


class Scrubber:
    """The secrets configured now, ready to scrub many texts (one per batch of records)."""

    def __init__(self) -> None:
        self._configured = _pattern(_configured())

    @property
    def has_configured(self) -> bool:
        """Whether any configured key is set in the environment."""
        return self._configured is not None

    @property
    def grams(self) -> frozenset[str]:
        """The 8-character runs of the configured keys: a text without any holds none of them."""
        return self._configured[1] if self._configured is not None else frozenset()

    def configured(self, text: str) -> str:
        """Replace the configured keys only (for model outputs and dataset fields)."""
        if not text or self._configured is None:
            return text
        pattern, grams = self._configured
        if not any(gram in text for gram in grams):
            return text
        return pattern.sub(REDACTED, text)

    def text(self, text: str) -> str:
        """Replace configured keys and key-shaped strings (for errors, raw replies, notes)."""
        if not text:
            return text
        text = self.configured(text)
        folded = text.casefold()
        for needles, shape in _SHAPES:
            if any(needle in folded for needle in needles):
                text = shape.sub(REDACTED, text)
        if not any(word in folded for word in _ASSIGNED_WORDS):
            return text
        return _ASSIGNED.sub(
            lambda m: m["name"] + REDACTED if _looks_random(m["value"]) else m[0], text
        )


def scrub_text(text: str) -> str:
    """Return ``text`` with configured keys and key-shaped strings replaced by ``<redacted>``."""
    return Scrubber().text(text)


def scrub(value: Any, scrubber: Scrubber | None = None) -> Any:
    """Scrub every text inside ``value`` (mappings, lists, tuples), keys included."""
    scrubber = scrubber or Scrubber()
    if isinstance(value, str):
        return scrubber.text(value)
    if isinstance(value, dict):
        return {
            (scrubber.text(k) if isinstance(k, str) else k): scrub(v, scrubber)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub(v, scrubber) for v in value]
    return value


def register_from_specs(specs: Iterable[Any]) -> None:
    """Register the ``api_key_env`` of every (nested) component spec."""
    for spec in specs:
        if isinstance(spec, dict):
            env = spec.get("api_key_env")
            if isinstance(env, str):
                register_secret_env(env)
            register_from_specs(spec.values())
        elif isinstance(spec, list | tuple):
            register_from_specs(spec)
