"""The vllm backend's pairs capability against a stand-in engine (vLLM needs a GPU).

The stand-in mirrors the attribute names of vLLM's ``ScoringRequestOutput``
(``.outputs.score``) and ``ClassificationRequestOutput`` (``.outputs.probs``)
and the signatures of ``LLM.score(text_1, text_2, use_tqdm=...)`` and
``LLM.classify(prompts, use_tqdm=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from realitycheck.backends import _vllm_pairs as vp
from realitycheck.backends import cached_pairs
from realitycheck.backends.vllm import VLLMBackend
from realitycheck.errors import InvalidInputError

PAIRS = [("the tower is in paris", "it is in paris"), ("rome", "paris is a city")]


class WordTokenizer:
    """Token ids = word lengths; optionally BERT-like token types on the hypothesis."""

    model_max_length = 512

    def __init__(self, token_types: bool) -> None:
        self.token_types = token_types

    def __call__(self, premise, hypothesis, truncation=False, max_length=None):
        a, b = [len(w) for w in premise.split()], [len(w) for w in hypothesis.split()]
        out = {"input_ids": [101, *a, 102, *b, 102]}
        if self.token_types:
            out["token_type_ids"] = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        return out


@dataclass
class FakeLLM:
    """Answers from the token ids / texts, and remembers what it was sent."""

    token_types: bool = False

    def __post_init__(self):
        self.sent = []

    def get_tokenizer(self):
        return WordTokenizer(self.token_types)

    def score(self, text_1, text_2, use_tqdm=True):
        self.sent.append(("score", list(zip(text_1, text_2, strict=True))))
        return [
            SimpleNamespace(outputs=SimpleNamespace(score=len(a) / (len(a) + len(b))))
            for a, b in zip(text_1, text_2, strict=True)
        ]

    def classify(self, prompts, use_tqdm=True):
        self.sent.append(("classify", [p["prompt_token_ids"] for p in prompts]))
        out = []
        for p in prompts:
            n = len(p["prompt_token_ids"])
            probs = [1 / n, 0.5 - 1 / n, 0.5]
            out.append(SimpleNamespace(outputs=SimpleNamespace(probs=probs)))
        return out


@pytest.fixture
def engine(monkeypatch):
    """Replace vLLM's pooling engine and the config reader; return a setter for both."""
    state = {"llm": FakeLLM(), "labels": ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"], "starts": 0}

    def pooling_engine(*args):
        state["starts"] += 1
        return state["llm"]

    monkeypatch.setattr(vp, "pooling_engine", pooling_engine)
    monkeypatch.setattr(vp, "label_names", lambda model: list(state["labels"]))
    return state


def test_nli_labels_go_through_classify_with_pair_token_ids(engine):
    backend = VLLMBackend(model="org/nli")
    got = backend.score_pairs(PAIRS)
    kind, sent = engine["llm"].sent[0]
    assert kind == "classify"
    assert sent == [[101, 3, 5, 2, 2, 5, 102, 2, 2, 2, 5, 102], [101, 4, 102, 5, 2, 1, 4, 102]]
    n0, n1 = len(sent[0]), len(sent[1])
    assert got[0].entailment == pytest.approx(1 / n0)
    assert got[0].neutral == pytest.approx(0.5 - 1 / n0)
    assert got[1].contradiction == pytest.approx(0.5) and got[1].entailment == pytest.approx(1 / n1)


def test_a_single_output_goes_through_score(engine):
    engine["labels"] = ["LABEL_0"]
    got = VLLMBackend(model="org/hhem").score_pairs(PAIRS)
    assert engine["llm"].sent == [("score", PAIRS)]
    assert [g.entailment for g in got] == pytest.approx([21 / 35, 4 / 19])
    assert all(g.neutral is None for g in got)


def test_bad_labels_fail_before_the_engine_starts(engine):
    engine["labels"] = ["yes", "no"]
    with pytest.raises(InvalidInputError, match=r"'org/nli' \(labels \['yes', 'no'\]\)"):
        cached_pairs(VLLMBackend(model="org/nli"), PAIRS)
    assert engine["starts"] == 0


def test_token_type_ids_are_refused_before_any_pair_is_classified(engine):
    engine["llm"] = FakeLLM(token_types=True)
    with pytest.raises(InvalidInputError, match="token type ids.*hf backend"):
        VLLMBackend(model="org/bert-nli").score_pairs(PAIRS)
    assert engine["llm"].sent == []


def test_an_engine_failure_becomes_error_answers(engine):
    def broken(prompts, use_tqdm=True):
        raise RuntimeError("CUDA error: device-side assert")

    engine["llm"].classify = broken
    got = VLLMBackend(model="org/nli").score_pairs(PAIRS)
    assert [g.error for g in got] == ["RuntimeError: CUDA error: device-side assert"] * 2


def test_a_wrong_number_of_probabilities_is_refused():
    output = SimpleNamespace(outputs=SimpleNamespace(probs=[0.5, 0.5]))
    with pytest.raises(InvalidInputError, match="2 class probabilities .* 3 labels"):
        vp.from_classification_output(output, ("entailment", "neutral", "contradiction"))


def test_label_names_are_the_configs_in_output_order(tiny_nli_dir, tiny_consistency_dir):
    assert vp.label_names(str(tiny_nli_dir)) == ["CONTRADICTION", "NEUTRAL", "ENTAILMENT"]
    assert vp.label_names(str(tiny_consistency_dir)) == ["LABEL_0"]


def test_an_output_the_config_does_not_name_is_label_i():
    from realitycheck.backends._pairs import config_label_names

    config = SimpleNamespace(num_labels=3, id2label={0: "entailment", 2: "contradiction"})
    assert config_label_names(config) == ["entailment", "LABEL_1", "contradiction"]
    assert config_label_names(SimpleNamespace(num_labels=2, id2label=None)) == [
        "LABEL_0",
        "LABEL_1",
    ]
