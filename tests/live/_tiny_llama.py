"""A tiny random-weight Llama with a locally trained tokenizer, for `transformers serve`.

Nothing is downloaded: the byte-level BPE tokenizer is trained here on a few
lines that mix the words judges reply with (verdict words, "final
classification", JSON punctuation), so the model's random replies are made of
those pieces. The weights are random, drawn with a fixed seed and a wide
initialisation so that greedy replies differ by prompt, and the verdict words'
embeddings are doubled so that most replies hold one or two of them inside the
noise: the case a verdict parser must not read as a verdict.

The folder is written with ``save_pretrained`` and the server reloads it with
``from_pretrained``; :func:`build` checks that reload once itself.

Run as a script (``python _tiny_llama.py FOLDER``) it only builds the folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Words and pieces the tokenizer learns as tokens (the model's random replies
# are drawn from them): the verdicts the project's judges ask for, the lines
# that conclude a real judge's reply, negations and JSON punctuation.
_WORDS = (
    "the answer is correct incorrect refuse yes no consistent inconsistent not "
    "verdict final classification therefore true false supported unsupported "
    "reference question proposed response because however maybe cannot say "
    '{ } " : , . ** verdict: answer: reason yes. no. correct. incorrect.'
).split()
CHAT_TEMPLATE = (
    "{% for message in messages %}<s>{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<s>assistant: {% endif %}"
)
VOCAB_SIZE = 400


def _corpus() -> list[str]:
    """Lines of the judge words in a fixed shuffled order (deterministic)."""
    n = len(_WORDS)
    return [" ".join(_WORDS[(7 * i + 3 * j) % n] for j in range(16)) for i in range(300)]


def _judge_word_ids(tokenizer) -> list[int]:
    """Token ids of the verdict words, alone or after a space (byte-level BPE's "\u0120")."""
    words = ("correct", "incorrect", "refuse", "yes", "no", "consistent", "inconsistent")
    words += ("verdict", "true", "false", "not")
    vocab = tokenizer.get_vocab()
    return sorted({vocab[t] for w in words for t in (w, "\u0120" + w) if t in vocab})


def build(folder: Path) -> Path:
    """Write the tokenizer and a random-weight Llama to ``folder`` (kept if already there)."""
    if (folder / "model.safetensors").exists():
        return folder
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        GenerationConfig,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus(), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="</s>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    bos, eos = tokenizer.convert_tokens_to_ids(["<s>", "</s>"])
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=eos,
        tie_word_embeddings=True,
        initializer_range=0.5,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    # A model that likes judge words: doubling their (tied) embeddings makes
    # most greedy replies hold a verdict word or two inside the noise.
    with torch.no_grad():
        model.model.embed_tokens.weight[_judge_word_ids(tokenizer)] *= 2.0
    # The server samples only when the model's generation config says so
    # (a request's temperature 0 turns it off; a temperature > 0 does not turn it on).
    model.generation_config = GenerationConfig(
        bos_token_id=bos, eos_token_id=eos, pad_token_id=eos, do_sample=True, temperature=1.0
    )
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    reloaded = LlamaForCausalLM.from_pretrained(folder)
    if not torch.equal(reloaded.model.embed_tokens.weight, model.model.embed_tokens.weight):
        raise RuntimeError(f"the tiny Llama in {folder} did not reload with from_pretrained")
    return folder


if __name__ == "__main__":
    build(Path(sys.argv[1]))
