"""A tiny causal LM built from a config, with a tokenizer trained here, saved and reloaded.

Nothing is downloaded: the tokenizer is a word-level vocabulary trained with
the ``tokenizers`` library on generated sentences, the model a 4-layer Llama
with random weights (fixed torch seed). Both are written with
``save_pretrained`` and the backend loads them back with ``from_pretrained``.
The recipe is the benchmarks' (``benchmarks/_tiny_llama.py``, loaded from its
file as the benchmark tests load theirs), so the two build one model.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

_spec = importlib.util.spec_from_file_location(
    "bench_tiny_llama", Path(__file__).resolve().parents[2] / "benchmarks" / "_tiny_llama.py"
)
tiny_llama = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny_llama)

WORDS = tiny_llama.WORDS
random_llama = tiny_llama.random_llama
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }} says {{ m['content'] }} "
    "{% endfor %}{% if add_generation_prompt %}assistant says{% endif %}"
)
HIDDEN = 32
LAYERS = 4


def mcq_pairs(seed: int, contexts: int, context_words: int, options: int, option_words: int):
    """Seeded ``(context, " option")`` pairs: ``contexts`` contexts of 1 to ``context_words`` words,
    each with 1 to ``options`` options of 1 to ``option_words`` words."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(contexts):
        context = " ".join(rng.choice(WORDS[:-4], size=int(rng.integers(1, context_words + 1))))
        for _ in range(int(rng.integers(1, options + 1))):
            size = int(rng.integers(1, option_words + 1))
            pairs.append((context, " " + " ".join(rng.choice(WORDS, size=size))))
    return pairs


def direct_logprobs(model, tokenizer, pairs) -> list[list[float]]:
    """Each pair's continuation token log-probs: an unpadded float64 log-softmax of a plain pass."""
    import torch

    out = []
    for prompt, continuation in pairs:
        ctx = tokenizer(prompt)["input_ids"]
        whole = tokenizer(prompt + continuation)["input_ids"]
        assert whole[: len(ctx)] == ctx
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([whole])).logits[0].double()
        logp = torch.log_softmax(logits, dim=-1)
        out.append([float(logp[t - 1, whole[t]]) for t in range(len(ctx), len(whole))])
    return out


def build_tokenizer():
    """The word-level tokenizer over :data:`WORDS`, with :data:`CHAT_TEMPLATE`."""
    fast = tiny_llama.llama_word_tokenizer()
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(tokenizer):
    """The 4-layer Llama of hidden size :data:`HIDDEN`, random weights under seed 0, eval mode."""
    return random_llama(tokenizer, hidden_size=HIDDEN, layers=LAYERS)


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory) -> Path:
    """Folder with the tiny Llama and its tokenizer, written by ``save_pretrained``."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def reference(tiny_lm_dir):
    """The same model and tokenizer loaded independently of the backend."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_lm_dir, attn_implementation="eager")
    return model.eval(), AutoTokenizer.from_pretrained(tiny_lm_dir)


@pytest.fixture(scope="session")
def hf(tiny_lm_dir):
    """The ``hf`` backend on the tiny model, on CPU."""
    from realitycheck.backends.hf import HFBackend

    return HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=4)


@pytest.fixture
def hf_sent(monkeypatch) -> list[int]:
    """Count the requests the ``hf`` backend is sent from now on, call by call."""
    from realitycheck.backends.hf import HFBackend

    counts: list[int] = []
    original = HFBackend.generate

    def generate(self, requests):
        counts.append(len(requests))
        return original(self, requests)

    monkeypatch.setattr(HFBackend, "generate", generate)
    return counts
