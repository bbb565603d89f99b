"""EigenScore, LogDet and eRank against their papers' formulas, and on the tiny model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from realitycheck import Response, RunContext
from realitycheck.backends import GenerationRequest
from realitycheck.detectors import detectors
from realitycheck.errors import InvalidInputError

RUN = RunContext()


def _row_centred_sv(h):
    """What the hf backend stores as sv@L: singular values of H with rows centred."""
    return np.linalg.svd(h - h.mean(axis=1, keepdims=True), compute_uv=False)


def _best(rid, hidden):
    return Response(
        response_id=rid, example_id="e", model="m", text="a", features={"best": {"hidden": hidden}}
    )


def _with_samples(rid, embeddings, kind="last", layer=3):
    samples = [{"hidden": {f"{kind}@L{layer}": list(map(float, z))}} for z in embeddings]
    return Response(
        response_id=rid,
        example_id="e",
        model="m",
        text="a",
        samples=tuple(f"s{i}" for i in range(len(embeddings))),
        features={"samples": samples},
    )


def _eigenscore_paper(embeddings, alpha=1e-3):
    """INSIDE eq.: Z = [z_1..z_K] (d x K), Sigma = Z^T J_d Z, (1/K) log det(Sigma + alpha I)."""
    z = np.asarray(embeddings, dtype=np.float64).T
    d, k = z.shape
    j = np.eye(d) - np.ones((d, d)) / d
    sign, logdet = np.linalg.slogdet(z.T @ j @ z + alpha * np.eye(k))
    assert sign > 0
    return logdet / k


def _llm_check_hidden_score(h, alpha=1e-3):
    """LLM-Check: Z = H^T (d x T), J = I_d - 11^T/d, mean log eig of Z^T J Z + alpha I."""
    z = h.T
    d = z.shape[0]
    j = np.eye(d) - np.ones((d, d)) / d
    sigma = z.T @ j @ z + alpha * np.eye(z.shape[1])
    return float(np.mean(np.log(np.linalg.eigvalsh(sigma))))


def _erank_paper(h):
    """Janiak et al. F.1: eigenvalues of the covariance of the (centred) hidden states."""
    centred = h - h.mean(axis=1, keepdims=True)
    lam = np.linalg.eigvalsh(centred.T @ centred)
    lam = lam[lam > 1e-9 * lam.max()]
    p = lam / lam.sum()
    return math.exp(-np.sum(p * np.log(p)))


@pytest.mark.parametrize("pooling", ["last", "mean"])
def test_eigenscore_matches_the_paper_formula(pooling):
    rng = np.random.default_rng(0)
    responses, expected = [], []
    for i in range(8):
        emb = rng.normal(size=(int(rng.integers(2, 11)), 16)) * rng.uniform(0.01, 3)
        responses.append(_with_samples(f"r{i}", emb, kind=pooling))
        expected.append(_eigenscore_paper(emb))
    scores = detectors.create("eigenscore", pooling=pooling).score(responses, RUN)
    assert [s.value for s in scores] == pytest.approx(expected, rel=1e-6)


def test_eigenscore_is_higher_for_diverse_samples():
    rng = np.random.default_rng(1)
    centre = rng.normal(size=32)
    consistent = centre + 0.01 * rng.normal(size=(6, 32))
    diverse = rng.normal(size=(6, 32))
    low, high = detectors.create("eigenscore").score(
        [_with_samples("c", consistent), _with_samples("d", diverse)], RUN
    )
    assert low.value < high.value


def test_logdet_matches_llm_check_hidden_score_with_opposite_sign():
    rng = np.random.default_rng(2)
    responses, expected = [], []
    for i in range(8):
        h = rng.normal(size=(int(rng.integers(2, 12)), 24)) * rng.uniform(0.1, 2)
        responses.append(_best(f"r{i}", {"sv@L2": list(_row_centred_sv(h))}))
        expected.append(-_llm_check_hidden_score(h))
    scores = detectors.create("logdet").score(responses, RUN)
    assert [s.value for s in scores] == pytest.approx(expected, rel=1e-6)


def test_erank_matches_the_effective_rank_of_the_covariance_with_opposite_sign():
    rng = np.random.default_rng(3)
    responses, expected = [], []
    for i in range(8):
        h = rng.normal(size=(int(rng.integers(2, 12)), 24)) @ np.diag(rng.uniform(0.1, 3, 24))
        responses.append(_best(f"r{i}", {"sv@L2": list(_row_centred_sv(h))}))
        expected.append(-_erank_paper(h))
    scores = detectors.create("erank").score(responses, RUN)
    assert [s.value for s in scores] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("name", ["logdet", "erank"])
def test_collapsed_hidden_states_score_higher(name):
    rng = np.random.default_rng(4)
    rich = rng.normal(size=(10, 24))
    collapsed = np.outer(rng.normal(size=10), rng.normal(size=24)) + 1e-3 * rich
    high, low = detectors.create(name).score(
        [
            _best("c", {"sv@L2": list(_row_centred_sv(collapsed))}),
            _best("r", {"sv@L2": list(_row_centred_sv(rich))}),
        ],
        RUN,
    )
    assert high.value > low.value


def test_layer_none_uses_the_lower_median_stored_layer():
    hidden = {"sv@L2": [3.0, 1.0], "sv@L4": [1.0, 1.0], "sv@L8": [5.0, 0.5]}
    det = detectors.create("erank")
    (by_default,) = det.score([_best("r", hidden)], RUN)
    (layer4,) = detectors.create("erank", layer=4).score([_best("r", hidden)], RUN)
    (layer2,) = detectors.create("erank", layer=2).score([_best("r", hidden)], RUN)
    assert by_default.value == layer4.value == pytest.approx(-2.0)
    assert layer2.value != layer4.value
    (absent,) = detectors.create("erank", layer=5).score([_best("r", hidden)], RUN)
    assert absent.value is None and "sv@L5" in absent.error and "sv@L2" in absent.error


@pytest.mark.parametrize("name", ["eigenscore", "logdet", "erank"])
def test_missing_hidden_features_name_the_white_box_backends(name):
    bare = Response(response_id="r", example_id="e", model="m", text="a", samples=("x", "y"))
    (score,) = detectors.create(name).score([bare], RUN)
    assert score.value is None and "hf" in score.error


def test_degenerate_inputs_give_none():
    (one,) = detectors.create("eigenscore").score([_with_samples("r", [[1.0, 2.0]])], RUN)
    assert one.value is None and ">= 2 samples" in one.error
    (flat,) = detectors.create("erank").score([_best("r", {"sv@L1": [0.0]})], RUN)
    assert flat.value is None and "undefined" in flat.error


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("eigenscore", {"pooling": "max"}, "'pooling' parameter of eigenscore"),
        ("eigenscore", {"alpha": 0}, "'alpha' parameter of eigenscore"),
        ("logdet", {"layer": -1}, "'layer' parameter of logdet"),
        ("erank", {"layer": 1.5}, "'layer' parameter of erank"),
    ],
)
def test_rejects_bad_parameters(name, params, match):
    with pytest.raises(InvalidInputError, match=match):
        detectors.create(name, **params)


def _features(generation, k):
    seq = {"tokens": list(generation.tokens[k])}
    if generation.token_logprobs:
        seq["token_logprobs"] = list(generation.token_logprobs[k])
        seq["token_entropies"] = list(generation.token_entropies[k])
    if generation.hidden:
        seq["hidden"] = {name: list(v) for name, v in generation.hidden[k].items()}
    return seq


def test_detectors_on_the_tiny_model_agree_with_its_hidden_states(hf, reference):
    """Generation → features → detectors, checked against an independent forward pass."""
    torch = pytest.importorskip("torch")
    model, tokenizer = reference
    prompt = "who is the king of"
    best, samples = hf.generate(
        [
            GenerationRequest(prompt=prompt, max_tokens=8, logprobs=True, hidden_layers=(2, 4)),
            GenerationRequest(prompt=prompt, n=5, decoding="sampling", temperature=1.0,
                              max_tokens=8, seed=0, logprobs=True, hidden_layers=(2,)),
        ]
    )  # fmt: skip
    response = Response(
        response_id="r",
        example_id="e",
        model="tiny",
        text=best.texts[0],
        samples=samples.texts,
        features={
            "best": _features(best, 0),
            "samples": [_features(samples, k) for k in range(5)],
        },
    )
    values = {
        name: detectors.create(name).score([response], RUN)[0].value
        for name in (
            "perplexity",
            "mean_token_entropy",
            "ln_entropy",
            "eigenscore",
            "logdet",
            "erank",
            "mean_len",
            "std_len",
        )  # fmt: skip
    }
    assert all(v is not None and math.isfinite(v) for v in values.values()), values
    prompt_ids = tokenizer(prompt)["input_ids"]
    last = []
    for tokens in samples.tokens:
        ids = torch.tensor([prompt_ids + tokenizer.convert_tokens_to_ids(list(tokens))])
        with torch.no_grad():
            states = model(input_ids=ids, output_hidden_states=True).hidden_states
        last.append(states[2][0, -1].double().numpy())
    assert values["eigenscore"] == pytest.approx(_eigenscore_paper(last), rel=1e-4)
    with torch.no_grad():
        ids = torch.tensor([prompt_ids + tokenizer.convert_tokens_to_ids(list(best.tokens[0]))])
        h = model(input_ids=ids, output_hidden_states=True).hidden_states[2]
    h = h[0, len(prompt_ids) :].double().numpy()
    assert values["logdet"] == pytest.approx(-_llm_check_hidden_score(h), rel=1e-4)
    assert values["erank"] == pytest.approx(-_erank_paper(h), rel=1e-4)


def test_eigenscore_leaves_out_samples_that_generated_no_token():
    rng = np.random.default_rng(2)
    emb = rng.normal(size=(4, 16))
    full = _with_samples("full", emb)
    with_empty = _with_samples("gap", emb)
    seqs = [{**s, "tokens": ["x"]} for s in with_empty.features["samples"]]
    seqs.append({"tokens": [], "hidden": {}})
    gap = Response(
        response_id="gap",
        example_id="e",
        model="m",
        text="a",
        samples=(*with_empty.samples, ""),
        features={"samples": seqs},
    )
    a, b = detectors.create("eigenscore").score([full, gap], RUN)
    assert b.value == pytest.approx(a.value) == pytest.approx(_eigenscore_paper(emb), rel=1e-6)
    lone = Response(
        response_id="lone",
        example_id="e",
        model="m",
        text="a",
        samples=("s", ""),
        features={"samples": [seqs[0], {"tokens": [], "hidden": {}}]},
    )
    (c,) = detectors.create("eigenscore").score([lone], RUN)
    assert c.value is None and "2 samples" in c.error
