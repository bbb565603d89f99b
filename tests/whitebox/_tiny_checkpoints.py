"""Tiny stand-ins for the checkpoints of UniEval, Q² and Critic, built from a config here.

Nothing is downloaded. Each model has random weights (fixed torch seed) or,
for the extractive reader, weights set by hand; each tokenizer is a
word-level vocabulary trained with the ``tokenizers`` library. Both are
written with ``save_pretrained`` and the labelers load them back with
``from_pretrained``, as they would a published checkpoint.

* :func:`build_t5` — a 2-layer T5 and a T5-like tokenizer (``</s>`` ends
  every input, ``<pad>`` starts the decoder; ``Yes`` and ``No`` are one
  token each): UniEval's evaluator and Q²'s question generator.
* :func:`build_reader` — a BERT question-answering model with no layer,
  whose span scores depend on the token only: ``paris`` scores highest, then
  ``rome``, then ``1889``; any other token scores the same as ``[CLS]``. So
  it answers ``paris`` from any text with that word, else ``rome``, else
  ``1889``, and gives no answer otherwise (the argmax is ``[CLS]``).
* :func:`build_classifier` — a 1-layer RoBERTa sequence classifier with the
  label names given (FaithCritic's, or an NLI model's).
"""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "the a an is was were of in on at to and or not it its by from with for as that this "
    "tower eiffel paris france rome italy london city capital built completed metres tall "
    "company designed gustave river bridge king queen year years one two three 1889 330 "
    "who what when where which how many i you my your do does did yes no love like "
    "answer question response source document summary fact knowledge claim context "
    "football league teams season games players team nfl played"
).split()
TEMPLATE_WORDS = (
    "question: Is this claim consistent with the document? claim: document: "
    "Is this response consistent with knowledge in the fact? response: fact: "
    "answer: context: Yes No What Who When Where Paris Rome Eiffel Tower The It I"
).split()
ANSWERS = {"paris": 3.0, "rome": 2.0, "1889": 1.0}
"""The reader's span score of each answer word (every other token scores 0)."""


def _size(tokenizer) -> int:
    """The embedding rows the tokenizer needs: its largest id, plus one."""
    return max(tokenizer.get_vocab().values()) + 1


def _word_level(words: list[str], specials: list[str], *, lowercase: bool, punctuation: bool):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token=specials[2]))
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    split = pre_tokenizers.Whitespace() if punctuation else pre_tokenizers.WhitespaceSplit()
    tok.pre_tokenizer = split
    trainer = trainers.WordLevelTrainer(special_tokens=specials, min_frequency=1)
    tok.train_from_iterator([" ".join(words)], trainer=trainer)
    return tok


def build_t5(folder: Path, *, seed: int, head_std: float = 1.0) -> Path:
    """Write a tiny T5 and its word-level tokenizer to ``folder`` and return it."""
    import torch
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    specials = ["<pad>", "</s>", "<unk>"]
    words = WORDS + TEMPLATE_WORDS + [w.capitalize() for w in WORDS]
    tok = _word_level(words, specials, lowercase=False, punctuation=False)
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )
    config = T5Config(
        vocab_size=_size(tokenizer),
        d_model=32,
        d_ff=64,
        d_kv=8,
        num_layers=2,
        num_heads=4,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(config).eval()
    torch.nn.init.normal_(model.lm_head.weight, std=head_std)  # else it only ever says <pad>
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _bert_tokenizer(max_length: int = 128):
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[CLS]", "[UNK]", "[SEP]"]
    tok = _word_level(WORDS + TEMPLATE_WORDS, specials, lowercase=True, punctuation=True)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=max_length,
    )


def build_reader(folder: Path) -> Path:
    """Write the hand-set extractive reader (see the module documentation) to ``folder``."""
    import torch
    from transformers import BertConfig, BertForQuestionAnswering

    tokenizer = _bert_tokenizer()
    hidden = 2 + len(ANSWERS)
    config = BertConfig(
        vocab_size=_size(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=0,
        num_attention_heads=1,
        intermediate_size=4,
        max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = BertForQuestionAnswering(config).eval()
    with torch.no_grad():
        emb = model.bert.embeddings
        # Every token but the answers is the same vector; each answer word has its own
        # direction. LayerNorm then maps each to a fixed pattern, whatever the position.
        emb.word_embeddings.weight.zero_()
        emb.word_embeddings.weight[:, 0] = 1.0
        emb.position_embeddings.weight.zero_()
        emb.token_type_embeddings.weight.zero_()
        emb.LayerNorm.weight.fill_(1.0)
        emb.LayerNorm.bias.zero_()
        weights = torch.zeros(2, hidden)
        for j, (word, value) in enumerate(ANSWERS.items()):
            row = emb.word_embeddings.weight[tokenizer.convert_tokens_to_ids(word)]
            row.zero_()
            row[2 + j] = 1.0
            weights[:, 2 + j] = value
        model.qa_outputs.weight.copy_(weights)
        model.qa_outputs.bias.zero_()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_classifier(folder: Path, id2label: dict[int, str], *, seed: int) -> Path:
    """Write a 1-layer RoBERTa classifier with the labels ``id2label`` to ``folder``."""
    import torch
    from transformers import RobertaConfig, RobertaForSequenceClassification

    tokenizer = _bert_tokenizer(max_length=64)
    config = RobertaConfig(
        vocab_size=_size(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64 + 2,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={name: i for i, name in id2label.items()},
        initializer_range=1.0,
        pad_token_id=tokenizer.pad_token_id,
        type_vocab_size=2,
    )
    torch.manual_seed(seed)
    model = RobertaForSequenceClassification(config).eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
