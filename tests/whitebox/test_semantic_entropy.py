"""Semantic entropy: greedy bidirectional-entailment clustering and the entropy of its classes."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from realitycheck import Example, Response, RunContext
from realitycheck.backends import Backend, Generation, backends
from realitycheck.backends.mock import MockBackend
from realitycheck.detectors import detectors
from realitycheck.detectors.semantic_entropy import (
    EmbeddingEntailment,
    LLMEntailment,
    NLIEntailment,
    SemanticEntropy,
    meaning_classes,
    semantic_entropy,
)
from realitycheck.errors import FatalBackendError, InvalidInputError, RetryableBackendError

RUN = RunContext()


def _by_words(pairs, question):
    """a entails b when every word of b is in a (one-way, so bidirectional is stricter)."""
    return [set(b.split()) <= set(a.split()) for a, b in pairs]


def _greedy_reference(texts, entails):
    """Farquhar et al.'s clustering, written plainly: compare with each class's first member.

    Identical strings are one meaning without asking (the module's stated shortcut).
    """
    classes, firsts = [], []
    for text in texts:
        for c, first in enumerate(firsts):
            if text == first or (entails(text, first) and entails(first, text)):
                classes.append(c)
                break
        else:
            firsts.append(text)
            classes.append(len(firsts) - 1)
    return classes


def _entropy_reference(classes, logprobs=None):
    weights = [1.0] * len(classes) if logprobs is None else [math.exp(lp) for lp in logprobs]
    mass = {}
    for c, w in zip(classes, weights, strict=True):
        mass[c] = mass.get(c, 0.0) + w
    total = sum(mass.values())
    return -sum(m / total * math.log(m / total) for m in mass.values())


def _random_answers(rng, k):
    words = ["paris", "rome", "city", "capital", "the"]
    return [
        " ".join(sorted(set(rng.choice(words, size=int(rng.integers(1, 4)))))) for _ in range(k)
    ]


def test_meaning_classes_match_the_papers_greedy_clustering():
    rng = np.random.default_rng(0)
    for _ in range(30):
        texts = _random_answers(rng, int(rng.integers(1, 11)))
        expected = _greedy_reference(texts, lambda a, b: _by_words([(a, b)], "")[0])
        assert meaning_classes(texts, _by_words) == expected


@pytest.mark.parametrize("weighted", [False, True])
def test_semantic_entropy_matches_the_formula(weighted):
    rng = np.random.default_rng(1)
    for _ in range(30):
        k = int(rng.integers(1, 11))
        classes = list(rng.integers(0, 4, size=k))
        logprobs = list(rng.normal(-3, 2, size=k)) if weighted else None
        assert semantic_entropy(classes, logprobs) == pytest.approx(
            _entropy_reference(classes, logprobs)
        )


def _response(rid, samples, logprobs=None, example_id="e"):
    features = {}
    if logprobs is not None:
        features["samples"] = [{"token_logprobs": lp} for lp in logprobs]
    return Response(
        response_id=rid,
        example_id=example_id,
        model="m",
        text=samples[0],
        samples=tuple(samples),
        features=features,
    )


@pytest.fixture
def word_equivalence(monkeypatch):
    monkeypatch.setattr(SemanticEntropy, "equivalence_check", lambda self, cache=None: _by_words)


@pytest.mark.parametrize("length_normalized", [True, False])
def test_detector_weighted_and_discrete_match_the_formula(word_equivalence, length_normalized):
    rng = np.random.default_rng(2)
    responses, discrete, weighted = [], [], []
    for i in range(10):
        k = int(rng.integers(2, 8))
        texts = _random_answers(rng, k)
        token_lps = [list(rng.normal(-1, 0.5, size=int(rng.integers(1, 6)))) for _ in range(k)]
        responses.append(_response(f"r{i}", texts, token_lps))
        classes = _greedy_reference(texts, lambda a, b: _by_words([(a, b)], "")[0])
        seq = [np.mean(t) if length_normalized else np.sum(t) for t in token_lps]
        discrete.append(_entropy_reference(classes))
        weighted.append(_entropy_reference(classes, seq))
    det_d = detectors.create("semantic_entropy")
    det_w = detectors.create(
        "semantic_entropy", variant="weighted", length_normalized=length_normalized
    )
    assert [s.value for s in det_d.score(responses, RUN)] == pytest.approx(discrete)
    assert [s.value for s in det_w.score(responses, RUN)] == pytest.approx(weighted)
    assert det_w.needs == {"samples", "logprobs"} and det_d.needs == {"samples"}


def test_agreeing_samples_score_lower_than_disagreeing_ones(word_equivalence):
    same = _response("s", ["paris", "paris", "the paris", "paris the"])
    mixed = _response("m", ["paris", "rome", "city", "capital"])
    low, high = detectors.create("semantic_entropy").score([same, mixed], RUN)
    assert low.value == pytest.approx(_entropy_reference([0, 0, 1, 1]))
    assert high.value == pytest.approx(math.log(4)) and low.value < high.value


def test_missing_samples_or_logprobs_give_none(word_equivalence):
    bare = Response(response_id="r", example_id="e", model="m", text="a")
    (score,) = detectors.create("semantic_entropy").score([bare], RUN)
    assert score.value is None and "samples" in score.error
    weighted = detectors.create("semantic_entropy", variant="weighted")
    generated = dataclasses.replace(_response("r", ["a", "b"]), decoding="sampling")
    (score,) = weighted.score([generated], RUN)
    assert score.value is None and "'logprobs'" in score.error
    (shipped,) = weighted.score([_response("r", ["a", "b"])], RUN)  # a dataset's samples
    assert shipped.value is None and "carry no token log-probabilities" in shipped.error


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"variant": "soft"}, "'variant' parameter"),
        ({"equivalence": "rouge"}, "'equivalence' parameter"),
        ({"equivalence": "nli"}, "'judge' parameter .* judge=hf"),
        ({"equivalence": "llm"}, "'judge' parameter"),
        ({"judge": "mock"}, "'judge' parameter .* unless equivalence is 'llm' or 'nli'"),
        ({"equivalence": "nli", "judge": "openai[model=m]"}, "'pairs' capability"),
        ({"labels": ["entailment", "neutral"]}, "'labels' parameter .* unless equivalence='nli'"),
        ({"equivalence": "llm", "judge": "opena[model=x]"}, "Did you mean 'openai'"),
        ({"equivalence": "llm", "judge": "rouge_l"}, "no backend named 'rouge_l'"),
        ({"threshold": "high"}, "'threshold' parameter"),
    ],
)
def test_rejects_bad_parameters(params, match):
    with pytest.raises(InvalidInputError, match=match):
        detectors.create("semantic_entropy", **params)


@pytest.mark.embed
def test_embedding_equivalence_thresholds_the_cosine():
    from realitycheck.encoders.embeddings import embed

    texts = ["Paris", "It is Paris.", "The capital is Paris", "London", "Rome, Italy", "london"]
    check = EmbeddingEntailment(threshold=0.7)
    vectors = embed(texts)
    cos = {(a, b): float(vectors[i] @ vectors[j]) for i, a in enumerate(texts)
           for j, b in enumerate(texts)}  # fmt: skip
    expected = _greedy_reference(texts, lambda a, b: cos[a, b] >= 0.7)
    assert meaning_classes(texts, check) == expected
    assert len(set(expected)) not in (1, len(texts))


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    """A random 3-label BERT classifier with a locally trained tokenizer, saved and reloaded."""
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    words = "paris rome london city capital of france italy the is a it".split()
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    specials = ["[UNK]", "[PAD]", "[CLS]", "[SEP]"]
    tok.train_from_iterator([" ".join(words)], trainers.WordLevelTrainer(special_tokens=specials))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]",
    )  # fmt: skip
    config = BertConfig(
        vocab_size=len(fast), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, num_labels=3, initializer_range=1.0,
        id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
        label2id={"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2},
    )  # fmt: skip
    torch.manual_seed(0)
    model = BertForSequenceClassification(config).eval()
    folder = tmp_path_factory.mktemp("tiny-nli")
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def test_nli_equivalence_uses_the_entailment_label_both_ways(tiny_nli):
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(tiny_nli).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_nli)

    def reference(a, b):
        with torch.no_grad():
            logits = model(**tokenizer(a, b, return_tensors="pt")).logits[0]
        return int(logits.argmax()) == 2

    texts = ["paris", "the capital of france", "paris", "rome", "it is rome", "london city"]
    from realitycheck.backends.hf import HFBackend

    check = NLIEntailment(HFBackend(model=str(tiny_nli), device="cpu", batch_size=3))
    pairs = [(a, b) for a in texts for b in texts]
    verdicts = check(pairs, "")
    assert verdicts == [reference(a, b) for a, b in pairs]
    assert 0 < sum(verdicts) < len(pairs)  # the random model is not constant
    assert meaning_classes(texts, check) == _greedy_reference(texts, reference)
    judge = {"name": "hf", "params": {"model": str(tiny_nli), "device": "cpu"}}
    det = detectors.create("semantic_entropy", equivalence="nli", judge=judge)
    (score,) = det.score([_response("r", texts)], RUN)
    assert score.value == pytest.approx(_entropy_reference(_greedy_reference(texts, reference)))


def test_nli_model_needs_an_entailment_label(tmp_path, tiny_nli):
    import json
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(tiny_nli, broken)
    config = json.loads((broken / "config.json").read_text())
    config["id2label"] = {"0": "a", "1": "b", "2": "c"}
    config["label2id"] = {"a": 0, "b": 1, "c": 2}
    (broken / "config.json").write_text(json.dumps(config))
    from realitycheck.backends.hf import HFBackend

    with pytest.raises(InvalidInputError, match=r"broken.*\['a', 'b', 'c'\] name none of"):
        NLIEntailment(HFBackend(model=str(broken), device="cpu"))([("a", "b")], "")


@dataclass(frozen=True, kw_only=True)
class YesIfSameFirstWord(MockBackend):
    """The public mock as a judge: yes when both answers start with the same word; logs calls."""

    model: str = "fake"
    reply: str = "no"
    replies: tuple[str, ...] = (r"Answer A: (\S+)(?:[ \t][^\n]*)?\nAnswer B: \1\s=>Yes.",)
    name: ClassVar[str] = "fake_judge"
    capabilities: ClassVar[frozenset[str]] = frozenset({"chat"})
    calls: ClassVar[list[str]] = []

    def generate(self, requests):
        self.calls.extend(request.messages[0]["content"] for request in requests)
        return super().generate(requests)


def test_llm_equivalence_asks_a_backend_and_quotes_the_question(monkeypatch):
    YesIfSameFirstWord.calls.clear()
    texts = ["paris city", "paris", "rome", "rome capital", "london"]
    classes = meaning_classes(texts, LLMEntailment(YesIfSameFirstWord()), "Capital of France?")
    assert classes == [0, 0, 1, 1, 2]
    assert all("Question: Capital of France?" in call for call in YesIfSameFirstWord.calls)
    # Each text is compared with the first member of each class so far, both ways.
    assert len(YesIfSameFirstWord.calls) == 2 * (1 + 1 + 2 + 2)

    monkeypatch.setitem(backends._items, "fake_judge", YesIfSameFirstWord)
    det = detectors.create("semantic_entropy", equivalence="llm", judge="fake_judge")
    examples = {"e": Example(example_id="e", dataset="t", task="qa", question="Capital?")}
    (score,) = det.score([_response("r", texts)], RunContext(examples=examples))
    assert score.value == pytest.approx(_entropy_reference([0, 0, 1, 1, 2]))
    assert "Question: Capital?" in YesIfSameFirstWord.calls[-1]


def test_llm_equivalence_answers_come_from_the_call_cache_the_second_time(tmp_path):
    from realitycheck.backends._cache import CallCache

    YesIfSameFirstWord.calls.clear()
    check = LLMEntailment(YesIfSameFirstWord(), cache=CallCache(tmp_path / "calls.sqlite"))
    texts = ["paris city", "paris", "rome"]
    first = meaning_classes(texts, check, "Q?")
    asked = len(YesIfSameFirstWord.calls)
    assert asked > 0
    assert meaning_classes(texts, check, "Q?") == first
    assert len(YesIfSameFirstWord.calls) == asked


@dataclass(frozen=True, kw_only=True)
class FailingJudge(Backend):
    """A judge whose calls fail: as a rate limit (model "busy") or a bad request (any other)."""

    model: str = "busy"
    name: ClassVar[str] = "failing_judge"
    capabilities: ClassVar[frozenset[str]] = frozenset({"chat"})

    def generate(self, requests):
        busy = self.model == "busy"
        error = "RetryableBackendError: HTTP 429" if busy else "FatalBackendError: HTTP 400"
        return [Generation(error=error, retryable=busy) for _ in requests]


@pytest.mark.parametrize("retryable", [True, False])
def test_a_failed_judge_call_is_an_error_score_not_a_verdict(monkeypatch, retryable):
    judge = FailingJudge(model="busy" if retryable else "strict")
    monkeypatch.setattr(
        SemanticEntropy, "equivalence_check", lambda self, *args: LLMEntailment(judge)
    )
    det = SemanticEntropy()
    same, differ = _response("same", ["paris", "paris"]), _response("differ", ["paris", "rome"])
    scores = det.score([same, differ], RUN)
    assert scores[0].value == 0.0 and not scores[0].error  # identical texts: no call
    assert scores[1].value is None and scores[1].retryable is retryable
    assert scores[1].error == (
        "The entailment judge failed on 2 of 2 questions: "
        + ("RetryableBackendError: HTTP 429" if retryable else "FatalBackendError: HTTP 400")
    )
    kind = RetryableBackendError if retryable else FatalBackendError
    with pytest.raises(kind, match="entailment judge failed on 1 of 1 questions"):
        LLMEntailment(judge)([("paris", "rome")], "Capital?")
