"""A tiny Llama (random weights, built from a config) replies to two real FaithDial turns.

Paper 001 generates FaithDial replies with many models before measuring its
metrics; here the ``hf`` backend answers the first two turns that have a
message, zero-shot and few-shot (demonstrations: other turns answered by
replies FaithDial's annotators judged faithful), as chat and as completion.
"""

from __future__ import annotations

import pytest

from realitycheck.datasets import datasets
from realitycheck.generation import make_plan
from realitycheck.pipeline import generate, load_inputs
from realitycheck.records import Response
from realitycheck.store import RunStore

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def long_lm_dir(tmp_path_factory):
    """The fixture's tiny Llama, with room for FaithDial's knowledge (long word-level prompts)."""
    from tests.whitebox.conftest import HIDDEN, build_tokenizer, random_llama

    tokenizer = build_tokenizer()
    # LlamaConfig's default initializer range (0.02), not the fixture's 0.2
    model = random_llama(
        tokenizer, hidden_size=HIDDEN, layers=2, max_positions=4096, initializer_range=0.02
    )
    folder = tmp_path_factory.mktemp("tiny-llama-long")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("fmt", ["chat", "completion"])
def test_a_tiny_model_replies_to_two_faithdial_turns(tmp_path, monkeypatch, long_lm_dir, fmt):
    from realitycheck.backends.hf import HFBackend

    monkeypatch.setenv("REALITYCHECK_CACHE_DIR", str(tmp_path / "cache"))
    store = RunStore(tmp_path / "run")
    pool = load_inputs(store, datasets.create("faithdial"))
    turns = [e for e in pool if e.question.strip()][:2]
    backend = HFBackend(model=str(long_lm_dir), device="cpu", batch_size=2)
    plan = make_plan(
        "greedy", variants=["zero_shot", "few_shot"], few_shot_k=1, max_tokens=6, format=fmt
    )
    report = generate(store, turns, backend, plan, demos=pool)
    assert report.computed == 4 and report.failed == 0, report.errors
    responses = store.read(Response)
    assert {r.example_id for r in responses} == {e.example_id for e in turns}
    for response in responses:
        assert response.model == str(long_lm_dir) and response.decoding == "greedy"
        assert isinstance(response.text, str)
        assert 1 <= len(response.features["best"]["tokens"]) <= 6
        if response.prompt_variant == "few_shot":
            (demo,) = response.meta["demos"]
            assert demo != response.example_id and demo in {e.example_id for e in pool}
        else:
            assert "demos" not in response.meta
    again = generate(store, turns, backend, plan, demos=pool)
    assert again.computed == 0 and again.reused == 4
