"""WordPiece counts summed over space-separated chunks equal whole-text counts."""

from __future__ import annotations

import json

import pytest

from realitycheck.detectors import length
from realitycheck.detectors.length import _splits_at_spaces, wordpiece_counts
from realitycheck.studies.repetition import repeat_sentences

tokenizers = pytest.importorskip("tokenizers")

ODD = [
    "",
    " ",
    "   two  spaces   between ",
    "\ttabs\tand\nnew\r\nlines\n",
    "ΣΑΣ aΣ Σ. ὈΔΥΣΣΕΎΣ",  # final sigma depends on the neighbours
    "e\u0301 \u0301e a \u0301 \u0301",  # combining marks after and before spaces
    "Ｆｕｌｌｗｉｄｔｈ and 北京大学 mixed日本語text",
    "zero\u200bwidth no\u00a0break\u2003em space\x1cfile sep",
    "control\x00chars\x07here \ufffd replacement",
    "[CLS] [SEP] [MASK]x y[PAD] [ UNK ] [unk]",
    "a" * 150 + " " + "b" * 99 + " " + "c" * 101,
    "emoji 👍🏽 and 🇫🇷 flags, punctuation!!! (brackets) co-op's 3.14 1,000",
    "İstanbul ǅ ß ﬁ Ǆ",
]


def _whole(texts: list[str]) -> list[int]:
    """Counts of each text tokenised whole, one at a time, with its own tokenizer instance."""
    from realitycheck.encoders.embeddings import model_path

    tokenizer = tokenizers.Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return [len(tokenizer.encode(t, add_special_tokens=False).ids) for t in texts]


def _ragtruth_texts(data_dir, n: int) -> list[str]:
    texts = []
    with open(data_dir / "ragtruth" / "qa.jsonl", encoding="utf-8") as lines:
        for line in lines:
            texts += [r["response"] for r in json.loads(line)["responses"]]
            if len(texts) >= n:
                return texts[:n]
    return texts


def test_counts_equal_whole_texts_on_real_responses_and_their_repeats(data_dir):
    texts = _ragtruth_texts(data_dir, 300)
    repeated = [repeat_sentences(t, k) for k in (0, 1, 4) for t in texts]
    expected = _whole(repeated)
    assert wordpiece_counts(repeated) == expected
    assert min(expected) < 60 < max(expected)  # real responses of many lengths


def test_counts_equal_whole_texts_on_odd_text():
    assert wordpiece_counts(ODD) == _whole(ODD)
    assert wordpiece_counts([]) == []
    assert wordpiece_counts(ODD[:1]) == [0]


def test_without_the_space_property_each_text_is_tokenised_whole(monkeypatch):
    monkeypatch.setattr(length, "_additive", lambda: False)
    assert wordpiece_counts(ODD) == _whole(ODD)


def test_a_tokenizer_whose_tokens_may_span_spaces_is_not_summed_by_chunk():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    assert _splits_at_spaces(length._wordpiece_tokenizer())
    bpe = Tokenizer(models.BPE(unk_token="[UNK]"))
    bpe.normalizer = normalizers.BertNormalizer()
    bpe.pre_tokenizer = pre_tokenizers.Metaspace()  # words keep their leading space
    assert not _splits_at_spaces(bpe)
    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer()
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    assert _splits_at_spaces(wordpiece)
    wordpiece.add_special_tokens(["new token"])  # an added token that holds a space
    assert not _splits_at_spaces(wordpiece)
