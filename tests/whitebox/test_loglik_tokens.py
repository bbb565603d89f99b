"""Per-token continuation log-likelihoods on hf (tiny Llama) and vllm (a stand-in engine)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from realitycheck.backends import CallCache, cached_loglik_tokens
from realitycheck.backends.vllm import VLLMBackend

torch = pytest.importorskip("torch")

from tests.whitebox.conftest import direct_logprobs  # noqa: E402

PAIRS = [
    ("the cat sat on", " the river"),
    ("who is the king of", " rome"),
    ("who is the king of", " the old city of london and paris"),
    ("one two three", " four five six seven eight nine ten"),
    ("the sun", " is red"),
    ("the", " moon"),
]


def _direct(reference, prompt: str, continuation: str) -> list[float]:
    """One unpadded transformers forward pass over prompt + continuation."""
    model, tokenizer = reference
    return direct_logprobs(model, tokenizer, [(prompt, continuation)])[0]


def test_hf_token_logliks_equal_a_direct_forward_pass(hf, reference):
    got = hf.loglik_tokens(PAIRS)  # batch_size 4: two padded batches of mixed lengths
    for pair, values in zip(PAIRS, got, strict=True):
        expected = _direct(reference, *pair)
        assert len(values) == len(expected)
        np.testing.assert_allclose(values, expected, atol=1e-5, rtol=0)
    sums = hf.loglik(PAIRS)
    assert sums == pytest.approx([math.fsum(v) for v in got], abs=1e-9)


MCQ = [
    (context, option)
    for context in ("the cat", "who is the king of the old city", "one two three four five six")
    for option in (" sat", " is the queen of london", " red blue green black")
]


def _force_path(monkeypatch, path: str) -> None:
    """Score options in packed rows (``packed``) or against a copied KV cache (``cache``)."""
    import importlib

    module = importlib.import_module("realitycheck.backends.hf._loglik")
    if path == "cache":
        monkeypatch.setattr(module, "packable", lambda model: False)


@pytest.mark.parametrize("path", ["packed", "cache"])
@pytest.mark.parametrize("batch_size", [1, 4, 64])
def test_options_sharing_a_context_equal_a_direct_forward_pass(
    reference, tiny_lm_dir, batch_size, path, monkeypatch
):
    """Contexts run once (packed rows or a copied cache): same numbers as full passes."""
    from realitycheck.backends.hf import HFBackend

    _force_path(monkeypatch, path)
    backend = HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=batch_size)
    got = backend.loglik_tokens(MCQ + [("the sun", " is red")])
    for pair, values in zip(MCQ + [("the sun", " is red")], got, strict=True):
        np.testing.assert_allclose(values, _direct(reference, *pair), atol=1e-5, rtol=0)


# Word-level tokens: "on" + "e two" is "one two", so the boundary token merges and the
# context of those options is "the cat sat" (the merged token counts to the option).
MERGING = [
    ("the cat sat on", "e two three"),
    ("the cat sat on", " the river"),
    ("the cat sat on", "e"),
    ("the cat sat on", " a mountain near rome"),
    ("one two three day", "s"),
    ("one two three day", " ten"),
]


def _direct_merged(reference, prompt: str, continuation: str) -> list[float]:
    """One unpadded pass; the continuation is what follows the tokens both texts share."""
    model, tokenizer = reference
    ctx = tokenizer(prompt)["input_ids"]
    whole = tokenizer(prompt + continuation)["input_ids"]
    start = next(
        (t for t, (a, b) in enumerate(zip(ctx, whole, strict=False)) if a != b),
        min(len(ctx), len(whole)),
    )
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([whole])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[t - 1, whole[t]]) for t in range(start, len(whole))]


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("path", ["packed", "cache"])
def test_options_whose_first_token_merges_with_the_context(
    reference, tiny_lm_dir, path, attn, monkeypatch
):
    from realitycheck.backends.hf import HFBackend

    _force_path(monkeypatch, path)
    backend = HFBackend(
        model=str(tiny_lm_dir), device="cpu", batch_size=3, attn_implementation=attn
    )
    got = backend.loglik_tokens(MERGING)
    assert [len(v) for v in got] == [3, 2, 1, 4, 1, 1]
    for pair, values in zip(MERGING, got, strict=True):
        np.testing.assert_allclose(values, _direct_merged(reference, *pair), atol=1e-5, rtol=0)


def test_packed_path_is_taken_on_eager_and_sdpa_only(tiny_lm_dir):
    from realitycheck.backends.hf import load
    from realitycheck.backends.hf._packed import packable

    for attn in ("eager", "sdpa"):
        assert packable(load(str(tiny_lm_dir), "cpu", "float32", attn)[0])
    model = load(str(tiny_lm_dir), "cpu", "float32", "eager")[0]
    config = model.config
    try:
        config.sliding_window = 4  # a window would be overridden by the packed mask
        assert not packable(model)
    finally:
        config.sliding_window = None


def test_hf_scores_do_not_depend_on_batch_or_order(hf):
    from realitycheck.backends.hf import HFBackend

    one_at_a_time = HFBackend(model=hf.model, device="cpu", batch_size=1)
    reversed_pairs = PAIRS[::-1]
    a = hf.loglik_tokens(PAIRS)
    b = one_at_a_time.loglik_tokens(reversed_pairs)[::-1]
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, atol=1e-5, rtol=0)


def test_hf_scores_are_cached(hf, tmp_path, monkeypatch):
    from realitycheck.backends.hf import HFBackend

    sent: list[int] = []
    original = HFBackend.loglik_tokens

    def counting(self, pairs):
        sent.append(len(pairs))
        return original(self, pairs)

    monkeypatch.setattr(HFBackend, "loglik_tokens", counting)
    cache = CallCache(tmp_path / "c.sqlite")
    first, n = cached_loglik_tokens(hf, PAIRS, cache=cache)
    again, n_again = cached_loglik_tokens(hf, PAIRS, cache=cache)
    assert (n, n_again, sent) == (len(PAIRS), 0, [len(PAIRS)])
    assert again == first


@dataclass
class _Logprob:
    logprob: float


@dataclass
class _Output:
    prompt_logprobs: list


class _Tokenizer:
    """Word tokens after a BOS id 0; ids are positions in a growing vocabulary."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def encode(self, text: str) -> list[int]:
        return [0] + [self.vocab.setdefault(w, len(self.vocab) + 1) for w in text.split()]


class _Engine:
    """Stands in for ``vllm.LLM``: prompt log-prob of token t is -(t + id) / 10."""

    def __init__(self) -> None:
        self.tokenizer = _Tokenizer()
        self.calls: list[list[list[int]]] = []

    def get_tokenizer(self) -> _Tokenizer:
        return self.tokenizer

    def generate(self, prompts, sampling_params, use_tqdm):
        ids = [p["prompt_token_ids"] for p in prompts]
        self.calls.append(ids)
        assert sampling_params.kw == {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}
        return [
            _Output([None] + [{tok: _Logprob(-(t + tok) / 10)} for t, tok in enumerate(row) if t])
            for row in ids
        ]


class _SamplingParams:
    def __init__(self, **kw) -> None:
        self.kw = kw


class _VllmModule:
    SamplingParams = _SamplingParams


def test_vllm_token_logliks_read_the_prompt_logprobs(monkeypatch):
    engine = _Engine()
    monkeypatch.setattr("realitycheck.backends.vllm._vllm", lambda: _VllmModule)
    monkeypatch.setattr(VLLMBackend, "_llm", lambda self: engine)
    backend = VLLMBackend(model="stand-in")
    pairs = [("the cat", " sat down"), ("a b c", " d"), ("x", "")]
    got = backend.loglik_tokens(pairs)
    tok = engine.tokenizer
    expected = []
    for prompt, continuation in pairs:
        whole = tok.encode(prompt + continuation)
        start = len(tok.encode(prompt))
        expected.append(tuple(-(t + whole[t]) / 10 for t in range(start, len(whole))))
    assert got == expected
    assert len(engine.calls) == 1 and len(engine.calls[0]) == 3  # one batched engine call
    assert backend.loglik(pairs) == pytest.approx([sum(v) for v in expected])
