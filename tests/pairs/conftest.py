"""Tiny sequence-pair classifiers built from a config, saved and reloaded; nothing is downloaded.

Both are 1-layer BERTs with random weights (fixed torch seed) and a
word-level tokenizer trained here with the ``tokenizers`` library, whose pair
template writes ``[CLS] premise [SEP] hypothesis [SEP]`` with token type 1
on the hypothesis. ``tiny_nli_dir`` has three labels named in its config
(``CONTRADICTION``, ``NEUTRAL``, ``ENTAILMENT``, the order of many MNLI
checkpoints); ``tiny_consistency_dir`` has one output, as an HHEM-style
cross-encoder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

WORDS = (
    "the a an is was were of in on at to and or not it its by from with for as that this "
    "tower eiffel paris france rome italy london city capital built completed metres tall "
    "company designed gustave river bridge king queen year years one two three 1889 330 "
    "answer question response source document summary"
).split()
SPECIALS = ["[UNK]", "[PAD]", "[CLS]", "[SEP]"]
NLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
# Of different lengths, so that batches of two are padded.
PAIRS = [
    ("the eiffel tower is in paris", "the tower is in paris"),
    ("rome is the capital of italy", "paris is the capital of france"),
    ("one", "the tower was completed in 1889 and is 330 metres tall"),
    ("the tower was built by the company of gustave", "gustave designed it"),
    ("london", "london"),
]


def build_tokenizer():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(WORDS)], trainers.WordLevelTrainer(special_tokens=SPECIALS))
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
    )


def build_classifier(
    tokenizer, id2label: dict[int, str], seed: int, *, arch: str = "bert", init: float = 1.0
):
    """A 1-layer classifier with random weights: ``arch`` ``bert`` or ``deberta`` (DeBERTa-v2)."""
    import transformers

    config_class, model_class = {
        "bert": (transformers.BertConfig, transformers.BertForSequenceClassification),
        "deberta": (
            transformers.DebertaV2Config,
            transformers.DebertaV2ForSequenceClassification,
        ),
    }[arch]
    config = config_class(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={name: i for i, name in id2label.items()},
        initializer_range=init,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    return model_class(config).eval()


def _save(folder: Path, id2label: dict[int, str], seed: int, **arch) -> Path:
    tokenizer = build_tokenizer()
    build_classifier(tokenizer, id2label, seed, **arch).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_nli_dir(tmp_path_factory) -> Path:
    """A 3-label NLI classifier (CONTRADICTION, NEUTRAL, ENTAILMENT) and its tokenizer."""
    return _save(tmp_path_factory.mktemp("tiny-nli"), NLI_LABELS, seed=0)


@pytest.fixture(scope="session")
def tiny_consistency_dir(tmp_path_factory) -> Path:
    """A single-logit (HHEM-style) consistency cross-encoder and its tokenizer."""
    return _save(tmp_path_factory.mktemp("tiny-consistency"), {0: "LABEL_0"}, seed=1)


@pytest.fixture(scope="session")
def tiny_deberta_dir(tmp_path_factory) -> Path:
    """A 3-label DeBERTa-v2 classifier (an architecture without SDPA) and its tokenizer."""
    folder = tmp_path_factory.mktemp("tiny-deberta")
    return _save(folder, NLI_LABELS, seed=2, arch="deberta", init=0.3)


@pytest.fixture
def relabelled(tmp_path, tiny_nli_dir):
    """Return a copy of the tiny NLI model whose config names its labels ``names``."""

    def copy(names: list[str]) -> Path:
        folder = tmp_path / f"relabelled-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(tiny_nli_dir, folder)
        config = json.loads((folder / "config.json").read_text())
        config["id2label"] = {str(i): n for i, n in enumerate(names)}
        config["label2id"] = {n: i for i, n in enumerate(names)}
        (folder / "config.json").write_text(json.dumps(config))
        return folder

    return copy


@pytest.fixture(scope="session")
def reference_classifier():
    """Load a saved classifier with plain transformers, independently of the backend."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    def load(folder: Path):
        model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
        return model, AutoTokenizer.from_pretrained(folder)

    return load


@pytest.fixture
def pairs_scored(monkeypatch) -> list[int]:
    """Count the pairs the ``hf`` backend's classifier is sent from now on, call by call."""
    from realitycheck.backends.hf import HFBackend

    counts: list[int] = []
    original = HFBackend.score_pairs

    def score_pairs(self, pairs, *, labels=()):
        counts.append(len(pairs))
        return original(self, pairs, labels=labels)

    monkeypatch.setattr(HFBackend, "score_pairs", score_pairs)
    return counts
