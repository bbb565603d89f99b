"""Cache keys of requests never change silently: a changed key orphans every stored answer."""

from __future__ import annotations

import pytest

from realitycheck.backends import GenerationRequest

SPEC = {"name": "mock", "params": {}, "version": "1"}


@pytest.mark.parametrize(
    ("request_", "key"),
    [
        (
            GenerationRequest(
                messages=({"role": "user", "content": "Is Paris in France?"},),
                stop=("\n",),
                seed=3,
                max_tokens=8,
                tag="t",
            ),
            "63aa90f48f26b583648d01fa79f533f5c67f231ac63a7a752cfa26309020f32e",
        ),
        (
            GenerationRequest(
                prompt="Q: 2+2?",
                n=4,
                decoding="sampling",
                temperature=1.0,
                logprobs=True,
                top_logprobs=5,
                hidden_layers=(1, 2),
                json_schema='{"type":"object"}',
            ),
            "3f3e61662c44efd56b9e1be8508c8bc84a429d3fbf9a9c3e0477a15ec66ffa76",
        ),
    ],
)
def test_a_request_keeps_the_cache_key_earlier_releases_gave_it(
    request_: GenerationRequest, key: str
) -> None:
    # The keys were computed by the payload built with dataclasses.asdict (before
    # the shallow payload); the tag is not part of the key.
    assert request_.cache_key(SPEC) == key


def test_the_tag_does_not_change_the_key() -> None:
    a = GenerationRequest(prompt="x", tag="one")
    b = GenerationRequest(prompt="x", tag="two")
    assert a.cache_key(SPEC) == b.cache_key(SPEC)
    assert a.cache_key(SPEC) != GenerationRequest(prompt="y").cache_key(SPEC)
