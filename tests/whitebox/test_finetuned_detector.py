"""The finetuned detector on the tiny Llama: saved weights reload to the same scores and hash."""

from __future__ import annotations

import json

import numpy as np
import pytest

from realitycheck.analysis import CALIBRATION, split_of
from realitycheck.detectors import detectors, source_text, weights_sha256
from realitycheck.errors import InvalidInputError
from realitycheck.pipeline import detect
from realitycheck.records import Example, Label, Response, Score
from realitycheck.store import RunStore

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

WORDS = "the cat dog sat ran on in city river red blue one two".split()


def _store(path, n=12):
    """One dataset of ``n`` examples x 2 responses with human labels (alternating)."""
    rng = np.random.default_rng(0)
    store = RunStore(path)
    examples, responses, labels = [], [], []
    for i in range(n):
        eid = f"d/{i}"
        context = " ".join(rng.choice(WORDS, size=6))
        examples.append(
            Example(example_id=eid, dataset="d", task="summary", question="", context=context)
        )
        for k in range(2):
            rid = f"{eid}/{k}"
            text = " ".join(rng.choice(WORDS, size=4))
            responses.append(Response(response_id=rid, example_id=eid, model="m", text=text))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=bool((i + k) % 2)))
    for records in (examples, responses, labels):
        store.append(records)
    return store


def _test_pairs(store):
    examples = {e.example_id: e for e in store.read(Example)}
    responses = store.read(Response)
    side = split_of([r.example_id for r in responses])
    test = [r for r, s in zip(responses, side, strict=True) if s != CALIBRATION]
    return test, [(source_text(examples[r.example_id]), r.text) for r in test]


def _scores(store, key):
    return {s.response_id: s for s in store.read(Score) if s.detector == key}


def _forward(model, tokenizer, pairs):
    """P(label 1) by a plain forward pass of a reloaded model, one pair at a time."""
    out = []
    with torch.no_grad():
        for source, text in pairs:
            batch = tokenizer(source, text, truncation=True, max_length=64, return_tensors="pt")
            out.append(torch.softmax(model(**batch).logits, dim=-1)[0, 1].item())
    return np.array(out)


@pytest.mark.slow
def test_full_finetune_saves_weights_that_reload_to_the_same_scores(tmp_path, tiny_lm_dir):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    key = f'finetuned[model="{tiny_lm_dir}",epochs=1,max_length=64,min_train=8,device=cpu]'
    hashes = []
    for run in ("one", "two"):
        store = _store(tmp_path / run)
        det = detectors.create_from_key(key)
        detect(store, [det])
        test, pairs = _test_pairs(store)
        got = _scores(store, det.key)
        trained = json.loads(got[test[0].response_id].spec)["trained"]
        folder = store.path / trained["weights"]
        model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        expected = _forward(model, tokenizer, pairs)
        np.testing.assert_allclose(
            [got[r.response_id].value for r in test], expected, rtol=1e-4, atol=1e-6
        )
        state = {k: v.float().numpy() for k, v in model.state_dict().items()}
        assert weights_sha256(state) == trained["sha256"]
        hashes.append(trained["sha256"])
    assert hashes[0] == hashes[1]
    base = AutoModelForSequenceClassification.from_pretrained(tiny_lm_dir)
    untrained = {k: v.float().numpy() for k, v in base.state_dict().items()}
    assert weights_sha256(untrained) != hashes[0]


@pytest.mark.slow
def test_lora_trains_only_adapters_and_head_and_they_reload_with_peft(tmp_path, tiny_lm_dir):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    store = _store(tmp_path)
    det = detectors.create_from_key(
        f'finetuned[model="{tiny_lm_dir}",epochs=2,lora_rank=4,learning_rate=0.01,'
        "max_length=64,min_train=8,device=cpu]"
    )
    detect(store, [det])
    test, pairs = _test_pairs(store)
    got = _scores(store, det.key)
    trained = json.loads(got[test[0].response_id].spec)["trained"]
    folder = store.path / trained["weights"]
    assert (folder / "adapter_model.safetensors").exists()
    assert not (folder / "model.safetensors").exists()
    base = AutoModelForSequenceClassification.from_pretrained(tiny_lm_dir, num_labels=2)
    base.config.pad_token_id = AutoTokenizer.from_pretrained(folder).pad_token_id
    model = peft.PeftModel.from_pretrained(base, folder).eval()
    expected = _forward(model, AutoTokenizer.from_pretrained(folder), pairs)
    np.testing.assert_allclose(
        [got[r.response_id].value for r in test], expected, rtol=1e-4, atol=1e-6
    )
    state = {k: v.float().numpy() for k, v in peft.get_peft_model_state_dict(model).items()}
    assert weights_sha256(state) == trained["sha256"]
    assert any("lora_A" in k for k in state) and any("score" in k for k in state)


def test_an_unloadable_model_names_itself(tmp_path):
    store = _store(tmp_path)
    det = detectors.create_from_key(
        f'finetuned[model="{tmp_path / "nothing"}",min_train=8,device=cpu]'
    )
    with pytest.raises(InvalidInputError, match="finetuned cannot load the model"):
        detect(store, [det])
