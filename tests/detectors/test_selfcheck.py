"""SelfCheck n-gram and prompt, P(True) and Surprisal on the mock backend, checked by hand."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from realitycheck import Example, Response, RunContext
from realitycheck.backends import CAPABILITIES, CallCache
from realitycheck.backends.mock import MockBackend
from realitycheck.detectors.self_evaluation import PTrue, Surprisal, yes_probability
from realitycheck.detectors.selfcheck import (
    SelfCheckNgram,
    SelfCheckPrompt,
    prompt_verdict_score,
)
from realitycheck.errors import InvalidInputError

EXAMPLES = {
    "e": Example(example_id="e", dataset="t", task="qa", question="Where is the tower?"),
    "blank": Example(example_id="blank", dataset="t", task="qa"),
}


def _response(text, samples=(), rid="r", example="e"):
    return Response(response_id=rid, example_id=example, model="m", text=text, samples=samples)


def test_unigram_scores_by_hand():
    response = _response("The cat sat. The cat ran.", ("The cat sat.", "A dog sat."))
    # Counts over the response and both samples: the 3, cat 3, sat 3, "." 4,
    # ran 1, a 1, dog 1: 16 tokens.
    big, rare, stop = math.log(16 / 3), math.log(16), math.log(16 / 4)
    (top,) = SelfCheckNgram().score([response], RunContext())
    (avg,) = SelfCheckNgram(statistic="avg").score([response], RunContext())
    assert top.value == pytest.approx((big + rare) / 2)
    assert avg.value == pytest.approx((5 * big + 2 * stop + rare) / 8)


@pytest.mark.parametrize("seed", range(5))
def test_unigram_scores_on_random_words_equal_an_independent_count(seed):
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(12)]

    def sentence():
        return " ".join(rng.choice(vocab, size=int(rng.integers(2, 7))))

    own = [sentence() for _ in range(int(rng.integers(1, 4)))]
    samples = [" ".join(sentence() for _ in range(2)) for _ in range(int(rng.integers(1, 6)))]
    response = _response("\n".join(own), tuple(samples))
    counts = Counter(w for text in own + samples for w in text.split())
    total = sum(counts.values())
    nll = [[-math.log(counts[w] / total) for w in s.split()] for s in own]
    (top,) = SelfCheckNgram().score([response], RunContext())
    (avg,) = SelfCheckNgram(statistic="avg").score([response], RunContext())
    assert top.value == pytest.approx(np.mean([max(x) for x in nll]))
    assert avg.value == pytest.approx(np.mean([v for x in nll for v in x]))


def test_ngram_without_samples_or_text_says_why():
    scores = SelfCheckNgram().score([_response("A."), _response("", ("x",))], RunContext())
    assert [s.value for s in scores] == [None, None]
    assert "samples" in scores[0].error and "empty" in scores[1].error


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Yes", 0.0),
        (" yes, it does", 0.0),
        ("NO.", 1.0),
        ("No", 1.0),
        ("Maybe", None),
        ("", None),
        ("Not sure", None),
        ("yesterday", None),
    ],
)
def test_prompt_replies_map_to_sentence_scores(reply, expected):
    assert prompt_verdict_score(reply) == expected
    paper = 0.5 if expected is None else expected
    assert prompt_verdict_score(reply, unclear_as=0.5) == paper


@pytest.fixture
def sent(monkeypatch) -> dict[str, int]:
    """Count what the mock backend is asked from now on."""
    counts = {"generate": 0, "last_hidden": 0}
    generate, last_hidden = MockBackend.generate, MockBackend.last_hidden

    def counted_generate(self, requests):
        counts["generate"] += len(requests)
        return generate(self, requests)

    def counted_last_hidden(self, texts, *, layer=-1):
        counts["last_hidden"] += len(texts)
        return last_hidden(self, texts, layer=layer)

    monkeypatch.setattr(MockBackend, "generate", counted_generate)
    monkeypatch.setattr(MockBackend, "last_hidden", counted_last_hidden)
    return counts


def test_selfcheck_prompt_averages_verdicts_and_a_rerun_asks_nothing(tmp_path, sent):
    judge = MockBackend(
        reply="Perhaps",
        replies=(
            "(?s)Passage: Lyon.*Sentence: It is big=>Yes",
            "(?s)Passage: Paris=>Yes",
            "(?s)Passage: Lyon=>No",
        ),
    )
    response = _response("Paris is the capital. It is big.", ("Paris", "Lyon", "Rome"))
    # With the paper's 0.5 for an unclear reply ("Perhaps"):
    # Sentence 1: Paris yes 0, Lyon no 1, Rome other 0.5 -> 0.5.
    # Sentence 2: Paris yes 0, Lyon yes 0, Rome other 0.5 -> 1/6.
    detector = SelfCheckPrompt(judge=judge, unclear_as=0.5)
    with CallCache(tmp_path / "calls.sqlite") as cache:
        (score,) = detector.score([response], RunContext(cache=cache))
        assert score.value == pytest.approx((0.5 + 1 / 6) / 2) and score.unreadable == 2
        assert sent["generate"] == 6
        (again,) = detector.score([response], RunContext(cache=cache))
        assert again == score and sent["generate"] == 6
        # By default the unclear replies are left out: (1/2 + 0) / 2, from the same calls.
        (left_out,) = SelfCheckPrompt(judge=judge).score([response], RunContext(cache=cache))
    assert left_out.value == pytest.approx(0.25) and left_out.unreadable == 2
    assert sent["generate"] == 6


def test_selfcheck_prompt_keeps_a_failed_call_as_a_retryable_error():
    judge = MockBackend(reply="Yes", fail_every=2)
    (score,) = SelfCheckPrompt(judge=judge).score([_response("A b.", ("x", "y"))], RunContext())
    assert score.value is None and score.retryable and score.failed and "503" in score.error


def test_p_true_reads_the_probability_of_yes_at_the_first_token(tmp_path, sent):
    backend = MockBackend(reply="Yes", replies=("Proposed answer: Mars=>No",), logprob=-0.5)
    responses = [_response("Paris.", rid="a"), _response("Mars.", rid="b")]
    with CallCache(tmp_path / "calls.sqlite") as cache:
        scores = PTrue(judge=backend).score(responses, RunContext(examples=EXAMPLES, cache=cache))
        assert [s.value for s in scores] == pytest.approx([1 - math.exp(-0.5), 1.0])
        assert sent["generate"] == 2
        again = PTrue(judge=backend).score(responses, RunContext(examples=EXAMPLES, cache=cache))
    assert again == scores and sent["generate"] == 2
    normalized = PTrue(judge=backend, normalize=True).score(
        responses, RunContext(examples=EXAMPLES)
    )
    assert [s.value for s in normalized] == pytest.approx([0.0, 1.0])


def test_p_true_without_yes_or_no_or_question_says_why():
    backend = MockBackend(reply="Maybe")
    responses = [_response("Paris."), _response("Paris.", rid="q", example="blank")]
    scores = PTrue(judge=backend, normalize=True).score(responses, RunContext(examples=EXAMPLES))
    assert [s.value for s in scores] == [None, None]
    assert "neither yes nor no" in scores[0].error and "no question" in scores[1].error


def test_yes_probability_adds_every_spelling():
    alternatives = {" Yes": math.log(0.2), "yes": math.log(0.1), " No": math.log(0.3), "x": 0.0}
    p_yes, p_no = yes_probability(alternatives)
    assert (p_yes, p_no) == pytest.approx((0.3, 0.3))


@dataclass(frozen=True, kw_only=True)
class _Blind(MockBackend):
    """The mock without log-probability alternatives and hidden states (not registered)."""

    capabilities: ClassVar[frozenset[str]] = CAPABILITIES - {"top_logprobs", "hidden"}


@pytest.mark.parametrize(("detector", "need"), [(PTrue, "top_logprobs"), (Surprisal, "hidden")])
def test_a_backend_without_the_capability_is_refused_before_any_call(detector, need, sent):
    with pytest.raises(InvalidInputError, match=f"needs {need}, which the backend"):
        detector(judge=_Blind()).score([_response("Paris.")], RunContext(examples=EXAMPLES))
    assert sent == {"generate": 0, "last_hidden": 0}


def test_surprisal_is_one_minus_the_cosine_and_a_rerun_reads_nothing(tmp_path, sent):
    backend = MockBackend()
    responses = [_response("It is in Paris.", rid="a"), _response("On the moon", rid="b")]
    question = EXAMPLES["e"].question
    expected = []
    for response in responses:
        q, a = (np.array(v) for v in backend.last_hidden([question, f"{question} {response.text}"]))
        expected.append(1 - q @ a / (np.linalg.norm(q) * np.linalg.norm(a)))
    sent["last_hidden"] = 0
    with CallCache(tmp_path / "calls.sqlite") as cache:
        scores = Surprisal(judge=backend).score(
            responses, RunContext(examples=EXAMPLES, cache=cache)
        )
        assert [s.value for s in scores] == pytest.approx(expected)
        assert sent["last_hidden"] == 3  # the question once, each answer once
        again = Surprisal(judge=backend).score(
            responses, RunContext(examples=EXAMPLES, cache=cache)
        )
    assert again == scores and sent["last_hidden"] == 3
