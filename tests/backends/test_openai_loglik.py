"""The openai backend scores continuations from a completions server's echoed log-probs."""

from __future__ import annotations

import math

import pytest
from _fake_openai_server import echo_tokens

from realitycheck.backends import CallCache, backends, cached_loglik_tokens, require
from realitycheck.errors import FatalBackendError, InvalidInputError

PAIRS = [
    ("the answer is", " Paris"),
    ("the answer is", " the old tower"),
    ("Q: who?\nA:", " Einstein and Newton"),
    ("a cat", ""),
]


def _expected(prompt: str, continuation: str) -> tuple[float, ...]:
    """What the server echoes for the continuation: tokens ending after the prompt."""
    text = prompt + continuation
    echoed = echo_tokens(text)
    out = []
    for i, (_, _, value) in enumerate(echoed):
        end = echoed[i + 1][1] if i + 1 < len(echoed) else len(text)
        if end > len(prompt):
            out.append(value)
    return tuple(out)


def test_loglik_tokens_are_the_echoed_continuation_tokens(make_backend, server):
    backend = make_backend(mode="completions")
    got = backend.loglik_tokens(PAIRS)
    assert got == [_expected(p, c) for p, c in PAIRS]
    assert [len(v) for v in got] == [1, 3, 3, 0]
    assert backend.loglik(PAIRS) == pytest.approx([math.fsum(v) for v in got])
    body = server.bodies[0]
    assert body["echo"] is True and body["max_tokens"] == 1 and body["logprobs"] == 0


def test_a_token_spanning_the_boundary_counts_to_the_continuation(make_backend):
    backend = make_backend(mode="completions")
    # "Par" + "is" is one token for the server: it ends after the prompt.
    (values,) = backend.loglik_tokens([("the answer is Par", "is")])
    assert values == (echo_tokens("the answer is Paris")[-1][2],)


def test_chat_mode_fails_before_any_call(make_backend, server):
    backend = make_backend(mode="chat")
    require({"loglik"}, backend, who="choose")  # the class can, in completions mode
    with pytest.raises(InvalidInputError, match="mode='completions'"):
        backend.loglik_tokens(PAIRS)
    assert server.calls == 0


def test_a_refused_request_names_the_pair(make_backend, server):
    backend = make_backend(mode="completions", max_retries=0)
    with pytest.raises(FatalBackendError, match="pair 1"):
        backend.loglik_tokens([("ok", " yes"), ("no [fault=400]", " x")])


def test_cached_scores_make_no_second_call(make_backend, server, tmp_path):
    backend = make_backend(mode="completions")
    cache = CallCache(tmp_path / "cache.sqlite")
    first, sent = cached_loglik_tokens(backend, PAIRS + PAIRS[:1], cache=cache)
    assert sent == len(PAIRS) and server.calls == len(PAIRS)
    again, sent_again = cached_loglik_tokens(backend, PAIRS, cache=cache)
    assert sent_again == 0 and server.calls == len(PAIRS)
    assert again == first[: len(PAIRS)]
    other = backends.create("openai", model="other", base_url=server.url, mode="completions")
    _, sent_other = cached_loglik_tokens(other, PAIRS[:1], cache=cache)
    assert sent_other == 1
