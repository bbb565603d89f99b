"""A tiny causal LM built from a config, with a tokenizer trained here, saved and reloaded.

Nothing is downloaded: the tokenizer is a word-level vocabulary trained with
the ``tokenizers`` library on generated sentences, the model a 4-layer Llama
with random weights (fixed torch seed). Both are written with
``save_pretrained`` and the backend loads them back with ``from_pretrained``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

WORDS = (
    "the a cat dog bird fish horse city river mountain king queen doctor teacher "
    "paris london rome berlin tokyo madrid red blue green black white small large old new "
    "is was are were has had sat ran flew swam lives lived sees saw likes liked "
    "on in at near under over with without from to of and or but not "
    "who what where when which answer question capital country ocean sun moon star "
    "one two three four five six seven eight nine ten year years day days "
    "user system assistant says"
).split()
SPECIALS = ["<unk>", "<pad>", "<s>", "</s>"]
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


def _sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 12)))) for _ in range(n)]


def build_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(special_tokens=SPECIALS, min_frequency=1)
    tok.train_from_iterator(_sentences(400, seed=0) + [" ".join(WORDS)], trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", bos)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=64,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        initializer_range=0.2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


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
