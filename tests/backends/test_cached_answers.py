"""What cached_generate returns for calls it sends is the backend's answer itself."""

from __future__ import annotations

import dataclasses

from realitycheck.backends import GenerationRequest, cached_generate
from realitycheck.backends._cache import CallCache
from realitycheck.backends.mock import MockBackend


def test_a_fresh_answer_is_returned_and_stored_as_the_backend_gave_it(tmp_path):
    backend = MockBackend(reply="yes", replies=("fail=>no",), fail_every=4)
    prompts = [f"q{i}" + " fail" * (i % 3 == 0) for i in range(9)]
    requests = [GenerationRequest(prompt=p, n=1 + i % 2) for i, p in enumerate(prompts)]
    requests.append(requests[1])  # a duplicate: the first answer, marked cached
    direct = backend.generate(requests[:-1])
    with CallCache(tmp_path / "calls.sqlite") as cache:
        got = cached_generate(backend, requests, cache=cache)
        assert got[:-1] == direct
        assert got[-1] == dataclasses.replace(direct[1], cached=True)
        again = cached_generate(backend, requests[:-1], cache=cache)
    for first, second in zip(direct, again, strict=True):
        if not first.error:
            assert second == dataclasses.replace(first, cached=True)
    assert any(g.error for g in direct) and any(not g.error for g in direct)
