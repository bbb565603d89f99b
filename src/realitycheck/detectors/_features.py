"""Reading generation-time features from a :class:`~realitycheck.records.Response`.

The generation stage stores, on each response, ``features = {"best": SEQ,
"samples": [SEQ, ...]}`` where ``SEQ`` holds per-token lists (``tokens``,
``token_logprobs``, ``token_entropies``, ``top_logprobs``) and ``hidden``
(feature name → list of floats: ``last@L{layer}``, ``mean@L{layer}``,
``sv@L{layer}``), each only when the backend supplied it. The helpers here
fetch those values and, when one is missing, write the error a detector
stores with its ``None`` score: what is missing and why. When the generate
stage recorded that the server ignored the request for it
(``response.meta["unsupported"] = {feature: reason}``), the error says so,
quoting that reason; otherwise it says how to generate the feature.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from realitycheck.errors import InvalidInputError, MissingFeatureError
from realitycheck.records import Response

# The backend capability that supplies each detector need.
_CAPABILITY = {
    "samples": "n",
    "logprobs": "logprobs",
    "entropy": "entropy",
    "hidden": "hidden",
}
# The request fields whose absence from a server's answer leaves each need missing
# (the keys of ``response.meta["unsupported"]``).
_REQUEST_FIELDS = {
    "samples": ("n",),
    "logprobs": ("logprobs", "top_logprobs"),
    "entropy": ("entropy",),
    "hidden": ("hidden",),
}


def providers(need: str) -> list[str]:
    """Return the registered backends whose capabilities supply ``need``."""
    from realitycheck.backends import backends

    capability = _CAPABILITY.get(need, need)
    return [name for name in backends.names() if capability in backends.get(name).capabilities]


def unsupported_reasons(response: Response | None, need: str) -> list[str]:
    """Return why the server left ``need`` out, from ``response.meta["unsupported"]``.

    The generate stage writes ``{feature: reason}`` there for each feature the
    request asked for and the server did not return; the reasons for the
    request fields that carry ``need`` are returned (none for a response
    without that record).
    """
    meta = response.meta if response is not None else None
    told = meta.get("unsupported") if isinstance(meta, Mapping) else None
    if not isinstance(told, Mapping):
        return []
    fields = _REQUEST_FIELDS.get(need, (need,))
    return [
        str(told[f]) if told[f] else f"the server returned no {f!r}" for f in fields if f in told
    ]


def missing(what: str, need: str, response: Response | None = None) -> MissingFeatureError:
    """Build the error for a missing feature: why it is missing, and how to get it.

    When ``response.meta["unsupported"]`` says the server that generated the
    response did not return the feature (:func:`unsupported_reasons`), the
    error says so and quotes the reason; for an answer a dataset ships, it
    says that the dataset has no such feature (no samples: generate answers,
    or give a files dataset its samples; no log-probabilities: read them
    through a local model); otherwise it says to generate the response with a
    plan that asks for ``need`` on a backend that supplies it.
    """
    reasons = unsupported_reasons(response, need)
    if reasons:
        return MissingFeatureError(
            f"the response has no {what}: the server that generated it did not return it "
            f"({'; '.join(reasons)})"
        )
    shipped = _shipped_hint(response, need)
    if shipped:
        return MissingFeatureError(shipped)
    able = ", ".join(providers(need)) or "none installed"
    return MissingFeatureError(
        f"the response has no {what}: it was not asked for or not returned at generation; "
        f"generate it with a plan that asks for {need!r}, on a backend that supplies it "
        f"(available: {able})"
    )


# What a dataset's answers lack, in words, by detector need.
_SHIPPED_WITHOUT = {
    "samples": "token log-probabilities of their samples",
    "logprobs": "token log-probabilities",
    "entropy": "token entropies",
    "hidden": "hidden states",
}


def _shipped_hint(response: Response | None, need: str) -> str:
    """Why an answer a dataset ships lacks ``need`` and how to get it; ``""`` for a generated one.

    A generated response names its backend and generation in ``meta`` (and
    what the server left out, ``unsupported``); a proxy's view of a dataset's
    answer names the proxy; a dataset's own answer names none of these and
    has no decoding. Sampling detectors need several
    answers per question, which a dataset that ships one answer never has.
    """
    if response is None:
        return ""
    meta = response.meta if isinstance(response.meta, Mapping) else {}
    if {"backend", "generation", "unsupported"} & meta.keys():
        return ""
    proxied = "proxy" in meta
    if not proxied and response.decoding:
        return ""
    if need == "samples" and not response.samples:
        return (
            "the dataset's responses carry no samples (it ships its answers; sampling detectors "
            "need several answers per question: generate them with `realitycheck generate`, or "
            "give `samples=` columns to a files dataset)"
        )
    if proxied:
        return ""
    return (
        f"the dataset's responses carry no {_SHIPPED_WITHOUT.get(need, need)} (it ships its "
        "answers: read them through a local model with `realitycheck detect -b "
        "'hf[model=PATH]'`, or generate answers with `realitycheck generate`)"
    )


def _sequence(response: Response, which: str) -> Mapping[str, Any] | None:
    seq = response.features.get(which) if isinstance(response.features, Mapping) else None
    return seq if isinstance(seq, Mapping) else None


def best_values(response: Response, key: str, need: str) -> np.ndarray:
    """Return ``features["best"][key]`` as a float array.

    Raises:
        MissingFeatureError: If the best answer or its ``key`` is missing.
    """
    seq = _sequence(response, "best")
    if seq is None or key not in seq:
        raise missing(f"{key} of the best answer (features['best'][{key!r}])", need, response)
    return np.asarray(seq[key], dtype=np.float64)


def sample_sequences(response: Response) -> list[Mapping[str, Any]]:
    """Return ``features["samples"]``.

    Raises:
        MissingFeatureError: If the response carries no sample features.
    """
    seqs = response.features.get("samples") if isinstance(response.features, Mapping) else None
    if not isinstance(seqs, Sequence) or isinstance(seqs, str) or not seqs:
        raise missing("features of sampled answers (features['samples'])", "samples", response)
    return [s if isinstance(s, Mapping) else {} for s in seqs]


def sample_values(response: Response, key: str, need: str) -> list[np.ndarray]:
    """Return ``features["samples"][k][key]`` for every sample, as float arrays.

    Raises:
        MissingFeatureError: If there are no sample features or one lacks ``key``.
    """
    seqs = response.features.get("samples") if isinstance(response.features, Mapping) else None
    if response.samples and not seqs:
        raise missing(f"{key} of the samples (features['samples'][k][{key!r}])", need, response)
    out = []
    for k, seq in enumerate(sample_sequences(response)):
        if key not in seq:
            where = f"{key} of sample {k} (features['samples'][{k}][{key!r}])"
            raise missing(where, need, response)
        out.append(np.asarray(seq[key], dtype=np.float64))
    return out


def sample_texts(response: Response) -> list[str]:
    """Return ``response.samples``.

    Raises:
        MissingFeatureError: If the response has no samples.
    """
    if not response.samples:
        raise missing("sampled answers (response.samples)", "samples", response)
    return list(response.samples)


_HIDDEN_NAME = re.compile(r"^(?P<kind>[a-z]+)@L(?P<layer>\d+)$")


def hidden_layers(hidden: Mapping[str, Any], kind: str) -> list[int]:
    """Return the layers for which ``hidden`` has a feature of ``kind`` (sorted)."""
    layers = []
    for name in hidden:
        match = _HIDDEN_NAME.match(name)
        if match and match.group("kind") == kind:
            layers.append(int(match.group("layer")))
    return sorted(layers)


def hidden_vector(seq: Mapping[str, Any], kind: str, layer: int | None, where: str) -> np.ndarray:
    """Return the hidden feature ``{kind}@L{layer}`` of one sequence.

    With ``layer=None`` the sequence must hold that kind of feature for at
    least one layer; when it holds several, the lower median layer is used
    (with the middle and last layers stored, that is the middle one).

    Raises:
        MissingFeatureError: If the feature is not there.
    """
    hidden = seq.get("hidden")
    hidden = hidden if isinstance(hidden, Mapping) else {}
    if layer is None:
        layers = hidden_layers(hidden, kind)
        if not layers:
            raise missing(f"hidden-state feature '{kind}@L*' for {where}", "hidden")
        layer = layers[(len(layers) - 1) // 2]
    name = f"{kind}@L{layer}"
    if name not in hidden:
        stored = ", ".join(sorted(hidden)) or "none"
        raise missing(f"hidden-state feature {name!r} for {where} (stored: {stored})", "hidden")
    return np.asarray(hidden[name], dtype=np.float64)


def score_best(
    owner: Any,
    responses: Sequence[Response],
    values: Callable[[Response], np.ndarray],
    measure: Callable[[np.ndarray], float],
) -> list[Any]:
    """Score each response by ``measure`` of an array read from its best answer.

    ``owner`` is the detector (its ``_score`` makes each score). A missing
    feature (``values`` raises :class:`MissingFeatureError`), an empty array
    ("the best answer has no tokens") or a ``measure`` undefined there (it
    raises :class:`InvalidInputError`) gives ``value=None`` and the reason.
    """
    out = []
    for response in responses:
        try:
            found = values(response)
            if found.size == 0:
                raise MissingFeatureError("the best answer has no tokens")
            value = measure(found)
        except InvalidInputError as exc:  # MissingFeatureError is one
            out.append(owner._score(response, None, error=str(exc)))
            continue
        out.append(owner._score(response, value))
    return out
