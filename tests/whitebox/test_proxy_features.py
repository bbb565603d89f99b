"""White-box detectors on answers a run did not generate, read through a proxy model.

The tiny Llama of ``conftest.py`` (random weights, saved and reloaded with
``from_pretrained``) teacher-forces answers that no model of the run wrote:
the stored token log-probabilities are checked against a log-softmax of the
model's logits computed here with torch alone, perplexity against
``exp(-mean log p)`` of those, the hidden-state summaries against the
singular values of the hidden states read here; then the marking, the
cache (a rerun makes no forward pass), the failures and the refusals.
"""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pytest

from realitycheck.backends import GenerationRequest, backends, teacher_force
from realitycheck.detectors import detectors
from realitycheck.errors import InvalidInputError
from realitycheck.pipeline import ProxyModel, detect
from realitycheck.records import Example, Label, Response
from realitycheck.store import RunStore

QUESTIONS = {
    "q1": "who is the king of the city",
    "q2": "where does the old dog live",
    "q3": "what is the capital of the country",
}
ANSWERS = [
    ("q1", "the queen of rome", True),
    ("q1", "a king", False),
    ("q2", "the dog lives near the river with a cat", True),
    ("q2", "in london", False),
    ("q3", "paris", False),
    ("q3", "berlin is the capital", True),
    ("q3", "", True),
]


class Prompts:
    """A prompt builder: a completion prompt that ends with ``answer``."""

    key = "test prompts"

    def __init__(self, fail_on: str = "") -> None:
        self.fail_on = fail_on

    def __call__(self, example, response, examples):
        if example.example_id == self.fail_on:
            raise InvalidInputError("no prompt for this one")
        return GenerationRequest(prompt=f"question {example.question} answer")


def _run(path, answers=ANSWERS, samples=()) -> RunStore:
    store = RunStore(path)
    store.append(
        [Example(example_id=k, dataset="toy", task="qa", question=q) for k, q in QUESTIONS.items()]
    )
    responses, labels = [], []
    for i, (eid, text, hallucinated) in enumerate(answers):
        rid = f"{eid}/{i}"
        responses.append(
            Response(response_id=rid, example_id=eid, model="human", text=text, samples=samples)
        )
        labels.append(Label(response_id=rid, labeler="human", hallucinated=hallucinated))
    store.append(responses)
    store.append(labels)
    return store


def _direct(model, tokenizer, prompt: str, answer: str, layer: int | None = None):
    """Each answer token's log-prob (and the answer's hidden states at ``layer``), read here."""
    import torch

    context = tokenizer(prompt)["input_ids"]
    whole = tokenizer(prompt + " " + answer)["input_ids"]
    assert whole[: len(context)] == context
    with torch.no_grad():
        out = model(input_ids=torch.tensor([whole]), output_hidden_states=True)
    logp = torch.log_softmax(out.logits[0].double(), dim=-1)
    values = [float(logp[t - 1, whole[t]]) for t in range(len(context), len(whole))]
    states = None if layer is None else out.hidden_states[layer][0, len(context) :].double()
    return values, states


def _counting(monkeypatch) -> list[int]:
    """Count the sequences the proxy puts through the model from now on."""
    forward = importlib.import_module("realitycheck.backends.hf._forward")
    seen: list[int] = []
    original = forward.forward_features

    def counted(model, tokenizer, prompts, outputs, **kwargs):
        seen.append(len(outputs))
        return original(model, tokenizer, prompts, outputs, **kwargs)

    monkeypatch.setattr(forward, "forward_features", counted)
    return seen


def _proxy_rows(store: RunStore, proxy: ProxyModel) -> dict[str, dict]:
    rows = store.arrow(proxy.table).to_pylist()
    return {r["response_id"]: {**r, "features": json.loads(r["features"])} for r in rows}


def test_teacher_force_gives_the_log_softmax_of_each_answer_token(hf, reference):
    model, tokenizer = reference
    prompts = ["question who is the king answer", "the cat sat on the"]
    answers = ["the queen of rome and paris", "a small cat", "red"]
    requests = [GenerationRequest(prompt=p, logprobs=True) for p in (*prompts, prompts[0])]
    generations = teacher_force(hf, requests, answers)
    for request, answer, generation in zip(requests, answers, generations, strict=True):
        expected, _ = _direct(model, tokenizer, request.prompt, answer)
        assert generation.error == "" and generation.texts == (answer,)
        assert generation.tokens[0] == tuple(answer.split())
        np.testing.assert_allclose(generation.token_logprobs[0], expected, atol=1e-4)
        assert len(generation.token_entropies[0]) == len(expected)


def test_perplexity_of_a_dataset_answer_is_the_proxys_and_says_so(hf, reference, tmp_path):
    model, tokenizer = reference
    store = _run(tmp_path / "run")
    proxy = ProxyModel(backend=hf, prompt=Prompts())
    report = detect(store, [detectors.create("perplexity")], proxy=proxy)

    rows = _proxy_rows(store, proxy)
    scores = {s["response_id"]: s for s in store.arrow("scores").to_pylist()}
    assert len(rows) == len(scores) == len(ANSWERS)
    for i, (eid, text, _) in enumerate(ANSWERS):
        rid = f"{eid}/{i}"
        best = rows[rid]["features"]["best"]
        expected, _ = _direct(model, tokenizer, f"question {QUESTIONS[eid]} answer", text)
        np.testing.assert_allclose(best["token_logprobs"], expected, atol=1e-4)
        assert rows[rid]["features"]["proxy"]["backend"] == hf.key
        spec = json.loads(scores[rid]["spec"])
        assert spec["name"] == "perplexity" and spec["proxy"]["model"] == hf.model
        if text:
            assert scores[rid]["value"] == pytest.approx(
                math.exp(-float(np.mean(best["token_logprobs"]))), rel=1e-9
            )
        else:  # an empty answer: measured, no token, no value (and not a failure)
            assert best["token_logprobs"] == [] and scores[rid]["value"] is None
            assert scores[rid]["error"] == "the best answer has no tokens"
    assert report.missing == {"perplexity": 1} and not report.failed
    manifest = store.read_manifest()
    assert manifest["components"]["perplexity"]["proxy"]["model"] == hf.model
    entry = manifest["config"]["proxy_features"][proxy.table]
    assert entry["responses"] == len(ANSWERS) and entry["failed"] == 0
    assert entry["backend"]["name"] == "hf" and entry["prompt"] == "test prompts"
    assert any("7 responses measured" in n for n in report.notes), report.notes


def test_a_rerun_and_another_detector_make_no_forward_pass(hf, tmp_path, monkeypatch):
    store = _run(tmp_path / "run")
    proxy = ProxyModel(backend=hf, prompt=Prompts())
    seen = _counting(monkeypatch)
    detect(store, [detectors.create("perplexity")], proxy=proxy)
    assert sum(seen) == len(ANSWERS)
    seen.clear()
    again = detect(store, [detectors.create("perplexity")], proxy=proxy)
    assert seen == [] and again.reused == {"perplexity": len(ANSWERS)}
    other = detect(store, [detectors.create("mean_token_entropy")], proxy=proxy)
    assert seen == [] and other.computed == {"mean_token_entropy": len(ANSWERS)}
    assert any("0 responses measured" in n and "7 already stored" in n for n in other.notes)
    values = store.arrow("scores").to_pandas().set_index(["detector", "response_id"])["value"]
    assert values["mean_token_entropy"].notna().sum() == len(ANSWERS) - 1


def test_hidden_summaries_for_logdet_and_erank_are_the_answer_states(hf, reference, tmp_path):
    from realitycheck.detectors.internal import effective_rank

    model, tokenizer = reference
    store = _run(tmp_path / "run")
    proxy = ProxyModel(backend=hf, prompt=Prompts())
    middle = hf.layer_count() // 2
    detect(
        store,
        [detectors.create("erank"), detectors.create_from_key("logdet[layer=4]")],
        proxy=proxy,
    )
    rows = _proxy_rows(store, proxy)
    scores = store.arrow("scores").to_pandas().set_index(["detector", "response_id"])["value"]
    eid, text, _ = ANSWERS[2]
    rid = f"{eid}/2"
    hidden = rows[rid]["features"]["best"]["hidden"]
    assert set(hidden) == {f"{k}@L{layer}" for k in ("last", "mean", "sv") for layer in (middle, 4)}
    assert rows[rid]["meta"] and json.loads(rows[rid]["meta"])["hidden_layers"] == [middle, 4]
    _, states = _direct(model, tokenizer, f"question {QUESTIONS[eid]} answer", text, middle)
    centred = states - states.mean(dim=1, keepdim=True)
    import torch

    sv = torch.linalg.svdvals(centred).numpy()
    np.testing.assert_allclose(hidden[f"sv@L{middle}"], sv, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(hidden[f"last@L{middle}"], states[-1].numpy(), atol=1e-4)
    assert scores["erank", rid] == pytest.approx(-effective_rank(sv), rel=1e-4)


def test_samples_are_read_too_for_ln_entropy(hf, reference, tmp_path):
    model, tokenizer = reference
    samples = ("the king", "a red bird flew")
    store = _run(tmp_path / "run", answers=ANSWERS[:2], samples=samples)
    proxy = ProxyModel(backend=hf, prompt=Prompts())
    detect(store, [detectors.create("ln_entropy")], proxy=proxy)
    prompt = f"question {QUESTIONS['q1']} answer"
    means = [np.mean(_direct(model, tokenizer, prompt, s)[0]) for s in samples]
    value = store.arrow("scores").column("value").to_pylist()[0]
    assert value == pytest.approx(-float(np.mean(means)), rel=1e-4)


def test_a_response_the_proxy_cannot_read_fails_loudly_and_stands(hf, tmp_path, monkeypatch):
    store = _run(tmp_path / "run")
    proxy = ProxyModel(backend=hf, prompt=Prompts(fail_on="q2"))
    report = detect(store, [detectors.create("perplexity")], proxy=proxy)
    assert report.failed == {"perplexity": 2}
    ((text, count),) = report.failures["perplexity"].items()
    assert count == 2 and "its prompt cannot be rebuilt: no prompt for this one" in text
    scores = store.arrow("scores").to_pandas().set_index("response_id")
    assert scores.loc["q2/2", "failed"] and np.isnan(scores.loc["q2/2", "value"])
    assert any("2 could not be measured" in n for n in report.notes), report.notes
    seen = _counting(monkeypatch)
    again = detect(store, [detectors.create("perplexity")], proxy=proxy)
    assert seen == [] and again.failed_before == {"perplexity": 2}
    fixed = ProxyModel(backend=hf, prompt=Prompts())
    retried = detect(store, [detectors.create("perplexity")], proxy=fixed, retry_errors=True)
    assert sum(seen) == 2 and retried.retried == {"perplexity": 3} and not retried.failed


@pytest.mark.parametrize(
    ("backend_key", "detector", "match"),
    [
        (
            "mock",
            "perplexity",
            r"the backend 'mock' cannot read fixed answers.*Backends that can: hf",
        ),
        (
            "openai[model=x,base_url=http://127.0.0.1:9/v1]",
            "erank",
            r"erank \(through the proxy .*\) needs hidden, which the backend",
        ),
    ],
)
def test_a_backend_that_cannot_read_answers_is_refused_before_any_work(
    tmp_path, backend_key, detector, match
):
    store = _run(tmp_path / "run")
    proxy = ProxyModel(backend=backends.create_from_key(backend_key), prompt=Prompts())
    with pytest.raises(InvalidInputError, match=match):
        detect(store, [detectors.create(detector)], proxy=proxy)
    assert store.arrow("scores").num_rows == 0


def test_generator_features_are_not_mixed_with_a_proxys(hf, tmp_path):
    store = _run(tmp_path / "run")
    own = Response(
        response_id="q1/gen",
        example_id="q1",
        model="m",
        text="the king",
        features={"best": {"token_logprobs": [-1.0, -2.0]}},
    )
    store.append([own])
    proxy = ProxyModel(backend=hf, prompt=Prompts())
    with pytest.raises(InvalidInputError, match=r"1 of the 8 responses carry the features"):
        detect(store, [detectors.create("perplexity")], proxy=proxy)
    only_own = _run(tmp_path / "own", answers=[])
    only_own.append([own])
    report = detect(only_own, [detectors.create("perplexity")], proxy=proxy)
    assert only_own.arrow("scores").column("value").to_pylist() == [pytest.approx(math.exp(1.5))]
    assert "proxy" not in json.loads(only_own.arrow("scores").column("spec")[0].as_py())
    assert any("every response carries the features its generator" in n for n in report.notes)


def test_scores_of_another_source_are_not_added_under_the_same_key(hf, tmp_path):
    store = _run(tmp_path / "run", answers=ANSWERS[:2])
    detect(store, [detectors.create("perplexity")])  # no proxy: two missing scores
    store.append([Response(response_id="q3/new", example_id="q3", model="h", text="paris")])
    proxy = ProxyModel(backend=hf, prompt=Prompts())
    with pytest.raises(InvalidInputError, match=r"stored perplexity scores were computed from the"):
        detect(store, [detectors.create("perplexity")], proxy=proxy)


def test_a_row_gains_the_layers_a_later_detector_reads(hf, tmp_path, monkeypatch):
    store = _run(tmp_path / "run")
    proxy = ProxyModel(backend=hf, prompt=Prompts())
    seen = _counting(monkeypatch)
    detect(store, [detectors.create("erank")], proxy=proxy)
    assert sum(seen) == len(ANSWERS)
    detect(store, [detectors.create_from_key("logdet[layer=4]")], proxy=proxy)
    assert sum(seen) == 2 * len(ANSWERS)
    layers = {
        json.dumps(json.loads(m)["hidden_layers"])
        for m in store.arrow(proxy.table)["meta"].to_pylist()
    }
    assert layers == {json.dumps([hf.layer_count() // 2, 4])}
    detect(store, [detectors.create_from_key("erank[layer=4]")], proxy=proxy)
    assert sum(seen) == 2 * len(ANSWERS)


def test_a_rerun_without_the_proxy_keeps_its_scores_and_their_spec(hf, tmp_path):
    store = _run(tmp_path / "run")
    proxy = ProxyModel(backend=hf, prompt=Prompts())
    detect(store, [detectors.create("perplexity")], proxy=proxy)
    report = detect(store, [detectors.create("perplexity")])  # as evaluate does
    assert report.reused == {"perplexity": len(ANSWERS)} and report.computed == {"perplexity": 0}
    assert report.notes == [
        f"perplexity: the {len(ANSWERS)} stored records were computed from the features of the "
        f"proxy model {hf.model!r}; they are kept as they are, and so is their spec."
    ]
    assert store.read_manifest()["components"]["perplexity"]["proxy"]["model"] == hf.model
    store.append([Response(response_id="q3/new", example_id="q3", model="h", text="paris")])
    other = ProxyModel(backend=hf, prompt=Prompts(), hidden_layers=(1,))  # same proxy spec
    assert detect(store, [detectors.create("perplexity")], proxy=other).computed == {
        "perplexity": 1
    }
    with pytest.raises(InvalidInputError, match=r"the features of the proxy \{"):
        renamed = Prompts()
        renamed.key = "other prompts"
        store.append([Response(response_id="q3/new2", example_id="q3", model="h", text="rome")])
        detect(
            store, [detectors.create("perplexity")], proxy=ProxyModel(backend=hf, prompt=renamed)
        )
