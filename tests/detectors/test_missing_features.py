"""A detector that lacks a feature says why: the server that dropped it, or how to get it."""

from __future__ import annotations

import pytest

from realitycheck import Response, RunContext, detectors

REASON = "http://127.0.0.1:8000/v1 (model tiny-llama) returned no 'logprobs'"


def _response(meta=None, samples=("a", "b"), features=None):
    return Response(
        response_id="r",
        example_id="e",
        model="tiny-llama",
        text="Paris.",
        samples=samples,
        features=features or {},
        meta=meta or {},
    )


@pytest.mark.parametrize("key", ["perplexity", "ln_entropy", "semantic_entropy[variant=weighted]"])
def test_a_feature_the_server_did_not_return_is_named_with_its_reason(key):
    response = _response({"unsupported": {"logprobs": REASON}})
    (score,) = detectors.create_from_key(key).score([response], RunContext())
    assert score.value is None and not score.failed
    assert "the server that generated it did not return it" in score.error
    assert REASON in score.error
    assert "generate it with" not in score.error and "available:" not in score.error


def test_every_reason_the_server_gave_for_the_need_is_quoted():
    told = {"logprobs": REASON, "top_logprobs": "it ignored 'top_logprobs'", "n": "other"}
    (score,) = detectors.create("perplexity").score(
        [_response({"unsupported": told})], RunContext()
    )
    assert f"({REASON}; it ignored 'top_logprobs')" in score.error and "other" not in score.error


def test_dropped_samples_are_named_too():
    response = _response({"unsupported": {"n": "the server returned 1 of 5 sequences"}}, ())
    (score,) = detectors.create("selfcheck_ngram").score([response], RunContext())
    assert "did not return it (the server returned 1 of 5 sequences)" in score.error


@pytest.mark.parametrize(
    ("key", "meta"),
    [
        ("perplexity", {"backend": "mock[reply=Paris]", "generation": "g"}),
        ("perplexity", {"unsupported": {"n": "only one sequence per call"}}),
        ("perplexity", {"unsupported": "not a mapping"}),
        ("mean_token_entropy", {"unsupported": {"logprobs": REASON}}),
    ],
)
def test_without_a_recorded_cause_the_error_says_how_to_generate_it(key, meta):
    (score,) = detectors.create_from_key(key).score([_response(meta)], RunContext())
    assert score.value is None and "not asked for or not returned at generation" in score.error
    assert "generate it with a plan that asks for" in score.error
    assert "mock" in score.error  # a backend that supplies it
    assert REASON not in score.error
