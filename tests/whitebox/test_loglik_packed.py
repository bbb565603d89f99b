"""Packed MCQ rows on the tiny Llama: many questions of mixed sizes against direct passes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.whitebox.conftest import direct_logprobs, mcq_pairs  # noqa: E402


def _questions(seed: int) -> list[tuple[str, str]]:
    """Seeded MCQ pairs: contexts of 1-10 words, 1-7 options of 1-6 words, a duplicate, an empty."""
    pairs = mcq_pairs(seed, contexts=14, context_words=10, options=7, option_words=6)
    return pairs + [pairs[3], (pairs[0][0], "")]


PAIRS = _questions(0)


@pytest.fixture(scope="module")
def expected(reference) -> list[list[float]]:
    """Each pair's token log-probs from one unpadded float64 log-softmax of a plain pass."""
    model, tokenizer = reference
    return direct_logprobs(model, tokenizer, PAIRS)


def _check(got, expected) -> None:
    assert [len(v) for v in got] == [len(v) for v in expected]
    for values, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(values, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("batch_size", [1, 5, 64])
def test_mixed_questions_equal_direct_passes(tiny_lm_dir, expected, attn, batch_size):
    from realitycheck.backends.hf import HFBackend

    backend = HFBackend(
        model=str(tiny_lm_dir), device="cpu", batch_size=batch_size, attn_implementation=attn
    )
    _check(backend.loglik_tokens(PAIRS), expected)


def test_the_head_runs_on_predicting_rows_only(tiny_lm_dir, expected):
    """The LM head sees one row per option token: no context or padding position."""
    from realitycheck.backends.hf import HFBackend

    backend = HFBackend(
        model=str(tiny_lm_dir), device="cpu", batch_size=8, attn_implementation="sdpa"
    )
    model = backend._loaded()[0]
    rows: list[int] = []
    handle = model.get_output_embeddings().register_forward_hook(
        lambda _m, args, _out: rows.append(args[0].shape[0] * args[0].shape[1])
    )
    try:
        got = backend.loglik_tokens(PAIRS)
    finally:
        handle.remove()
    _check(got, expected)
    assert sum(rows) == sum(len(v) for v in expected)  # the duplicate pair is scored twice


def test_a_model_without_output_embeddings_takes_the_kept_logits(
    tiny_lm_dir, expected, monkeypatch
):
    from realitycheck.backends.hf import HFBackend
    from realitycheck.backends.hf import _packed as _hf_packed

    backend = HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=8)
    model = backend._loaded()[0]
    monkeypatch.setattr(model, "get_output_embeddings", lambda: None)
    calls: list[int] = []
    original = _hf_packed._predictor_logits

    def counting(model, packed):
        calls.append(1)
        return original(model, packed)

    monkeypatch.setattr(_hf_packed, "_predictor_logits", counting)
    _check(backend.loglik_tokens(PAIRS), expected)
    assert calls  # the packed path ran, without a head to hook


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("batch_size", [1, 7, 32])
def test_first_fit_places_every_group_once_within_the_batch_size(seed, batch_size):
    from realitycheck.backends.hf._prefix import _first_fit

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, size=200).tolist()
    chunks = _first_fit(sizes, batch_size)
    assert sorted(g for c in chunks for g in c) == list(range(len(sizes)))
    for chunk in chunks:
        assert chunk == sorted(chunk)
        assert len(chunk) == 1 or sum(sizes[g] for g in chunk) <= batch_size
    # Never more passes than filling the chunks one after another (next fit).
    next_fit, room = 0, 0
    for size in sizes:
        if size > room:
            next_fit, room = next_fit + 1, batch_size
        room -= size
    assert len(chunks) <= next_fit
