"""The features the choose stage keeps of the chosen option, on the mock backend and stubs.

The mock scores continuations but cannot read a fixed answer: its answers
carry the chosen option's token log-probs (perplexity scores them) and name
why entropies are missing (an entropy detector's error says so). A stub that
teacher-forces checks what is kept of a forced reading: the last tokens the
choice scored, and a reason where the reading fails or falls short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from realitycheck import detect, detectors
from realitycheck.backends import CallCache, Generation
from realitycheck.backends.mock import MockBackend, tokenize
from realitycheck.generation import ChoicePlan, variants
from realitycheck.pipeline import choose
from realitycheck.pipeline._choice_features import chosen_features
from realitycheck.records import Example, Response, Score
from realitycheck.store import RunStore

LOGPROBS = (-0.3, -2.0, -0.7)
EXAMPLES = [
    Example(
        example_id=f"toy/{i}",
        dataset="toy",
        task="mcq",
        question=f"question number {i} is",
        choices=choices,
        references=(choices[0],),
        meta={"gold": [0]},
    )
    for i, choices in enumerate(
        [("red", "a very long blue answer", "green one"), ("two words", "x"), ("yes", "no")]
    )
]


@pytest.mark.parametrize("top", [0, 2])
def test_mock_answers_keep_their_logprobs_and_say_why_entropies_are_missing(tmp_path, top):
    store = RunStore(tmp_path / "run")
    plan = ChoicePlan(template="qa", top_logprobs=top)
    report = choose(
        store, EXAMPLES, MockBackend(logprob=LOGPROBS), plan, [variants.create("default")]
    )
    assert report.computed == 3 and report.options_read == 0
    responses = store.read(Response)
    for r in responses:
        n = len(tokenize(" " + r.text))
        assert r.features == {"best": {"token_logprobs": [LOGPROBS[t % 3] for t in range(n)]}}
        assert math.fsum(r.features["best"]["token_logprobs"]) == pytest.approx(
            r.meta["options"][r.meta["chosen"]]["sum"]
        )
        lacking = r.meta["unsupported"]
        assert set(lacking) == ({"entropy", "top_logprobs"} if top else {"entropy"})
        assert "'mock[logprob=" in lacking["entropy"]
        assert "cannot read a fixed answer (teacher forcing)" in lacking["entropy"]
        assert "backends that can: hf" in lacking["entropy"]
    detect(store, [detectors.create("perplexity"), detectors.create("mean_token_entropy")])
    scores = {(s.response_id, s.detector): s for s in store.read(Score)}
    for r in responses:
        perplexity = scores[r.response_id, "perplexity"]
        mean = sum(r.features["best"]["token_logprobs"]) / len(r.features["best"]["token_logprobs"])
        assert perplexity.value == pytest.approx(math.exp(-mean))
        entropy = scores[r.response_id, "mean_token_entropy"]
        assert entropy.value is None and "cannot read a fixed answer" in entropy.error


@dataclass(frozen=True, kw_only=True)
class _Forcing(MockBackend):
    """The mock, reading fixed answers as scripted: ``extra`` leading tokens, or an error."""

    extra: int = 0
    fail: str = ""

    def teacher_force(self, requests, answers):
        out = []
        for answer in answers:
            if self.fail:
                out.append(Generation(error=self.fail))
                continue
            words = ["<lead>"] * self.extra + answer.split()
            out.append(
                Generation(
                    texts=(answer,),
                    tokens=(tuple(words),),
                    token_logprobs=(tuple(-1.0 for _ in words),),
                    token_entropies=(tuple(float(i) for i in range(len(words))),),
                    top_logprobs=(tuple({w: -0.5} for w in words),),
                )
            )
        return out


def test_a_forced_reading_keeps_the_last_tokens_the_choice_scored(tmp_path):
    cache = CallCache(tmp_path / "cache.sqlite")
    chosen = [("Q: which?\nA:", " big red", (-0.1, -0.2)), ("pick one ", "blue", (-0.4,))]
    backend = _Forcing(extra=1)
    out, sent = chosen_features(backend, chosen, top_logprobs=1, cache=cache)
    assert sent == 2
    first, second = (c.features["best"] for c in out)
    assert first == {
        "tokens": ["big", "red"],
        "token_logprobs": [-0.1, -0.2],  # the choice's numbers, not the reading's
        "token_entropies": [1.0, 2.0],  # the reading's last two positions
        "top_logprobs": [{"big": -0.5}, {"red": -0.5}],
    }
    assert second["tokens"] == ["blue"] and second["token_logprobs"] == [-0.4]
    assert all(not c.unsupported for c in out)
    again, sent = chosen_features(backend, chosen, top_logprobs=1, cache=cache)
    assert sent == 0 and [c.features for c in again] == [c.features for c in out]


@pytest.mark.parametrize(
    ("backend", "chosen", "reason"),
    [
        (_Forcing(), [("a b", " c d e", (-1.0, -1.0, -1.0, -1.0))], "read 3 token(s)"),
        (_Forcing(fail="boom"), [("a b", " c", (-1.0,))], "failed: boom"),
        (_Forcing(), [("a b", "c", (-1.0,))], "without white space"),
        (_Forcing(), [("   ", " c", (-1.0,))], "the prompt is empty"),
    ],
)
def test_what_cannot_be_read_is_named_and_the_logprobs_stay(backend, chosen, reason):
    (out,), _ = chosen_features(backend, chosen, top_logprobs=2, cache=None)
    assert out.features == {"best": {"token_logprobs": list(chosen[0][2])}}
    assert reason in out.unsupported["entropy"]
    assert out.unsupported["top_logprobs"] == out.unsupported["entropy"]
