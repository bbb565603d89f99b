"""Tiny local models for the benchmarks: a random Llama and a random DeBERTa-v2 NLI model.

Nothing is downloaded. Both models are built from a config with random
weights under a fixed torch seed, with word-level tokenizers trained here with
the ``tokenizers`` library, and written with ``save_pretrained`` so that any
tool can load them back with ``from_pretrained``.

The Llama is the white-box test fixture's (4 layers, hidden size 32, 4 heads,
intermediate size 64, initializer range 0.2, seed 0): ``tests/whitebox/conftest.py``
builds it with :func:`llama_word_tokenizer` and :func:`random_llama` from
here. The benchmarks' vocabulary is the fixture's word list plus every word of
the texts the benchmark will prompt with, so that prompts are not all ``<unk>``.

The NLI model is a 2-layer DeBERTa-v2 sequence classifier with the labels
``CONTRADICTION``, ``NEUTRAL`` and ``ENTAILMENT`` (the names LM-Polygraph
looks up). Its weights are initialised with a large range (0.5) so that its
verdicts depend on the input, and its entailment bias is set so that half of
random pairs of word strings come out as entailment; bidirectional-entailment
clustering of random answers then gives a spread of class counts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

WORDS = (
    "the a cat dog bird fish horse city river mountain king queen doctor teacher "
    "paris london rome berlin tokyo madrid red blue green black white small large old new "
    "is was are were has had sat ran flew swam lives lived sees saw likes liked "
    "on in at near under over with without from to of and or but not "
    "who what where when which answer question capital country ocean sun moon star "
    "one two three four five six seven eight nine ten year years day days "
    "user system assistant says"
).split()
LLAMA_SPECIALS = ["<unk>", "<pad>", "<s>", "</s>"]
NLI_SPECIALS = ["[UNK]", "[PAD]", "[CLS]", "[SEP]"]
NLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
_VERSION = "1"


def _sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 12)))) for _ in range(n)]


def _word_level(corpus: Sequence[str], specials: list[str]):  # noqa: ANN202 - tokenizers type
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token=specials[0]))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(special_tokens=specials, min_frequency=1)
    tok.train_from_iterator(list(corpus), trainer=trainer)
    return tok


def llama_tokenizer(tok):  # noqa: ANN001, ANN201 - tokenizers / transformers types
    """Wrap a word-level ``tok`` (with :data:`LLAMA_SPECIALS`) as Llama's: ``<s>`` first."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", bos)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        clean_up_tokenization_spaces=False,
    )


def llama_word_tokenizer(texts: Sequence[str] = ()):  # noqa: ANN201 - transformers type
    """Llama's word-level tokenizer over :data:`WORDS` and every word of ``texts``.

    Trained on 400 seeded sentences of :data:`WORDS`, the words themselves and
    ``texts``; with no ``texts`` it is the white-box test fixture's tokenizer.
    """
    return llama_tokenizer(
        _word_level(_sentences(400, seed=0) + [" ".join(WORDS), *texts], LLAMA_SPECIALS)
    )


def random_llama(
    tokenizer,  # noqa: ANN001 - transformers type
    *,
    hidden_size: int = 32,
    layers: int = 4,
    max_positions: int = 256,
    initializer_range: float = 0.2,
    seed: int = 0,
):
    """A Llama with random weights drawn under ``torch.manual_seed(seed)``, in eval mode.

    Sized for ``tokenizer`` (its vocabulary and its bos, eos and pad ids), with
    4 heads (as many key-value heads), an intermediate size twice
    ``hidden_size`` and an output head of its own. The defaults are the
    white-box test fixture's (``tests/whitebox/conftest.py``).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_positions,
        initializer_range=initializer_range,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).eval()


def build_llama(
    folder: Path,
    texts: Sequence[str],
    *,
    hidden_size: int = 32,
    max_positions: int = 256,
) -> None:
    """Write the tiny Llama and its tokenizer (fixture words + words of ``texts``) to ``folder``.

    ``hidden_size`` (intermediate size twice that, 4 heads) and ``max_positions``
    default to the test fixture's; a benchmark of long prompts raises both.
    """
    tokenizer = llama_word_tokenizer(texts)
    model = random_llama(tokenizer, hidden_size=hidden_size, max_positions=max_positions)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_yes_no_llama(folder: Path, prompts: Sequence[str]) -> None:
    """Write a tiny Llama that answers each of ``prompts`` with ``Yes`` or ``No``, then stops.

    A judge for SelfCheck's prompt variant on which a reader of replies has
    something to read. Unlike :func:`build_llama`'s, its tokenizer keeps the
    text exactly: words, punctuation marks and runs of white space are
    tokens, and decoding joins them as they were, so the decoded prompt
    equals the prompt (the ``selfcheckgpt`` package finds its reply by
    removing the prompt from the decoded text). The random Llama is then
    changed in three places:

    * ``Yes`` and ``No`` score ``+s (u . h)`` and ``-s (u . h)`` at every
      position, with ``h`` the final hidden state and ``u`` the direction
      along which ``h`` at the prompts' last position varies most (centred, so
      about half the prompts get each answer); ``s`` is large enough that
      one of the two wins on nearly every prompt;
    * the embeddings of ``Yes`` and ``No`` are a long vector ``v``
      (orthogonal to ``u``), which dominates the residual stream at the
      position after the answer, and the end-of-sequence token scores along
      ``v``, so the reply ends right after its first word.

    Which prompts get Yes is arbitrary (random weights); what matters is
    that the replies are readable, vary, and come out the same in any tool
    that decodes greedily.
    """
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token=LLAMA_SPECIALS[0]))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"\s+|\w+|[^\w\s]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    trainer = trainers.WordLevelTrainer(special_tokens=LLAMA_SPECIALS, min_frequency=1)
    tok.train_from_iterator([" ".join(WORDS), "Yes No", *prompts], trainer=trainer)
    tokenizer = llama_tokenizer(tok)
    model = random_llama(tokenizer, max_positions=512)
    yes, no = tokenizer.convert_tokens_to_ids(["Yes", "No"])
    eos = tokenizer.eos_token_id
    with torch.no_grad():
        gen = torch.Generator().manual_seed(1)
        v = torch.randn(model.config.hidden_size, generator=gen)
        v = v / v.norm()
        embed = model.model.embed_tokens.weight
        embed[yes] = embed[no] = 1000.0 * v
        last = []
        for prompt in prompts:
            ids = tokenizer(prompt, return_tensors="pt").input_ids
            last.append(model.model(ids).last_hidden_state[0, -1])
        states = torch.stack(last)
        mean = states.mean(dim=0)
        u = torch.linalg.svd(states - mean, full_matrices=False).Vh[0]
        for away in (v, mean / mean.norm()):  # u . h centred on zero, and 0 after the answer
            u = u - (u @ away) * away
        u = u / u.norm()
        head = model.lm_head.weight
        others = torch.ones(head.shape[0], dtype=torch.bool)
        others[[yes, no, eos]] = False
        rival = (states @ head[others].T).max(dim=1).values  # the best other token
        margin = (states @ u).abs()
        scale = float((rival / margin).quantile(0.99)) * 2.0
        head[yes], head[no] = scale * u, -scale * u
        head[eos] = 10.0 * v
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_nli(folder: Path, texts: Sequence[str]) -> None:
    """Write the tiny DeBERTa-v2 NLI classifier and its tokenizer to ``folder``."""
    import torch
    from tokenizers import processors
    from transformers import (
        DebertaV2Config,
        DebertaV2ForSequenceClassification,
        PreTrainedTokenizerFast,
    )

    tok = _word_level(_sentences(400, seed=1) + [" ".join(WORDS), *texts], NLI_SPECIALS)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=128,
        clean_up_tokenization_spaces=False,
    )
    config = DebertaV2Config(  # type: ignore[call-arg]  # num_labels etc. go to PretrainedConfig
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        type_vocab_size=2,
        position_biased_input=True,
        relative_attention=False,
        initializer_range=0.5,
        pad_token_id=tokenizer.pad_token_id,
        num_labels=3,
        id2label=dict(NLI_LABELS),
        label2id={v: k for k, v in NLI_LABELS.items()},
    )
    torch.manual_seed(0)
    model = DebertaV2ForSequenceClassification(config).eval()
    # Calibrate: entailment wins for half of random pairs of answer-like word strings.
    rng = np.random.default_rng(2)
    words = sorted(w for w in tokenizer.get_vocab() if w not in NLI_SPECIALS)
    probe = [" ".join(rng.choice(words, size=int(rng.integers(4, 33)))) for _ in range(40)]
    pairs = [(a, b) for a in probe for b in probe]
    with torch.no_grad():
        model.classifier.bias.zero_()
        logits = model(**tokenizer(pairs, padding=True, return_tensors="pt")).logits
        margin = logits[:, 2] - logits[:, :2].max(dim=-1).values
        model.classifier.bias[2] = -margin.median()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_models(root: Path, texts: Sequence[str]) -> tuple[Path, Path]:
    """Return ``(llama_dir, nli_dir)`` under ``root``, building them unless already there.

    The folders are named after a hash of ``texts`` and this builder's version,
    so a different question set never reuses models with another vocabulary.
    """
    digest = hashlib.sha256(json.dumps([_VERSION, *texts]).encode("utf-8")).hexdigest()[:12]
    base = Path(root) / f"tiny-{digest}"
    llama, nli = base / "llama", base / "nli"
    done = base / "done"
    if not done.exists():
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        base.mkdir(parents=True, exist_ok=True)
        build_llama(llama, texts)
        build_nli(nli, texts)
        done.write_text("ok\n", encoding="utf-8")
    return llama, nli
