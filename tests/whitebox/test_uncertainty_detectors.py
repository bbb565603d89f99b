"""Perplexity, mean token entropy, LN-entropy, Mean-Len and Std-Len against their formulas."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from realitycheck import Response, RunContext
from realitycheck.detectors import detectors
from realitycheck.errors import InvalidInputError

RUN = RunContext()


def _response(rid, text="answer", samples=(), best=None, sample_features=None):
    features = {}
    if best is not None:
        features["best"] = best
    if sample_features is not None:
        features["samples"] = sample_features
    return Response(
        response_id=rid,
        example_id="e",
        model="m",
        text=text,
        samples=tuple(samples),
        features=features,
    )


def _random_logprobs(rng, n):
    return [list(-rng.exponential(1.5, size=int(rng.integers(1, 12)))) for _ in range(n)]


def test_perplexity_is_exp_of_minus_mean_token_logprob():
    rng = np.random.default_rng(0)
    seqs = _random_logprobs(rng, 20)
    responses = [_response(f"r{i}", best={"token_logprobs": s}) for i, s in enumerate(seqs)]
    scores = detectors.create("perplexity").score(responses, RUN)
    for seq, score in zip(seqs, scores, strict=True):
        assert score.value == pytest.approx(math.exp(-sum(seq) / len(seq)))


def test_mean_token_entropy_is_the_mean_of_the_token_entropies():
    rng = np.random.default_rng(1)
    seqs = [list(rng.uniform(0, 5, size=int(rng.integers(1, 9)))) for _ in range(10)]
    responses = [_response(f"r{i}", best={"token_entropies": s}) for i, s in enumerate(seqs)]
    scores = detectors.create("mean_token_entropy").score(responses, RUN)
    for seq, score in zip(seqs, scores, strict=True):
        assert score.value == pytest.approx(sum(seq) / len(seq))


def test_ln_entropy_is_minus_the_mean_length_normalised_sample_logprob():
    rng = np.random.default_rng(2)
    responses, expected = [], []
    for i in range(10):
        samples = _random_logprobs(rng, int(rng.integers(1, 8)))
        responses.append(
            _response(f"r{i}", sample_features=[{"token_logprobs": s} for s in samples])
        )
        k = len(samples)
        expected.append(-sum(sum(s) / len(s) for s in samples) / k)
    scores = detectors.create("ln_entropy").score(responses, RUN)
    assert [s.value for s in scores] == pytest.approx(expected)


def test_ln_entropy_skips_empty_samples():
    features = [{"token_logprobs": [-1.0, -3.0]}, {"token_logprobs": []}]
    (score,) = detectors.create("ln_entropy").score([_response("r", sample_features=features)], RUN)
    assert score.value == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("name", "confident", "unsure"),
    [
        ("perplexity", {"best": {"token_logprobs": [-0.1, -0.2]}},
         {"best": {"token_logprobs": [-2.0, -3.0]}}),
        ("mean_token_entropy", {"best": {"token_entropies": [0.1, 0.3]}},
         {"best": {"token_entropies": [2.5, 3.0]}}),
        ("ln_entropy", {"samples": [{"token_logprobs": [-0.1]}, {"token_logprobs": [-0.2]}]},
         {"samples": [{"token_logprobs": [-2.1]}, {"token_logprobs": [-4.0, -1.0]}]}),
    ],
)  # fmt: skip
def test_less_confident_model_scores_higher(name, confident, unsure):
    det = detectors.create(name)
    good = Response(response_id="g", example_id="e", model="m", text="a", features=confident)
    bad = Response(response_id="b", example_id="e", model="m", text="a", features=unsure)
    low, high = det.score([good, bad], RUN)
    assert low.value < high.value


@pytest.mark.parametrize(
    ("name", "need", "supplier", "not_supplier"),
    [
        ("perplexity", "logprobs", "hf", None),
        ("mean_token_entropy", "entropy", "hf", "vllm"),
        ("ln_entropy", "samples", "hf", None),
    ],
)
def test_missing_feature_gives_none_and_names_the_backends(name, need, supplier, not_supplier):
    # A generated answer (it has a decoding) lacks what its generation did not ask for:
    # the message names the backends that supply it.
    generated = dataclasses.replace(_response("r"), decoding="greedy")
    (score,) = detectors.create(name).score([generated], RUN)
    assert score.value is None
    assert f"'{need}'" in score.error and supplier in score.error
    if not_supplier:
        assert not_supplier not in score.error.split("available:")[1]
    # A dataset's own answer never had a generation: the message says so instead.
    (shipped,) = detectors.create(name).score([_response("r")], RUN)
    assert shipped.value is None and shipped.error.startswith("the dataset's responses carry no")


@pytest.mark.parametrize(
    ("name", "key"), [("perplexity", "token_logprobs"), ("mean_token_entropy", "token_entropies")]
)
def test_empty_best_answer_gives_none(name, key):
    det = detectors.create(name)
    (score,) = det.score([_response("r", best={key: []})], RUN)
    assert score.value is None and score.error == "the best answer has no tokens"


@pytest.mark.parametrize("unit", ["words", "chars"])
def test_mean_and_std_len_match_numpy(unit):
    rng = np.random.default_rng(3)
    words = ["paris", "is", "the", "capital", "of", "france", "maybe"]
    responses, lengths = [], []
    for i in range(15):
        samples = [
            " ".join(rng.choice(words, size=int(rng.integers(0, 9))))
            for _ in range(int(rng.integers(1, 7)))
        ]
        responses.append(_response(f"r{i}", samples=samples))
        lengths.append([len(s.split()) if unit == "words" else len(s) for s in samples])
    means = detectors.create("mean_len", unit=unit).score(responses, RUN)
    stds = detectors.create("std_len", unit=unit).score(responses, RUN)
    assert [s.value for s in means] == pytest.approx([np.mean(n) for n in lengths])
    assert [s.value for s in stds] == pytest.approx([np.std(n, ddof=0) for n in lengths])


def test_longer_and_more_varied_samples_score_higher():
    short = _response("s", samples=["paris", "paris", "paris"])
    long = _response("l", samples=["it is paris", "the city of rome", "i think it may be berlin"])
    for name in ("mean_len", "std_len"):
        low, high = detectors.create(name).score([short, long], RUN)
        assert low.value < high.value


@pytest.mark.parametrize("name", ["mean_len", "std_len"])
def test_length_statistics_need_samples(name):
    (score,) = detectors.create(name).score([_response("r")], RUN)
    assert score.value is None and "samples" in score.error
    with pytest.raises(InvalidInputError, match=f"'unit' parameter of {name}"):
        detectors.create(name, unit="tokens")
