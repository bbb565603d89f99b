"""The pairs classifier's attention: SDPA where supported, eager otherwise, same probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from tests.pairs.conftest import PAIRS

from realitycheck.backends import CallCache, cached_pairs
from realitycheck.backends._cache import call_identity
from realitycheck.backends.hf import HFBackend
from realitycheck.backends.hf._pairs import load_classifier
from realitycheck.errors import InvalidInputError

torch = pytest.importorskip("torch")


def _direct_probs(folder, attn: str) -> np.ndarray:
    """Class probabilities of a plain transformers pass, one pair at a time (no padding)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation=attn)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    rows = []
    for premise, hypothesis in PAIRS:
        with torch.no_grad():
            logits = model.eval()(**tokenizer(premise, hypothesis, return_tensors="pt")).logits
        rows.append(torch.softmax(logits[0].double(), dim=-1).numpy())
    return np.array(rows)


def _probs(answers) -> np.ndarray:
    return np.array([[a.contradiction, a.neutral, a.entailment] for a in answers])


def test_auto_loads_a_bert_classifier_with_sdpa_equal_to_a_direct_eager_pass(tiny_nli_dir):
    hf = HFBackend(model=str(tiny_nli_dir), device="cpu", batch_size=2)
    classifier, _ = load_classifier(str(tiny_nli_dir), "cpu", "auto", "auto")
    assert classifier.config._attn_implementation == "sdpa"
    got = _probs(hf.score_pairs(PAIRS))
    eager = _direct_probs(tiny_nli_dir, "eager")
    assert np.abs(got - eager).max() < 1e-6
    assert np.abs(got - _direct_probs(tiny_nli_dir, "sdpa")).max() < 1e-6
    assert eager[:, 2].std() > 0.01  # the random model is not constant


def test_an_explicit_attention_is_used_and_not_part_of_the_address(tmp_path, tiny_nli_dir):
    auto = HFBackend(model=str(tiny_nli_dir), device="cpu", batch_size=2)
    eager = HFBackend(
        model=str(tiny_nli_dir), device="cpu", batch_size=2, pairs_attn_implementation="eager"
    )
    classifier, _ = load_classifier(str(tiny_nli_dir), "cpu", "auto", "eager")
    assert classifier.config._attn_implementation == "eager"
    by_eager = _probs(eager.score_pairs(PAIRS))
    assert np.abs(by_eager - _direct_probs(tiny_nli_dir, "eager")).max() < 1e-6
    assert call_identity(auto) == call_identity(eager) and auto.key == eager.key
    cache = CallCache(tmp_path / "calls.sqlite")
    cached_pairs(eager, PAIRS, cache=cache)
    assert all(a.cached for a in cached_pairs(auto, PAIRS, cache=cache))


def test_auto_falls_back_to_eager_where_sdpa_is_unsupported(tiny_deberta_dir):
    classifier, _ = load_classifier(str(tiny_deberta_dir), "cpu", "auto", "auto")
    assert classifier.config._attn_implementation == "eager"
    got = _probs(
        HFBackend(model=str(tiny_deberta_dir), device="cpu", batch_size=2).score_pairs(PAIRS)
    )
    expected = _direct_probs(tiny_deberta_dir, "eager")
    assert np.abs(got - expected).max() < 1e-6
    assert expected[:, 2].std() > 0.01


def test_sdpa_asked_of_a_model_without_it_is_a_clear_error(tiny_deberta_dir):
    hf = HFBackend(model=str(tiny_deberta_dir), device="cpu", pairs_attn_implementation="sdpa")
    with pytest.raises(InvalidInputError, match=r"tiny-deberta.*sequence-pair classifier"):
        hf.score_pairs(PAIRS[:1])
