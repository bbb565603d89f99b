"""The ``pairs`` capability: a sequence-pair classifier scores (premise, hypothesis) pairs.

A backend with ``pairs`` runs a cross-encoder (an NLI classifier, an
HHEM-style consistency model, a MiniCheck-style fact checker) on pairs of
texts and answers one :class:`PairScore` per pair. What each output of the
classifier means is read from its label names (``config.id2label``) or
declared by the caller (``labels``), and checked by :func:`pair_classes`
before any pair is scored:

* ``num_labels == 1`` (HHEM-style): the one logit ``z`` is a consistency
  score, ``sigmoid(z)``, given as :attr:`PairScore.entailment`;
* otherwise the outputs go through a softmax and each label must name one of
  :data:`PAIR_CLASSES` (``entailment``, ``neutral``, ``contradiction``,
  ``not_entailment``), matched on its lower-cased start (``ENTAILMENT``,
  ``entailed``, ``Contradiction``, ``not_entailment``…), with exactly one
  entailment class.

:func:`cached_pairs` is how components call the capability: identical pairs
are scored once and every answer is kept in the shared call cache
(:class:`~realitycheck.backends.CallCache`), addressed by the backend's call
identity, the pair and the declared labels, so a rerun scores nothing again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from realitycheck.backends._base import Backend, PairScore, require
from realitycheck.backends._cache import CallCache, call_identity
from realitycheck.errors import InvalidInputError
from realitycheck.params import InstanceOf, SequenceOf, check_arg

__all__ = [
    "CONSISTENCY",
    "PAIR_CLASSES",
    "PAIRS",
    "PairScore",
    "cached_pairs",
    "config_label_names",
    "pair_cache_key",
    "pair_classes",
    "pair_score",
]

PAIR_CLASSES = ("entailment", "neutral", "contradiction", "not_entailment")
"""The classes a multi-label pair classifier's outputs may name."""
CONSISTENCY = "consistency"
"""The class of the one output of a single-logit (HHEM-style) cross-encoder."""
PAIRS = SequenceOf(SequenceOf(InstanceOf(str), length=2))
"""What ``score_pairs`` takes: a list of ``(premise, hypothesis)`` strings."""

_PREFIXES = (
    (re.compile(r"^(not|non)[\W_]*entail"), "not_entailment"),
    (re.compile(r"^entail"), "entailment"),
    (re.compile(r"^contradict"), "contradiction"),
    (re.compile(r"^neutral"), "neutral"),
)


def config_label_names(config: Any) -> list[str]:
    """Return a transformers config's label names in output order (``id2label``).

    An output that ``id2label`` does not name is ``LABEL_<i>``, as transformers names it.
    """
    id2label = getattr(config, "id2label", None) or {}
    return [str(id2label.get(i, f"LABEL_{i}")) for i in range(int(config.num_labels))]


def pair_classes(model: str, names: Sequence[str], declared: Sequence[str] = ()) -> tuple[str, ...]:
    """Return the class of each output of a pair classifier, or fail naming the model.

    Args:
        model: The model's name or folder, for the error message.
        names: The model's own label names, in output order (``id2label``).
        declared: Label names the caller declares instead, in output order
            (empty = use ``names``); their number must be the model's.

    Returns:
        ``("consistency",)`` for one output; else one of :data:`PAIR_CLASSES` per output.

    Raises:
        InvalidInputError: If the declared names do not fit the number of
            outputs, or a name is none of the classes, or there is not
            exactly one entailment class, or a class repeats.
    """
    shown = f"The pair classifier {model!r} (labels {list(names)})"
    if declared and len(declared) != len(names):
        raise InvalidInputError(
            f"{shown} has {len(names)} outputs, but {len(declared)} labels were declared: "
            f"{list(declared)}.",
            field="labels",
        )
    if len(names) == 1:
        return (CONSISTENCY,)
    used = list(declared or names)
    classes = [_class_of(str(name)) for name in used]
    unknown = [name for name, c in zip(used, classes, strict=True) if c is None]
    where = "declared " if declared else ""
    hint = (
        " Declare what each output means, in order, with the labels parameter, "
        "e.g. labels=entailment+neutral+contradiction."
    )
    if unknown:
        raise InvalidInputError(
            f"{shown}: the {where}labels {unknown} name none of {list(PAIR_CLASSES)}.{hint}",
            field="labels",
        )
    if classes.count("entailment") != 1 or len(set(classes)) != len(classes):
        raise InvalidInputError(
            f"{shown}: the {where}labels {used} must name exactly one entailment class "
            f"and no class twice.{hint}",
            field="labels",
        )
    return tuple(c for c in classes if c is not None)


def _class_of(name: str) -> str | None:
    text = name.strip().lower()
    return next((c for pattern, c in _PREFIXES if pattern.search(text)), None)


def pair_score(classes: Sequence[str], values: Sequence[float]) -> PairScore:
    """Return the answer for one pair from its per-output probabilities (or consistency)."""
    if tuple(classes) == (CONSISTENCY,):
        return PairScore(entailment=float(values[0]))
    by_class = {c: float(v) for c, v in zip(classes, values, strict=True)}
    return PairScore(
        entailment=by_class["entailment"],
        neutral=by_class.get("neutral"),
        contradiction=by_class.get("contradiction"),
    )


def pair_cache_key(
    identity: dict[str, Any], premise: str, hypothesis: str, labels: Sequence[str] = ()
) -> str:
    """Return the content address of one pair's answer: SHA-256 of backend, pair and labels."""
    text = json.dumps(
        {
            "backend": identity,
            "pair": {"premise": premise, "hypothesis": hypothesis, "labels": list(labels)},
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cached_pairs(
    backend: Backend,
    pairs: Sequence[tuple[str, str]],
    *,
    labels: Sequence[str] = (),
    cache: CallCache | None = None,
) -> list[PairScore]:
    """Score each (premise, hypothesis) pair, paying only for pairs no earlier run scored.

    The public entry to the ``pairs`` capability: identical pairs are sent
    once (the copies come back with ``cached=True``), answers already in
    ``cache`` are served from it, and every success is committed to it.

    Args:
        backend: A backend with the ``pairs`` capability.
        pairs: The ``(premise, hypothesis)`` pairs, in the order the answers are wanted.
        labels: The classifier's label names in output order, declared by the
            caller (empty = the model's own ``id2label``); see :func:`pair_classes`.
        cache: The call cache, or ``None`` to only deduplicate.

    Returns:
        One :class:`PairScore` per pair; a pair that failed has ``error`` set.

    Raises:
        InvalidInputError: If the backend lacks ``pairs``, the pairs are not
            pairs of strings, or the labels do not fit the model (before any pair is scored).
    """
    check_arg(backend, InstanceOf(Backend), name="backend", owner="cached_pairs")
    check_arg(pairs, PAIRS, name="pairs", owner="cached_pairs")
    check_arg(labels, SequenceOf(InstanceOf(str)), name="labels", owner="cached_pairs")
    require({"pairs"}, backend, who="cached_pairs")
    identity = call_identity(backend)
    keys = [pair_cache_key(identity, p, h, labels) for p, h in pairs]
    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    stored = cache.get_values(first) if cache is not None else {}
    answers = {key: PairScore.from_json(value) for key, value in stored.items()}
    misses = [key for key in first if key not in answers]
    if misses:
        todo = [(pairs[first[k]][0], pairs[first[k]][1]) for k in misses]
        fresh = backend.score_pairs(todo, labels=labels)
        if len(fresh) != len(misses):
            raise InvalidInputError(
                f"The backend {backend.key!r} returned {len(fresh)} pair scores for "
                f"{len(misses)} pairs; a backend must answer every pair in order."
            )
        for key, answer in zip(misses, fresh, strict=True):
            answers[key] = answer
            if cache is not None and not answer.error:
                cache.put_value(key, answer.to_json(), backend=backend.key)
    out = []
    for i, key in enumerate(keys):
        answer = answers[key]
        copy = first[key] != i and not answer.cached and not answer.error
        out.append(replace(answer, cached=True) if copy else answer)
    return out
