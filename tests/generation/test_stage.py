import json

import pytest
from _generation_fakes import CALLS, FakeBackend, Killed, PlainBackend, make_examples

from realitycheck.backends._cache import CallCache
from realitycheck.backends.mock import MockBackend, prompt_text, tokenize
from realitycheck.errors import InvalidInputError
from realitycheck.generation import SamplingPlan
from realitycheck.pipeline import generate, generation_errors, generation_key
from realitycheck.records import Example, Response
from realitycheck.store import RunStore

PLAN = SamplingPlan(n_samples=3, hidden_layers=(2,))


def _responses(store):
    return {r.response_id: r for r in store.read(Response)}


def test_one_response_per_example_with_samples_and_features(tmp_path):
    store = RunStore(tmp_path / "run")
    examples = make_examples(5)
    backend = FakeBackend()
    report = generate(store, examples, backend, PLAN, batch_size=2)
    assert (report.computed, report.reused, report.failed) == (5, 0, 0)
    assert len(CALLS) == 10  # a best-answer request and one n=3 request per example
    key = generation_key(backend, PLAN)
    responses = _responses(store)
    assert set(responses) == {f"{e.example_id}/zero_shot/{key}" for e in examples}
    asked = {c.tag: c for c in CALLS}
    for r in responses.values():  # each holds what the mock answered to its own requests
        (best,) = MockBackend.generate(backend, [asked[f"{r.response_id}#best"]])
        (samples,) = MockBackend.generate(backend, [asked[f"{r.response_id}#samples"]])
        assert (r.text, r.samples) == (best.texts[0], samples.texts)
    # at temperature 0.1 the mock keeps its reply ("answer i") for about 9 prompts in 10
    sampled = {"sample one", "sample two", "sample three"}
    texts = {r.example_id: r.text for r in responses.values()}
    left = [texts[f"toy/{i}"] for i in range(5) if texts[f"toy/{i}"] != f"answer {i}"]
    assert len(left) <= 2 and set(left) <= sampled
    r = responses[f"toy/0/zero_shot/{key}"]
    assert len(r.samples) == 3 and set(r.samples) == sampled
    assert (r.model, r.decoding, r.prompt_variant) == ("fake-model", "sampling", "zero_shot")
    assert set(r.features) == {"best", "samples"} and len(r.features["samples"]) == 3
    best = r.features["best"]
    assert set(best) == {"tokens", "token_logprobs", "token_entropies", "hidden"}
    assert best["tokens"] == tokenize(r.text) and best["token_logprobs"] == [-0.5, -0.5]
    assert {k: len(v) for k, v in best["hidden"].items()} == {
        "last@L2": 8,
        "mean@L2": 8,
        "sv@L2": 2,
    }
    assert r.features["samples"][1]["tokens"] == tokenize(r.samples[1])
    assert r.meta["backend"] == "fake" and r.meta["plan"] == PLAN.key
    assert {e.example_id for e in store.read(Example)} == {e.example_id for e in examples}
    entry = store.read_manifest()["config"]["generation"][key]
    assert entry["responses"] == 5 and entry["failed"] == 0
    prompt_tokens = sum(len(tokenize(prompt_text(c))) for c in CALLS)
    assert entry["usage"]["calls"] == 10 and entry["usage"]["prompt_tokens"] == prompt_tokens
    assert entry["backend"]["name"] == "fake" and entry["plan"]["params"]["n_samples"] == 3
    assert entry["component_keys"] == {"backend": "fake", "plan": PLAN.key}
    assert entry["model"] == "fake-model" and entry["variants"] == sorted(PLAN.variants)
    assert entry["datasets"] == sorted({e.dataset for e in examples})


def test_a_backend_without_features_or_n(tmp_path):
    store = RunStore(tmp_path / "run")
    generate(store, make_examples(2), PlainBackend(), SamplingPlan(n_samples=3), batch_size=8)
    assert len(CALLS) == 8 and all(c.n == 1 and c.prompt for c in CALLS)
    for r in _responses(store).values():
        assert len(r.samples) == 3 and len(set(r.samples)) == 3
        assert r.features == {}


def test_a_killed_run_resumes_without_repeating_calls(tmp_path):
    store = RunStore(tmp_path / "run")
    examples = make_examples(7)
    with pytest.raises(Killed):
        generate(store, examples, FakeBackend(explode_after=2), PLAN, batch_size=2)
    assert len(_responses(store)) == 4 and len(CALLS) == 8
    first = dict(_responses(store))
    CALLS.clear()
    report = generate(store, examples, FakeBackend(), PLAN, batch_size=2)
    assert (report.computed, report.reused) == (3, 4)
    assert len(CALLS) == 6
    asked = {c.tag.split("#")[0] for c in CALLS}
    assert asked == {f"toy/{i}/zero_shot/{report.generation}" for i in (4, 5, 6)}
    after = _responses(store)
    assert len(after) == 7 and all(after[k] == v for k, v in first.items())
    CALLS.clear()
    assert generate(store, examples, FakeBackend(), PLAN).reused == 7 and CALLS == []


def test_the_call_cache_serves_a_new_run_without_calls(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    examples = make_examples(3)
    generate(RunStore(tmp_path / "a"), examples, FakeBackend(), PLAN, cache=cache)
    CALLS.clear()
    report = generate(RunStore(tmp_path / "b"), examples, FakeBackend(), PLAN, cache=cache)
    assert CALLS == [] and report.computed == 3
    assert report.usage.calls == 0 and report.usage.cached == 6
    assert _responses(RunStore(tmp_path / "a")) == _responses(RunStore(tmp_path / "b"))


def test_failed_calls_become_error_rows_and_are_retried(tmp_path):
    store = RunStore(tmp_path / "run")
    cache = CallCache(tmp_path / "calls.sqlite")
    examples = make_examples(6)
    report = generate(store, examples, FakeBackend(fail_every=3), PLAN, cache=cache)
    assert report.failed == 4 and report.computed == 2
    assert "HTTP 503" in report.errors[0]
    errors = generation_errors(store)
    assert len(errors) == 4 and set(errors["attempts"]) == {1}
    assert not set(errors["response_id"]) & set(_responses(store))
    CALLS.clear()
    report = generate(store, examples, FakeBackend(), PLAN, cache=cache)
    assert (report.computed, report.reused, report.failed) == (4, 2, 0)
    assert len(CALLS) == 4  # only the failed requests; their successful halves were cached
    assert generation_errors(store).empty and len(_responses(store)) == 6
    manifest = store.read_manifest()["config"]["generation"][report.generation]
    assert manifest["responses"] == 6 and manifest["usage"]["errors"] == 4


def test_a_failure_that_persists_counts_its_attempts(tmp_path):
    store = RunStore(tmp_path / "run")
    examples = make_examples(2)
    generate(store, examples, FakeBackend(fail_every=1), PLAN)
    generate(store, examples, FakeBackend(fail_every=1), PLAN)
    errors = generation_errors(store)
    assert sorted(errors["attempts"]) == [2, 2] and store.read(Response) == []


def test_variants_have_their_own_responses_and_adding_one_keeps_the_others(tmp_path):
    store = RunStore(tmp_path / "run")
    examples = make_examples(8)
    generate(store, examples, FakeBackend(), SamplingPlan(n_samples=0))
    CALLS.clear()
    plan = SamplingPlan(n_samples=0, variants=("zero_shot", "few_shot", "zero_shot@2"))
    report = generate(store, examples[:2], FakeBackend(), plan, demos=examples)
    assert (report.computed, report.reused) == (4, 2)
    responses = _responses(store)
    few = [r for r in responses.values() if r.prompt_variant == "few_shot"]
    assert len(few) == 2 and all(len(r.meta["demos"]) == 5 for r in few)
    assert all(r.example_id not in r.meta["demos"] for r in few)
    assert {r.prompt_variant for r in responses.values()} == {
        "zero_shot",
        "few_shot",
        "zero_shot@2",
    }


def test_everything_is_checked_before_the_first_call(tmp_path):
    store = RunStore(tmp_path / "run")
    bad = [*make_examples(3), Example(example_id="s", dataset="toy", task="summary")]
    with pytest.raises(InvalidInputError, match="needs the example's context"):
        generate(store, bad, FakeBackend(), PLAN)
    with pytest.raises(InvalidInputError, match="needs beam"):
        generate(store, make_examples(2), PlainBackend(), SamplingPlan(decoding="beam"))
    with pytest.raises(InvalidInputError, match="occurs twice"):
        generate(store, make_examples(2) * 2, FakeBackend(), PLAN)
    with pytest.raises(InvalidInputError, match="'batch_size' parameter of generate"):
        generate(store, make_examples(2), FakeBackend(), PLAN, batch_size=0)
    assert CALLS == [] and store.read(Response) == []


def test_features_survive_the_store_as_json(tmp_path):
    store = RunStore(tmp_path / "run")
    generate(store, make_examples(1), FakeBackend(), PLAN)
    row = store.frame("responses").iloc[0]
    features = json.loads(row["features"])
    assert features["samples"][0]["token_logprobs"] == [-0.5, -0.5]  # "sample ..."
