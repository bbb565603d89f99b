"""Cache keys and cached answers are the JSON text ``json.dumps`` writes, byte for byte.

The keys are written with one encoder and the backend's spec once per call
(:func:`cache_keys`), the answers with one encoder: a key or a stored answer
that differed from ``json.dumps``'s would orphan every answer cached before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from types import MappingProxyType

import numpy as np

from realitycheck.backends import Generation, GenerationRequest
from realitycheck.backends._base import cache_keys
from realitycheck.backends.mock import MockBackend

TEXTS = ("", "x", 'say "hi"\n', "naïve — 中文 😀", "\x00\x1b[31m\u202e", '}{"backend": 1}')


def _dumps_key(request: GenerationRequest, spec) -> str:
    """The cache key as GenerationRequest.cache_key wrote it with json.dumps."""
    text = json.dumps({"backend": spec, "request": request.payload()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _random_request(rng) -> GenerationRequest:
    text = str(rng.choice(TEXTS)) or "?"
    if rng.random() < 0.5:
        fields = {"prompt": text}
    else:
        roles = ("system", "user", "assistant")
        fields = {
            "messages": tuple(
                {"role": str(rng.choice(roles)), "content": str(rng.choice(TEXTS))}
                for _ in range(int(rng.integers(1, 4)))
            )
        }
    sampled = rng.random() < 0.5
    return GenerationRequest(
        **fields,
        n=int(rng.integers(1, 4)),
        decoding="sampling" if sampled else "greedy",
        temperature=float(rng.random()) if sampled else 0.0,
        max_tokens=int(rng.integers(1, 512)),
        stop=tuple(str(s) for s in rng.choice(TEXTS, size=int(rng.integers(0, 3)))),
        seed=None if rng.random() < 0.3 else int(rng.integers(0, 1000)),
        logprobs=bool(rng.random() < 0.5),
        top_logprobs=int(rng.integers(0, 5)),
        hidden_layers=tuple(int(k) for k in rng.integers(0, 32, size=int(rng.integers(0, 3)))),
        json_schema="" if rng.random() < 0.5 else '{"type": "object"}',
        tag=str(rng.choice(TEXTS)),
    )


SPECS = [
    {"name": "mock", "params": {}, "version": "1"},
    {
        "name": "openai",
        "version": "2",
        "params": {"model": "gpt-4o", "temperature": 0.5, "extra": {"z": 1, "a": [1, None]}},
    },
    # Values JSON cannot write go through default=str, nested or not.
    {"name": "hf", "params": {"path": Path("/models/x"), "dtype": None}, "version": "1"},
    {"name": "naïve 😀", "params": MappingProxyType({"b": 1, "a": 2}), "version": "1"},
    MappingProxyType({"name": "mock", "params": {}, "version": "1"}),
]


def test_the_cache_keys_are_those_json_dumps_gave_on_random_requests():
    rng = np.random.default_rng(3)
    requests = [_random_request(rng) for _ in range(300)]
    for spec in SPECS:
        expected = [_dumps_key(r, spec) for r in requests]
        assert cache_keys(requests, spec) == expected
        assert [r.cache_key(spec) for r in requests] == expected
    assert cache_keys([], SPECS[0]) == []


def test_a_generation_is_stored_as_json_dumps_writes_it_with_mappings_not_dicts():
    g = MockBackend().generate(
        [GenerationRequest(prompt="q", n=2, logprobs=True, top_logprobs=2, hidden_layers=(1,))]
    )[0]
    g = dataclasses.replace(
        g,
        usage=MappingProxyType({"prompt_tokens": 1, "completion_tokens": 2}),
        top_logprobs=tuple(
            tuple(MappingProxyType(dict(entry)) for entry in seq) for seq in g.top_logprobs
        ),
        texts=TEXTS,
    )
    data = {f.name: getattr(g, f.name) for f in dataclasses.fields(Generation)}
    data.pop("cached")
    assert g.to_json() == json.dumps(data, default=lambda o: dict(o))
    assert Generation.from_json(g.to_json()).usage == {"prompt_tokens": 1, "completion_tokens": 2}
