"""The paraphrase variant with a tiny random T5 (built from a config) as the paraphraser."""

from __future__ import annotations

import pytest

from realitycheck.backends import CallCache
from realitycheck.backends.hf_seq2seq import HFSeq2SeqBackend
from realitycheck.backends.mock import MockBackend
from realitycheck.generation import ChoicePlan, variants
from realitycheck.pipeline import choose
from realitycheck.records import Example, Response
from realitycheck.store import RunStore

torch = pytest.importorskip("torch")
QUESTIONS = [
    Example(
        example_id=f"toy/{i}",
        dataset="toy",
        task="mcq",
        question=q,
        choices=("paris", "rome"),
        references=("paris",),
        meta={"gold": [0]},
    )
    for i, q in enumerate(["the capital of the country is", "the king lives in the city of"])
]


@pytest.fixture(scope="module")
def tiny_t5_dir(tmp_path_factory):
    from tests.whitebox.conftest import build_tokenizer
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = build_tokenizer()
    config = T5Config(
        vocab_size=len(tokenizer),
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
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(config).eval()
    torch.nn.init.normal_(model.lm_head.weight, std=1.0)  # else it only ever says <pad>
    folder = tmp_path_factory.mktemp("tiny-t5")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _direct_greedy(folder, variant, question: str) -> str:
    """The paraphrase computed straight with transformers, independently of the backend."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    encoded = tokenizer(variant.request(question).prompt, return_tensors="pt")
    with torch.no_grad():
        ids = model.generate(**encoded, max_new_tokens=6, do_sample=False, num_beams=1)
    return tokenizer.decode(ids[0], skip_special_tokens=True).strip()


def test_a_seq2seq_model_paraphrases_cached_and_stored(tiny_t5_dir, tmp_path, monkeypatch):
    key = (
        f"paraphrase[backend=hf_seq2seq[model={tiny_t5_dir},device=cpu],temperature=0,max_tokens=6]"
    )
    variant = variants.create_from_key(key)
    assert isinstance(variant.backend, HFSeq2SeqBackend)
    calls: list[int] = []
    original = HFSeq2SeqBackend.generate

    def counting(self, requests):
        calls.append(len(requests))
        return original(self, requests)

    monkeypatch.setattr(HFSeq2SeqBackend, "generate", counting)
    cache = CallCache(tmp_path / "cache.sqlite")
    store = RunStore(tmp_path / "run")
    report = choose(store, QUESTIONS, MockBackend(), ChoicePlan(), [variant], cache=cache)
    expected = {e.example_id: _direct_greedy(tiny_t5_dir, variant, e.question) for e in QUESTIONS}
    assert all(expected.values())  # the random model does say something
    assert report.computed == 2 and not report.skipped and calls == [2]
    for r in store.read(Response):
        assert r.meta["paraphrase"] == expected[r.example_id]
        assert r.meta["prompt"].startswith(expected[r.example_id])
    again = RunStore(tmp_path / "again")
    assert (
        choose(again, QUESTIONS, MockBackend(), ChoicePlan(), [variant], cache=cache).computed == 2
    )
    assert calls == [2]  # the paraphrases came from the call cache
    stored = {r.example_id: r.meta["paraphrase"] for r in again.read(Response)}
    assert stored == expected
