"""Token features of the chosen option: what the answering model made of its own answer.

The choose stage answers a question by scoring every option as a
continuation of the prompt (:func:`realitycheck.backends.cached_loglik_tokens`).
For the option it chose, the response keeps features in the layout the
generate stage writes (``features = {"best": SEQ}``, read by
:mod:`realitycheck.detectors`), so that the detectors that read token
log-probabilities or entropies (``perplexity``, ``mean_token_entropy``) score
each model's own MCQ answers, as the prompt-multiplicity paper's section 5.1
does:

* ``token_logprobs``: the chosen continuation's token log-probabilities as
  the choice scored them, the very numbers (their sum is the option's
  ``meta["options"][i]["sum"]``); every backend that scores continuations
  gives them.
* ``tokens``, ``token_entropies`` and, when the plan asks for alternatives,
  ``top_logprobs``: read by teacher forcing the continuation after the prompt
  (:func:`realitycheck.backends.teacher_force`) on a backend that can
  (``hf``). Both readings tokenise the same text, prompt + continuation (the
  prompt's trailing white space is handed to the answer, so the forced text
  is not joined with an extra space); the continuation's tokens are the
  last ``n`` tokens of that text, ``n`` as the choice counted them, so the
  forced reading's last ``n`` positions are kept.

Where a backend cannot teacher-force, or the forced reading fails or has
fewer tokens than the choice scored, the response says why in
``meta["unsupported"]`` (``{"entropy": reason}``, and ``top_logprobs`` when
the plan asked for them), so an entropy detector's error names the reason.
Forced readings go through the call cache, keyed by the backend's call
identity, the prompt, the continuation and the alternatives asked for; a
rerun reads them from there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from realitycheck.backends import (
    Backend,
    CallCache,
    Generation,
    GenerationRequest,
    backends,
    call_identity,
    teacher_force,
)

__all__ = ["ChosenFeatures", "chosen_features", "forced_key"]


@dataclass(frozen=True, kw_only=True)
class ChosenFeatures:
    """The features of one chosen option and why any are missing.

    Attributes:
        features: ``{"best": SEQ}`` in the generate stage's layout.
        unsupported: ``{feature: reason}`` for what could not be read (empty: nothing).
    """

    features: dict[str, Any]
    unsupported: dict[str, str] = field(default_factory=dict)


def forced_key(identity: dict[str, Any], prompt: str, answer: str, top_logprobs: int) -> str:
    """Return the call-cache key of one teacher-forced reading under a backend's identity."""
    text = json.dumps(
        {
            "backend": identity,
            "teacher_force": {"prompt": prompt, "answer": answer, "top_logprobs": top_logprobs},
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _split(context: str, continuation: str) -> tuple[str, str] | str:
    """Return (prompt, answer) whose forced text is ``context + continuation``, or why not."""
    prompt = context.rstrip()
    answer = context[len(prompt) :] + continuation
    if not prompt:
        return "the prompt is empty or white space"
    if not answer[:1].isspace():
        return (
            "the option continues the prompt without white space, and teacher forcing "
            "would join them with a space"
        )
    return prompt, answer


def _cannot(backend: Backend) -> str:
    able = [n for n in backends.names() if hasattr(backends.get(n), "teacher_force")]
    return (
        f"the backend {backend.key!r} cannot read a fixed answer (teacher forcing), which "
        f"choose needs for this feature; backends that can: {', '.join(able) or 'none'}"
    )


def _kept(generation: Generation, n: int, top_logprobs: int) -> dict[str, Any] | str:
    """The last ``n`` positions of a forced reading, or why they cannot be kept."""
    if generation.error:
        return f"teacher forcing the chosen option failed: {generation.error}"
    tokens = list(generation.tokens[0]) if generation.tokens else []
    entropies = list(generation.token_entropies[0]) if generation.token_entropies else []
    if len(tokens) < n or len(entropies) != len(tokens):
        return (
            f"teacher forcing read {len(tokens)} token(s) of the chosen option, where the "
            f"choice scored {n}"
        )
    start = len(tokens) - n
    out: dict[str, Any] = {"tokens": tokens[start:], "token_entropies": entropies[start:]}
    if top_logprobs:
        steps = list(generation.top_logprobs[0]) if generation.top_logprobs else []
        if len(steps) == len(tokens):
            out["top_logprobs"] = [dict(step) for step in steps[start:]]
    return out


def chosen_features(
    backend: Backend,
    chosen: Sequence[tuple[str, str, Sequence[float]]],
    *,
    top_logprobs: int,
    cache: CallCache | None,
) -> tuple[list[ChosenFeatures], int]:
    """Return the features of each chosen option, in order, and the readings sent.

    Args:
        backend: The backend that scored the options.
        chosen: ``(context, continuation, token log-probs)`` of each chosen
            option, the log-probs as the choice scored them.
        top_logprobs: Alternatives per token to keep (0 = none).
        cache: The call cache (``None``: no cache).

    Returns:
        The features, and the number of options the backend read now (0 when
        the cache held every reading).
    """
    logprobs = [[float(v) for v in values] for _, _, values in chosen]
    extra: list[dict[str, Any]] = [{} for _ in chosen]
    missing: list[dict[str, str]] = [{} for _ in chosen]
    able = callable(getattr(backend, "teacher_force", None))
    identity = call_identity(backend) if able else {}
    todo: dict[str, tuple[str, str]] = {}
    keys: list[str | None] = []
    for k, (context, continuation, _) in enumerate(chosen):
        split = _split(context, continuation) if able else _cannot(backend)
        if isinstance(split, str):
            missing[k]["entropy"] = split
            keys.append(None)
            continue
        key = forced_key(identity, *split, top_logprobs)
        keys.append(key)
        todo.setdefault(key, split)
    found = cache.get_many(set(todo)) if cache is not None and todo else {}
    sent = [key for key in todo if key not in found]
    if sent:
        requests = [
            GenerationRequest(prompt=todo[key][0], logprobs=True, top_logprobs=top_logprobs)
            for key in sent
        ]
        for key, generation in zip(
            sent, teacher_force(backend, requests, [todo[key][1] for key in sent]), strict=True
        ):
            found[key] = generation
            if cache is not None and not generation.error:
                cache.put(key, generation, backend=backend.key)
    for k, read in enumerate(keys):
        if read is None:
            continue
        kept = _kept(found[read], len(logprobs[k]), top_logprobs)
        if isinstance(kept, str):
            missing[k]["entropy"] = kept
        else:
            extra[k] = kept
    out = []
    for values, more, lacking in zip(logprobs, extra, missing, strict=True):
        if top_logprobs and "top_logprobs" not in more:
            lacking["top_logprobs"] = lacking.get(
                "entropy", f"the backend {backend.key!r} gave no alternatives"
            )
        seq: dict[str, Any] = {"tokens": more["tokens"]} if more else {}
        seq["token_logprobs"] = values
        seq.update((f, more[f]) for f in ("token_entropies", "top_logprobs") if f in more)
        out.append(ChosenFeatures(features={"best": seq}, unsupported=lacking))
    return out, len(sent)
