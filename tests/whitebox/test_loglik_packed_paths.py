"""The two ways a packed chunk reaches its logits, on three architectures, and the fast tokenising.

* plain head (Llama, Qwen2, GPT-2): the decoder runs alone and the LM head
  is applied to the predicting rows here;
* full forward (any other packable model, forced here): the model's own
  logits of those rows.

Each is checked against an unpadded float64 log-softmax of a plain
``transformers`` pass per pair, on tiny random models built from a config.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.whitebox.conftest import direct_logprobs, mcq_pairs  # noqa: E402

PAIRS = mcq_pairs(1, contexts=9, context_words=8, options=6, option_words=5)


def _build(kind: str, tokenizer):
    """A tiny random causal LM of ``kind`` sized to ``tokenizer``."""
    from transformers import GPT2Config, GPT2LMHeadModel, Qwen2Config, Qwen2ForCausalLM

    ids = {
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    torch.manual_seed(3)
    if kind == "qwen2":
        config = Qwen2Config(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,  # grouped-query attention
            max_position_embeddings=256,
            initializer_range=0.2,
            tie_word_embeddings=False,
            **ids,
        )
        return Qwen2ForCausalLM(config).eval()
    config = GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=256, **ids)
    return GPT2LMHeadModel(config).eval()


@pytest.fixture(scope="module", params=["llama", "qwen2", "gpt2"])
def model_dir(request, tiny_lm_dir, tmp_path_factory):
    """A saved tiny model of each architecture, with the fixture's tokenizer."""
    if request.param == "llama":
        return tiny_lm_dir
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    folder = tmp_path_factory.mktemp(f"tiny-{request.param}")
    _build(request.param, tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def expected(model_dir) -> list[list[float]]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager").eval()
    return direct_logprobs(model, AutoTokenizer.from_pretrained(model_dir), PAIRS)


def _check(got, expected) -> None:
    assert [len(v) for v in got] == [len(v) for v in expected]
    for values, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(values, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("path", ["plain head", "full forward"])
def test_both_paths_equal_direct_passes(model_dir, expected, attn, path, monkeypatch):
    from realitycheck.backends.hf import HFBackend
    from realitycheck.backends.hf import _packed as _hf_packed

    backend = HFBackend(model=str(model_dir), device="cpu", batch_size=6, attn_implementation=attn)
    model = backend._loaded()[0]
    assert _hf_packed.packable(model)
    assert _hf_packed.plain_head(model)  # all three are plain-head architectures
    if path == "full forward":
        monkeypatch.setattr(_hf_packed, "plain_head", lambda model: False)
    taken: list[str] = []
    for name in ("_predictor_hidden", "_predictor_logits"):
        original = getattr(_hf_packed, name)

        def spy(model, packed, _name=name, _original=original):
            taken.append(_name)
            return _original(model, packed)

        monkeypatch.setattr(_hf_packed, name, spy)
    _check(backend.loglik_tokens(PAIRS), expected)
    want = "_predictor_hidden" if path == "plain head" else "_predictor_logits"
    assert taken and set(taken) == {want}


def test_the_plain_head_path_never_runs_the_full_model(tiny_lm_dir, monkeypatch):
    """The causal LM's own forward (all kept logits) is not called; the decoder is, once a chunk."""
    from realitycheck.backends.hf import HFBackend

    backend = HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=6)
    model = backend._loaded()[0]
    full: list[int] = []
    decoder: list[int] = []
    h1 = model.register_forward_pre_hook(lambda *_: full.append(1))
    h2 = model.get_decoder().register_forward_pre_hook(lambda *_: decoder.append(1))
    try:
        backend.loglik_tokens(PAIRS)
    finally:
        h1.remove()
        h2.remove()
    assert not full
    assert decoder


def test_other_model_classes_are_not_plain_head(tiny_lm_dir):
    """A subclass may change what follows the head (e.g. a soft-cap), so the name must match."""
    from transformers import LlamaForCausalLM

    from realitycheck.backends.hf import load
    from realitycheck.backends.hf._packed import plain_head

    model = load(str(tiny_lm_dir), "cpu", "float32", "sdpa")[0]
    assert plain_head(model)

    class Capped(LlamaForCausalLM):
        pass

    assert not plain_head(Capped(model.config))


@pytest.mark.parametrize("seed", range(3))
def test_block_mask_equals_its_definition(seed):
    """Against a per-cell loop over the stated rule (0 where allowed, -inf elsewhere)."""
    from realitycheck.backends.hf._packed import _block_mask

    rng = np.random.default_rng(seed)
    segments = rng.integers(-1, 4, size=(3, 11))
    got = _block_mask(segments, torch.float32)[:, 0].numpy()
    for r in range(3):
        for i in range(11):
            for j in range(11):
                s_i, s_j = segments[r, i], segments[r, j]
                allowed = i == j or (s_i >= 0 and j <= i and s_j in (0, s_i))
                assert got[r, i, j] == (0.0 if allowed else -np.inf)


def test_token_ids_equal_the_tokenizer_call(tiny_lm_dir):
    from transformers import AutoTokenizer

    from realitycheck.backends.hf._loglik import _plain_backend, token_ids

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    texts = [p + c for p, c in PAIRS] + ["", "<s> the </s> cat"]
    assert _plain_backend(tokenizer) is not None
    assert token_ids(tokenizer, texts) == tokenizer(texts)["input_ids"]
    assert token_ids(tokenizer, []) == []


def test_token_ids_call_the_tokenizer_when_its_backend_truncates(tiny_lm_dir):
    """A truncating backend would cut the ids; the tokenizer's own call resets it."""
    from transformers import AutoTokenizer

    from realitycheck.backends.hf._loglik import _plain_backend, token_ids

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    texts = [p + c for p, c in PAIRS]
    want = tokenizer(texts)["input_ids"]
    tokenizer.backend_tokenizer.enable_truncation(max_length=3)
    assert _plain_backend(tokenizer) is None
    assert token_ids(tokenizer, texts) == want
    assert max(len(ids) for ids in want) > 3
