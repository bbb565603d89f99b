"""The pairs capability: hf against a plain transformers forward pass, mock, cache, bad labels."""

from __future__ import annotations

import numpy as np
import pytest
from tests.pairs.conftest import PAIRS

from realitycheck.backends import (
    CAPABILITIES,
    CallCache,
    PairScore,
    backends,
    cached_pairs,
    pair_classes,
)
from realitycheck.backends.hf import HFBackend
from realitycheck.errors import InvalidInputError
from realitycheck.text import words

torch = pytest.importorskip("torch")


def _reference_logits(load, folder, pairs, max_length=None):
    model, tokenizer = load(folder)
    rows = []
    for premise, hypothesis in pairs:  # one pair at a time: no padding at all
        enc = tokenizer(
            premise,
            hypothesis,
            truncation=max_length is not None,
            max_length=max_length,
            return_tensors="pt",
        )
        with torch.no_grad():
            rows.append(model(**enc).logits[0].double().numpy())
    return np.array(rows)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_pairs_is_a_declared_capability_of_hf_vllm_and_mock():
    assert "pairs" in CAPABILITIES
    for name in ("hf", "vllm", "mock"):
        assert "pairs" in backends.get(name).capabilities
    assert "pairs" not in backends.get("openai").capabilities


def test_hf_nli_probabilities_equal_a_direct_forward_pass(tiny_nli_dir, reference_classifier):
    hf = HFBackend(model=str(tiny_nli_dir), device="cpu", batch_size=2)
    got = hf.score_pairs(PAIRS)
    probs = _softmax(_reference_logits(reference_classifier, tiny_nli_dir, PAIRS))
    # id2label: 0 CONTRADICTION, 1 NEUTRAL, 2 ENTAILMENT
    assert [g.entailment for g in got] == pytest.approx(probs[:, 2].tolist(), abs=1e-6)
    assert [g.neutral for g in got] == pytest.approx(probs[:, 1].tolist(), abs=1e-6)
    assert [g.contradiction for g in got] == pytest.approx(probs[:, 0].tolist(), abs=1e-6)
    assert len({round(g.entailment, 3) for g in got}) > 1  # the random model is not constant
    assert [g.top() for g in got] == [
        ("contradiction", "neutral", "entailment")[int(i)] for i in probs.argmax(axis=1)
    ]


@pytest.mark.parametrize(
    ("message", "frees"),
    [("CUDA out of memory. Tried to allocate 2 GiB", True), ("bad shape", False)],
)
def test_hf_a_failed_batch_becomes_error_answers_and_frees_cuda_after_oom(
    monkeypatch, tiny_nli_dir, message, frees
):
    from realitycheck.backends.hf._pairs import load_classifier

    hf = HFBackend(model=str(tiny_nli_dir), device="cpu", batch_size=2)
    classifier, _ = load_classifier(hf.model, hf.device, hf.dtype, hf.pairs_attn_implementation)
    freed = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: freed.append(True))

    def fail(**inputs):
        raise RuntimeError(message)

    monkeypatch.setattr(classifier, "forward", fail)
    got = hf.score_pairs(PAIRS)
    assert [g.error for g in got] == [f"RuntimeError: {message}"] * len(PAIRS)
    assert [g.entailment for g in got] == [None] * len(PAIRS)
    assert freed == [True] * 3 * frees  # once per failed batch of 2 of the 5 pairs


def test_hf_single_logit_consistency_is_the_sigmoid(tiny_consistency_dir, reference_classifier):
    hf = HFBackend(model=str(tiny_consistency_dir), device="cpu", batch_size=3)
    got = hf.score_pairs(PAIRS)
    logits = _reference_logits(reference_classifier, tiny_consistency_dir, PAIRS)[:, 0]
    expected = 1.0 / (1.0 + np.exp(-logits))
    assert [g.entailment for g in got] == pytest.approx(expected.tolist(), abs=1e-6)
    assert all(g.neutral is None and g.contradiction is None for g in got)


def test_hf_truncates_a_long_pair_to_the_models_limit(tiny_nli_dir, reference_classifier):
    long_pair = [(" ".join(["paris", "is", "in", "france"] * 60), "paris is in france")]
    (got,) = HFBackend(model=str(tiny_nli_dir), device="cpu").score_pairs(long_pair)
    probs = _softmax(_reference_logits(reference_classifier, tiny_nli_dir, long_pair, 128))
    assert got.error == ""
    assert got.entailment == pytest.approx(probs[0, 2], abs=1e-6)


def test_declared_labels_name_unnamed_outputs(relabelled, tiny_nli_dir):
    plain = relabelled(["LABEL_0", "LABEL_1", "LABEL_2"])
    hf = HFBackend(model=str(plain), device="cpu")
    with pytest.raises(InvalidInputError, match=r"relabelled.*LABEL_0.*name none of"):
        hf.score_pairs(PAIRS[:1])
    named = hf.score_pairs(PAIRS, labels=("contradiction", "neutral", "entailment"))
    original = HFBackend(model=str(tiny_nli_dir), device="cpu").score_pairs(PAIRS)
    assert [n.entailment for n in named] == pytest.approx([o.entailment for o in original])


@pytest.mark.parametrize(
    ("names", "declared", "match"),
    [
        (["a", "b", "c"], (), r"labels \['a', 'b', 'c'\] name none of"),
        (["neutral", "contradiction"], (), "exactly one entailment class"),
        (["entailment", "entailed", "neutral"], (), "exactly one entailment class"),
        (["entailment", "neutral", "contradiction"], ("entailment", "neutral"), "has 3 outputs"),
        (["LABEL_0", "LABEL_1"], ("support", "entailment"), r"declared labels \['support'\]"),
    ],
)
def test_pair_classes_refuses_labels_that_do_not_fit(names, declared, match):
    with pytest.raises(InvalidInputError, match=match) as info:
        pair_classes("org/model", names, declared)
    assert "'org/model'" in str(info.value) and str(names) in str(info.value)


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["CONTRADICTION", "NEUTRAL", "ENTAILMENT"], ("contradiction", "neutral", "entailment")),
        (["entailment", "not_entailment"], ("entailment", "not_entailment")),
        (["Non-Entailment", "Entailed"], ("not_entailment", "entailment")),
        (["LABEL_0"], ("consistency",)),
    ],
)
def test_pair_classes_reads_common_label_names(names, expected):
    assert pair_classes("m", names) == expected


def test_bad_labels_fail_before_any_forward_pass(relabelled, monkeypatch):
    from transformers import BertForSequenceClassification

    calls = []
    original = BertForSequenceClassification.forward

    def forward(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BertForSequenceClassification, "forward", forward)
    broken = relabelled(["yes", "no", "maybe"])
    hf = HFBackend(model=str(broken), device="cpu")
    with pytest.raises(InvalidInputError, match=r"'.*relabelled-\d+'.*\['yes', 'no', 'maybe'\]"):
        cached_pairs(hf, PAIRS)
    assert calls == []


def test_mock_is_the_stated_word_overlap():
    mock = backends.create("mock")
    got = mock.score_pairs(PAIRS + [("anything", "...")])
    for (premise, hypothesis), answer in zip(PAIRS, got, strict=False):
        h = set(words(hypothesis))
        share = sum(w in set(words(premise)) for w in h) / len(h)
        assert answer == PairScore(entailment=share, neutral=(1 - share) / 2,
                                   contradiction=(1 - share) / 2)  # fmt: skip
    assert got[-1].entailment == 1.0  # a hypothesis without words
    swapped = mock.score_pairs(PAIRS[:1], labels=("contradiction", "neutral", "entailment"))
    assert swapped[0].contradiction == got[0].entailment


def test_cached_pairs_scores_each_distinct_pair_once_and_a_rerun_none(
    tmp_path, tiny_nli_dir, pairs_scored
):
    hf = HFBackend(model=str(tiny_nli_dir), device="cpu", batch_size=2)
    cache = CallCache(tmp_path / "calls.sqlite")
    first = cached_pairs(hf, PAIRS + PAIRS[:2], cache=cache)
    assert pairs_scored == [len(PAIRS)]
    assert [a.cached for a in first] == [False] * len(PAIRS) + [True, True]
    again = cached_pairs(hf, PAIRS, cache=cache)
    assert pairs_scored == [len(PAIRS)]  # no new call
    assert all(a.cached for a in again)
    assert [a.entailment for a in again] == [a.entailment for a in first[: len(PAIRS)]]
    # Declared labels are part of the address: the same pairs read another way are scored anew.
    cached_pairs(hf, PAIRS[:1], cache=cache, labels=("contradiction", "neutral", "entailment"))
    assert pairs_scored == [len(PAIRS), 1]


def test_failed_pairs_are_not_cached(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    failing = backends.create("mock", fail_on="zorblax")
    got = cached_pairs(failing, [("a zorblax", "b"), ("a", "a")], cache=cache)
    assert got[0].error.startswith("FatalBackendError") and got[0].entailment is None
    assert got[1].entailment == 1.0 and len(cache) == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pairs": [("a",)]}, "'pairs' parameter of cached_pairs"),
        ({"pairs": [("a", 1)]}, "'pairs' parameter of cached_pairs"),
        ({"labels": "entailment"}, "'labels' parameter of cached_pairs"),
    ],
)
def test_cached_pairs_refuses_bad_arguments(kwargs, match):
    args = {"pairs": [("a", "b")]} | kwargs
    with pytest.raises(InvalidInputError, match=match):
        cached_pairs(backends.create("mock"), args["pairs"], labels=args.get("labels", ()))


def test_a_backend_without_pairs_is_refused_by_name():
    openai = backends.create("openai", model="m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(InvalidInputError, match="needs pairs.*Backends that can: .*hf"):
        cached_pairs(openai, [("a", "b")])
