"""A tiny BERT encoder built from a config, with a word-piece vocabulary written here.

Random weights (fixed torch seed), saved with ``save_pretrained`` together with
a ``BertTokenizer`` over a small vocabulary: what ``bert-score``,
``transformers.AutoModel`` and realitycheck's BERTScore load back.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

WORDS = (
    "the a cat dog bird fish horse city river mountain king queen doctor teacher "
    "paris london rome berlin tokyo madrid red blue green black white small large old new "
    "is was are were has had sat ran flew swam lives lived sees saw likes liked "
    "on in at near under over with without from to of and or but not "
    "who what where when which answer question capital country ocean sun moon star"
).split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PUNCTUATION = list(".,;:!?'\"()-")
LAYERS = 3
MAX_LENGTH = 64


def sentences(n: int, seed: int) -> list[str]:
    """Return ``n`` random sentences of 4 to 11 vocabulary words."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 12)))) for _ in range(n)]


def build_tiny_bert(folder: Path, *, seed: int = 0) -> Path:
    """Write the tiny BERT and its tokenizer to ``folder`` and return it."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(SPECIALS + PUNCTUATION + sorted(set(WORDS))) + "\n")
    tokenizer = BertTokenizer(str(vocab), model_max_length=MAX_LENGTH)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=MAX_LENGTH,
    )
    torch.manual_seed(seed)
    BertModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
