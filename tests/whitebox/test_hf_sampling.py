"""Batched seeded sampling on the hf backend: samples per prompt, whatever the batch."""

from __future__ import annotations

import numpy as np
import pytest

from realitycheck.backends import GenerationRequest
from realitycheck.backends.hf import HFBackend
from realitycheck.backends.hf._sampling import row_seed

torch = pytest.importorskip("torch")

# Different lengths, so each batch pads each prompt differently.
PROMPTS = [
    "the cat sat on",
    "who is the king of",
    "the capital of the country is",
    "a dog",
    "where does the old doctor live and what is the name of the river near the city",
    "one two three",
    "the sun and the moon are",
    "what is",
]


def _requests(**kw):
    settings = {"n": 3, "decoding": "sampling", "temperature": 1.0, "max_tokens": 10} | kw
    return [
        GenerationRequest(prompt=p, seed=100 + 7 * i, logprobs=True, **settings)
        for i, p in enumerate(PROMPTS)
    ]


@pytest.fixture(scope="module")
def by_batch(tiny_lm_dir):
    """The same seeded requests answered with batch sizes 1, 3 and 8."""
    requests = _requests()
    return {
        size: HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=size).generate(requests)
        for size in (1, 3, 8)
    }


def test_samples_and_logprobs_do_not_depend_on_the_batch_size(by_batch):
    one = by_batch[1]
    assert all(not g.error and len(g.texts) == 3 for g in one)
    assert len({t for g in one for t in g.texts}) > 10  # real draws, not one answer
    for size in (3, 8):
        other = by_batch[size]
        assert [g.texts for g in other] == [g.texts for g in one]
        assert [g.tokens for g in other] == [g.tokens for g in one]
        for a, b in zip(one, other, strict=True):
            for x, y in zip(a.token_logprobs, b.token_logprobs, strict=True):
                np.testing.assert_allclose(x, y, atol=1e-6, rtol=1e-6)
            for x, y in zip(a.token_entropies, b.token_entropies, strict=True):
                np.testing.assert_allclose(x, y, atol=1e-6, rtol=1e-6)


def test_a_prompts_samples_do_not_depend_on_its_neighbours(tiny_lm_dir, by_batch):
    backend = HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=8)
    requests = _requests()
    shuffled = [requests[k] for k in (5, 2, 7, 0)]
    answers = backend.generate(shuffled)
    assert [g.texts for g in answers] == [by_batch[1][k].texts for k in (5, 2, 7, 0)]


def test_the_draws_match_a_direct_loop_over_the_model(reference, by_batch):
    """Each sample redrawn without cache or padding: full forward passes, one per token.

    The draw rule, computed here in numpy: step t of row (seed, j) takes the
    t-th of ``torch.rand(max_tokens, float64)`` from a generator seeded
    ``row_seed(seed, j)`` and returns the first token whose cumulative
    probability exceeds it (inverse transform sampling).
    """
    model, tokenizer = reference
    for k in (0, 4):
        prompt = list(tokenizer(PROMPTS[k])["input_ids"])
        for j in range(3):
            generator = torch.Generator().manual_seed(row_seed(100 + 7 * k, j))
            uniforms = torch.rand(10, dtype=torch.float64, generator=generator).numpy()
            ids = list(prompt)
            drawn = []
            for step in range(10):
                with torch.no_grad():
                    logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double().numpy()
                probs = np.exp(logits - logits.max())
                cdf = np.cumsum(probs / probs.sum())
                token = int(np.searchsorted(cdf, uniforms[step] * cdf[-1], side="right"))
                if token == tokenizer.eos_token_id:
                    break
                drawn.append(token)
                ids.append(token)
            got = by_batch[8][k]
            assert tokenizer.convert_tokens_to_ids(list(got.tokens[j])) == drawn


def test_draws_follow_the_model_distribution(tiny_lm_dir, reference):
    """Many seeded one-token draws: their frequencies match the softmax (chi-square test)."""
    from scipy.stats import chisquare

    model, tokenizer = reference
    backend = HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=8)
    prompt = PROMPTS[0]
    requests = [
        GenerationRequest(
            prompt=prompt, seed=s, n=50, decoding="sampling", temperature=1.0, max_tokens=1
        )
        for s in range(40)
    ]
    counts = np.zeros(len(tokenizer), dtype=float)
    for g in backend.generate(requests):
        for tokens in g.tokens:
            # an empty answer drew EOS
            token = tokenizer.convert_tokens_to_ids(tokens[0]) if tokens else tokenizer.eos_token_id
            counts[token] += 1
    with torch.no_grad():
        ids = torch.tensor([tokenizer(prompt)["input_ids"]])
        probs = torch.softmax(model(input_ids=ids).logits[0, -1].double(), -1).numpy()
    expected = probs * counts.sum()
    common = expected >= 5  # pool the rare tokens into one cell
    observed = np.append(counts[common], counts[~common].sum())
    pooled = np.append(expected[common], expected[~common].sum())
    assert counts.sum() == 2000
    assert chisquare(observed, pooled).pvalue > 1e-3


def test_seeded_top_k_one_and_tiny_top_p_equal_greedy_generate(tiny_lm_dir):
    backend = HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=8)
    greedy = backend.generate([GenerationRequest(prompt=p, max_tokens=10) for p in PROMPTS])
    top1 = backend.generate(_requests(decoding="top_k", top_k=1, n=1))
    nucleus = backend.generate(_requests(decoding="top_p", top_p=1e-6, n=1))
    assert [g.texts for g in top1] == [g.texts for g in greedy]
    assert [g.texts for g in nucleus] == [g.texts for g in greedy]


def test_top_k_and_top_p_keep_their_tokens_and_stop_strings_end_rows(tiny_lm_dir, reference):
    model, tokenizer = reference
    backend = HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=8)
    for kw in ({"decoding": "top_k", "top_k": 3}, {"decoding": "top_p", "top_p": 0.5}):
        answers = backend.generate(_requests(**kw))
        for k in (1, 4):
            for tokens in answers[k].tokens:
                ids = list(tokenizer(PROMPTS[k])["input_ids"])
                for token in tokenizer.convert_tokens_to_ids(list(tokens)):
                    with torch.no_grad():
                        logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double()
                    probs = torch.softmax(logits, -1)
                    order = torch.argsort(probs, descending=True).tolist()
                    rank = order.index(token)
                    if kw["decoding"] == "top_k":
                        assert rank < 3
                    else:  # the mass ranked above a kept token is below top_p
                        assert float(probs[order[:rank]].sum()) < 0.5 + 1e-6
                    ids.append(token)
    stopped = [
        backend.generate(_requests(stop=("the",), max_tokens=12))
        for backend in (backend, HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=3))
    ]
    assert [g.texts for g in stopped[0]] == [g.texts for g in stopped[1]]
    assert all("the" not in t for g in stopped[0] for t in g.texts)


def test_row_seeds_differ_across_samples_and_seeds():
    seeds = {row_seed(s, j) for s in range(50) for j in range(10)}
    assert len(seeds) == 500 and all(0 <= s < 2**63 for s in seeds)
    assert row_seed(-1, 0) == row_seed(2**64 - 1, 0)
