"""What the detectors that call a backend share: prompts, yes/no replies, cached hidden states.

A yes/no reply is read by its conclusion with the project's verdict parser
(:func:`realitycheck.verdicts.read_verdict`, choices ``yes`` / ``no``; a reply
cut at the length limit counts as truncated): :func:`read_yes_no` gives the
verdict or ``None`` with the reason and the raw reply, never a default.

Generations go through :func:`realitycheck.backends.cached_generate`; hidden
states (:meth:`Backend.last_hidden`) through :func:`cached_last_hidden`, which
keeps each vector in the same call cache, so a rerun asks the model nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from realitycheck.errors import BackendError, FatalBackendError, RetryableBackendError
from realitycheck.verdicts import quote_reply, read_verdict

if TYPE_CHECKING:
    from realitycheck.backends import Backend, CallCache, Generation, GenerationRequest

__all__ = [
    "YesNo",
    "cached_last_hidden",
    "failure",
    "load_prompt",
    "quote",
    "read_yes_no",
    "request_for",
    "yes_no",
]

QUOTE_CHARS = 60
"""Most characters of a reply quoted in a score's error."""

_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


@functools.cache
def load_prompt(name: str) -> string.Template:
    """Return the prompt template ``name`` (``p_true.v1.txt``) from the package's ``prompts``."""
    path = resources.files("realitycheck.detectors").joinpath("prompts", name)
    return string.Template(path.read_text(encoding="utf-8"))


def request_for(
    backend: Backend, text: str, *, max_tokens: int, top_logprobs: int = 0
) -> GenerationRequest:
    """Return one greedy request for ``text``: a raw prompt if the backend takes one, else chat."""
    from realitycheck.backends import GenerationRequest

    logprobs = top_logprobs > 0
    if "completion" in backend.capabilities:
        return GenerationRequest(
            prompt=text, max_tokens=max_tokens, logprobs=logprobs, top_logprobs=top_logprobs
        )
    message = {"role": "user", "content": text}
    return GenerationRequest(
        messages=(message,), max_tokens=max_tokens, logprobs=logprobs, top_logprobs=top_logprobs
    )


def yes_no(token: str) -> str:
    """Return ``yes`` or ``no`` when one token's first word is one of them, else ``other``.

    For the alternatives of one next token (``" Yes"``, ``"NO."``), where
    there is no conclusion to read; a whole reply is read with :func:`read_yes_no`.
    """
    match = _YES_NO.match(token)
    return match.group(1).lower() if match else "other"


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """Return a short, escaped quote of ``text``: :func:`realitycheck.verdicts.quote_reply`."""
    return quote_reply(text, limit)


@dataclass(frozen=True)
class YesNo:
    """One yes/no reply as read.

    Attributes:
        verdict: ``"yes"``, ``"no"``, or ``None`` when the reply gives neither.
        reason: How the parser read it, or why it could not ("no conclusion",
            "negated", "truncated", "two verdicts"…).
        reply: The raw reply.
    """

    verdict: str | None
    reason: str
    reply: str

    @property
    def note(self) -> str:
        """``reason: 'short quote'``: what a score's error says of an unreadable reply."""
        return f"{self.reason}: {quote(self.reply)}"


def read_yes_no(generation: Generation) -> YesNo:
    """Read a generation's first reply as yes or no by its conclusion, or as no verdict.

    A reply that stopped at the length limit (``finish_reason == "length"``)
    is read as truncated: it counts only if it already holds a complete
    conclusion.
    """
    reply = generation.texts[0] if generation.texts else ""
    truncated = bool(generation.finish_reasons) and generation.finish_reasons[0] == "length"
    reading = read_verdict(reply, choices=("yes", "no"), truncated=truncated)
    return YesNo(reading.verdict, reading.reason, reply)


def failure(
    generations: Sequence[Generation], what: str, *, unit: str = "calls"
) -> BackendError | None:
    """Return the error for failed generations (retryable when every failure is), or ``None``.

    The message reads "{what} failed on {k} of {n} {unit}: {the first error}".
    """
    failed = [g for g in generations if g.error]
    if not failed:
        return None
    kind = RetryableBackendError if all(g.retryable for g in failed) else FatalBackendError
    return kind(f"{what} failed on {len(failed)} of {len(generations)} {unit}: {failed[0].error}")


def _hidden_key(identity: dict[str, object], text: str, layer: int) -> str:
    payload = {"backend": identity, "last_hidden": {"text": text, "layer": layer}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def cached_last_hidden(
    backend: Backend, texts: Sequence[str], *, layer: int, cache: CallCache | None
) -> list[np.ndarray]:
    """Return ``backend.last_hidden`` of each text, asking only for what the cache lacks.

    Each distinct text is sent once; a vector is stored in ``cache`` (as a
    :class:`~realitycheck.backends.Generation` whose ``hidden`` holds it)
    under the SHA-256 of the backend's call identity, the text and the layer.
    """
    from realitycheck.backends import Generation, call_identity

    identity = call_identity(backend)
    keys = {text: _hidden_key(identity, text, layer) for text in texts}
    hits = cache.get_many(set(keys.values())) if cache is not None else {}
    vectors = {
        text: np.asarray(hits[key].hidden[0]["last"], dtype=np.float64)
        for text, key in keys.items()
        if key in hits
    }
    missing = [text for text in keys if text not in vectors]
    if missing:
        for text, vector in zip(missing, backend.last_hidden(missing, layer=layer), strict=True):
            vectors[text] = np.asarray(vector, dtype=np.float64)
            if cache is not None:
                stored = Generation(hidden=({"last": tuple(float(v) for v in vector)},))
                cache.put(keys[text], stored, backend=backend.key)
    return [vectors[text] for text in texts]
