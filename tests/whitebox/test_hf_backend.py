"""The hf backend on a tiny local Llama: decoding strategies and teacher-forced features."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from realitycheck.backends import GenerationRequest, backends
from realitycheck.backends.hf import HFBackend, generate_kwargs
from realitycheck.errors import InvalidInputError, MissingDependencyError

torch = pytest.importorskip("torch")

PROMPTS = ["the cat sat on", "who is the king of", "the capital of the country is"]


def _ref_forward(reference, prompt_ids, gen_ids, *, hidden=False):
    """Log-softmax over the generated positions (and hidden states) of one unpadded sequence."""
    model, _ = reference
    ids = torch.tensor([list(prompt_ids) + list(gen_ids)])
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=hidden)
    logp = torch.log_softmax(out.logits[0].double(), dim=-1).numpy()
    start = len(prompt_ids)
    rows = logp[start - 1 : start - 1 + len(gen_ids)]
    states = [h[0, start:].double().numpy() for h in out.hidden_states] if hidden else None
    return rows, states


def _gen_ids(reference, generation, k=0):
    _, tokenizer = reference
    return tokenizer.convert_tokens_to_ids(list(generation.tokens[k]))


def test_is_registered_with_white_box_capabilities(tiny_lm_dir):
    b = backends.create("hf", model=str(tiny_lm_dir))
    assert {"logprobs", "entropy", "hidden", "loglik", "beam", "n", "chat"} <= b.capabilities
    assert b.key.startswith("hf[") and "model=" in b.key


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"model": ""}, "'model' parameter of hf"),
        ({"model": "x", "dtype": "int8"}, "'dtype' parameter of hf"),
        ({"model": "x", "batch_size": 0}, "'batch_size' parameter of hf"),
    ],
)
def test_rejects_bad_parameters(params, match):
    with pytest.raises(InvalidInputError, match=match):
        HFBackend(**params)


def test_missing_torch_names_the_extra(monkeypatch, tiny_lm_dir):
    monkeypatch.setitem(sys.modules, "torch", None)
    backend = HFBackend(model=str(tiny_lm_dir), device="cpu")
    with pytest.raises(MissingDependencyError, match=r"realitycheck\[hf\]"):
        backend.generate([GenerationRequest(prompt="the cat")])


@pytest.mark.parametrize(
    ("message", "frees"),
    [("CUDA out of memory. Tried to allocate 2 GiB", True), ("bad shape", False)],
)
def test_a_failed_batch_becomes_error_generations_and_frees_cuda_after_oom(
    monkeypatch, tiny_lm_dir, message, frees
):
    freed = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: freed.append(True))

    def fail(self, requests):
        raise RuntimeError(message)

    monkeypatch.setattr(HFBackend, "_generate_chunk", fail)
    backend = HFBackend(model=str(tiny_lm_dir), device="cpu", batch_size=2)
    got = backend.generate([GenerationRequest(prompt=p) for p in PROMPTS])
    assert [g.error for g in got] == [f"RuntimeError: {message}"] * len(PROMPTS)
    assert freed == [True, True] * frees  # once per failed batch (2 of 2 prompts at most)


def test_unloadable_model_is_an_input_error(tmp_path):
    with pytest.raises(InvalidInputError, match="Cannot load the model"):
        HFBackend(model=str(tmp_path / "nowhere"), device="cpu").generate(
            [GenerationRequest(prompt="x")]
        )


def test_greedy_is_deterministic_and_batching_does_not_change_it(hf):
    batch = [GenerationRequest(prompt=p, max_tokens=8) for p in PROMPTS]
    together = hf.generate(batch)
    alone = [hf.generate([r])[0] for r in batch]
    assert [g.texts for g in together] == [g.texts for g in alone]
    assert [g.texts for g in hf.generate(batch)] == [g.texts for g in together]
    (three,) = hf.generate([GenerationRequest(prompt=PROMPTS[0], n=3, max_tokens=8)])
    assert three.texts == together[0].texts * 3


def test_sampling_gives_n_samples_reproducible_by_seed(hf):
    def ask(seed):
        request = GenerationRequest(
            prompt=PROMPTS[1], n=5, decoding="sampling", temperature=1.0, max_tokens=8, seed=seed
        )
        return hf.generate([request])[0].texts

    first = ask(1)
    assert len(first) == 5 and len(set(first)) > 1
    assert ask(1) == first
    assert ask(2) != first


def test_top_k_one_and_tiny_top_p_equal_greedy(hf):
    greedy = hf.generate([GenerationRequest(prompt=p, max_tokens=8) for p in PROMPTS])
    top1 = hf.generate(
        [
            GenerationRequest(prompt=p, decoding="top_k", top_k=1, temperature=1.0, max_tokens=8)
            for p in PROMPTS
        ]
    )
    nucleus = hf.generate(
        [
            GenerationRequest(prompt=p, decoding="top_p", top_p=1e-6, temperature=1.0, max_tokens=8)
            for p in PROMPTS
        ]
    )
    assert [g.texts for g in top1] == [g.texts for g in greedy]
    assert [g.texts for g in nucleus] == [g.texts for g in greedy]


def test_top_k_sampling_stays_in_the_top_k(hf):
    request = GenerationRequest(
        prompt=PROMPTS[2],
        n=6,
        decoding="top_k",
        top_k=3,
        temperature=1.0,
        max_tokens=8,
        seed=0,
        logprobs=True,
        top_logprobs=3,
    )
    (g,) = hf.generate([request])
    for tokens, alternatives in zip(g.tokens, g.top_logprobs, strict=True):
        for token, top in zip(tokens, alternatives, strict=True):
            assert token in top


def test_beam_search_scores_at_least_as_well_as_greedy(hf):
    for prompt in PROMPTS:
        (greedy,) = hf.generate([GenerationRequest(prompt=prompt, max_tokens=6, logprobs=True)])
        (beam,) = hf.generate(
            [
                GenerationRequest(
                    prompt=prompt, decoding="beam", num_beams=4, n=2, max_tokens=6, logprobs=True
                )
            ]
        )
        assert len(beam.texts) == 2 and beam.texts[0] != beam.texts[1]
        if len(beam.token_logprobs[0]) == len(greedy.token_logprobs[0]):
            assert sum(beam.token_logprobs[0]) >= sum(greedy.token_logprobs[0]) - 1e-4


def test_decoding_flags_override_model_defaults():
    beam = generate_kwargs(GenerationRequest(prompt="x", decoding="beam", num_beams=3, n=5))
    assert beam["num_beams"] == 5 and beam["num_return_sequences"] == 5 and not beam["do_sample"]
    top_k = generate_kwargs(GenerationRequest(prompt="x", decoding="top_k", temperature=0.7))
    assert (top_k["top_k"], top_k["top_p"], top_k["temperature"]) == (40, 1.0, 0.7)
    top_p = generate_kwargs(GenerationRequest(prompt="x", decoding="top_p", temperature=1.0))
    assert (top_p["top_k"], top_p["top_p"]) == (0, 0.95)
    cold = generate_kwargs(GenerationRequest(prompt="x", decoding="sampling", temperature=0.0))
    assert cold["do_sample"] is False


@pytest.mark.parametrize("decoding", ["greedy", "sampling"])
def test_token_logprobs_entropies_and_top_k_match_an_independent_forward_pass(
    hf, reference, decoding
):
    _, tokenizer = reference
    requests = [
        GenerationRequest(
            prompt=p,
            n=2,
            decoding=decoding,
            temperature=1.0,
            max_tokens=7,
            seed=3,
            logprobs=True,
            top_logprobs=4,
        )
        for p in PROMPTS
    ]
    for prompt, g in zip(PROMPTS, hf.generate(requests), strict=True):
        for k in range(2):
            gen = _gen_ids(reference, g, k)
            rows, _ = _ref_forward(reference, tokenizer(prompt)["input_ids"], gen)
            expected = rows[np.arange(len(gen)), gen]
            np.testing.assert_allclose(g.token_logprobs[k], expected, atol=1e-4)
            entropy = -(np.exp(rows) * rows).sum(axis=1)
            np.testing.assert_allclose(g.token_entropies[k], entropy, atol=1e-4)
            for row, top in zip(rows, g.top_logprobs[k], strict=True):
                best = np.sort(row)[::-1][:4]
                np.testing.assert_allclose(sorted(top.values(), reverse=True), best, atol=1e-4)


def test_hidden_features_match_an_independent_output_hidden_states_call(hf, reference):
    _, tokenizer = reference
    layers = (0, 2, 4)
    (g,) = hf.generate([GenerationRequest(prompt=PROMPTS[0], max_tokens=8, hidden_layers=layers)])
    gen = _gen_ids(reference, g)
    _, states = _ref_forward(reference, tokenizer(PROMPTS[0])["input_ids"], gen, hidden=True)
    hidden = g.hidden[0]
    assert sorted(hidden) == sorted(f"{k}@L{n}" for k in ("last", "mean", "sv") for n in layers)
    for layer in layers:
        h = states[layer]
        assert len(hidden[f"mean@L{layer}"]) == h.shape[1] == 32
        np.testing.assert_allclose(hidden[f"last@L{layer}"], h[-1], atol=1e-4)
        np.testing.assert_allclose(hidden[f"mean@L{layer}"], h.mean(axis=0), atol=1e-4)
        centred = h - h.mean(axis=1, keepdims=True)
        sv = np.linalg.svd(centred, compute_uv=False)
        assert len(hidden[f"sv@L{layer}"]) == min(h.shape)
        np.testing.assert_allclose(hidden[f"sv@L{layer}"], sv, atol=1e-3, rtol=1e-4)


def test_features_are_returned_only_when_asked(hf):
    (g,) = hf.generate([GenerationRequest(prompt=PROMPTS[0], max_tokens=4)])
    assert g.texts and g.tokens and not g.token_logprobs and not g.hidden and not g.top_logprobs


def test_out_of_range_layer_fails_only_that_request(hf):
    good, bad = hf.generate(
        [
            GenerationRequest(prompt=PROMPTS[0], max_tokens=4),
            GenerationRequest(prompt=PROMPTS[1], max_tokens=4, hidden_layers=(5,)),
        ]
    )
    assert good.texts and not good.error
    assert not bad.texts and "out of range 0..4" in bad.error


def test_loglik_is_the_sum_of_the_continuation_token_logprobs(hf, reference):
    _, tokenizer = reference
    pairs = [("the cat", " sat on the mat"), ("who is the king of", " rome"), ("paris", "")]
    got = hf.loglik(pairs)
    for (prompt, continuation), value in zip(pairs, got, strict=True):
        ctx = tokenizer(prompt)["input_ids"]
        cont = tokenizer(prompt + continuation)["input_ids"][len(ctx) :]
        rows, _ = _ref_forward(reference, ctx, cont)
        assert value == pytest.approx(float(rows[np.arange(len(cont)), cont].sum()), abs=1e-4)
    assert got[2] == 0.0


def test_loglik_agrees_with_generated_token_logprobs(hf):
    (g,) = hf.generate([GenerationRequest(prompt=PROMPTS[1], max_tokens=6, logprobs=True)])
    (value,) = hf.loglik([(PROMPTS[1], " " + " ".join(g.tokens[0]))])
    assert value == pytest.approx(sum(g.token_logprobs[0]), abs=1e-4)


def test_chat_uses_the_template_and_matches_the_same_completion(hf, reference):
    _, tokenizer = reference
    messages = ({"role": "user", "content": "what is the capital of the country"},)
    (chat,) = hf.generate([GenerationRequest(messages=messages, max_tokens=6)])
    rendered = tokenizer.apply_chat_template(
        [dict(m) for m in messages], add_generation_prompt=True, tokenize=False
    )
    assert rendered.startswith("<s>user says")
    (plain,) = hf.generate([GenerationRequest(prompt=rendered[len("<s>") :], max_tokens=6)])
    assert chat.texts == plain.texts
    plain_chat = HFBackend(model=hf.model, device="cpu", chat_template=False)
    request = GenerationRequest(messages=messages, max_tokens=6)
    assert (
        plain_chat.prompt_ids(request)
        == tokenizer("user: what is the capital of the country\nassistant:")["input_ids"]
    )


def test_stop_strings_cut_text_and_tokens(hf):
    (free,) = hf.generate([GenerationRequest(prompt=PROMPTS[1], max_tokens=8, logprobs=True)])
    words = free.texts[0].split()
    assert len(words) >= 4
    stop = " " + words[2]
    (cut,) = hf.generate(
        [GenerationRequest(prompt=PROMPTS[1], max_tokens=8, logprobs=True, stop=(stop,))]
    )
    assert cut.texts[0] == " ".join(words[:2]) and cut.finish_reasons == ("stop",)
    assert cut.token_logprobs[0] == pytest.approx(free.token_logprobs[0][:2])


def test_empty_outputs_get_empty_features(reference):
    from realitycheck.backends.hf._forward import forward_features

    model, tokenizer = reference
    prompts = [tokenizer("the cat")["input_ids"], tokenizer("who is")["input_ids"]]
    for outputs in ([[], []], [[], tokenizer.convert_tokens_to_ids(["sat", "on"])]):
        feats = forward_features(model, tokenizer, prompts, outputs, pad_id=1, top_k=2, layers=(1,))
        assert feats[0].token_logprobs == [] and feats[0].hidden["sv@L1"] == []
        assert len(feats[1].token_logprobs) == len(outputs[1])
