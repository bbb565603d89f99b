"""The generate stage on a server that drops asked features: named in meta, asked again."""

from __future__ import annotations

import pytest
from _generation_fakes import make_examples

from realitycheck.backends import CallCache
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.detectors import detectors
from realitycheck.generation import SamplingPlan
from realitycheck.labelers import labelers
from realitycheck.pipeline import detect, generate, label
from realitycheck.records import Label, Response, Score
from realitycheck.store import RunStore


@pytest.fixture
def server(fake_openai):
    with fake_openai.FakeOpenAIServer() as fake:
        yield fake


def test_missing_logprobs_are_named_in_meta_and_asked_again_once_the_server_is_fixed(
    server, tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server.ignores = {"logprobs", "n"}
    backend = OpenAIBackend(model="tiny", base_url=server.url, backoff=0.01, max_retries=1)
    plan = SamplingPlan(n_samples=3)
    store = RunStore(tmp_path / "run")
    examples = make_examples(2)
    with CallCache(tmp_path / "calls.sqlite") as cache:
        report = generate(store, examples, backend, plan, cache=cache)
        assert (report.computed, report.lacking, report.failed) == (2, 2, 0)
        # one best answer and three samples per example, one call each: counted truthfully
        assert report.usage.calls == 8 == server.calls
        responses = store.read(Response)
        for response in responses:
            assert response.meta["unsupported"] == {
                "logprobs": f"{server.url} (model tiny) returned no 'logprobs'"
            }
            assert "token_logprobs" not in response.features.get("best", {})
        server.ignores = set()  # the server is fixed: a plain rerun asks again
        again = generate(store, examples, backend, plan, cache=cache)
        assert (again.computed, again.lacking, again.reused) == (2, 0, 0)
        assert server.calls == 8 + 4  # n is honoured now: one best and one n=3 call each
        fixed = store.read(Response)
        assert len(fixed) == 2 and all("unsupported" not in r.meta for r in fixed)
        assert all(r.features["best"]["token_logprobs"] for r in fixed)
        third = generate(store, examples, backend, plan, cache=cache)
        assert (third.computed, third.reused) == (0, 2) and server.calls == 12


def test_a_refused_request_counts_as_a_permanent_failure(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server.refuse_top_k = True
    backend = OpenAIBackend(model="tiny", base_url=server.url, backoff=0.01, max_retries=3)
    plan = SamplingPlan(n_samples=0, decoding="top_k", top_k=5)
    report = generate(RunStore(tmp_path / "run"), make_examples(1), backend, plan)
    assert (report.failed, report.permanent) == (1, 1) and server.calls == 1
    assert "refuses the 'top_k' parameter" in report.errors[0]


def _label_and_score(store):
    scored = detect(store, [detectors.create("perplexity"), detectors.create("length")])
    labelled = label(store, [labelers.create("exact_match")])
    return scored, labelled


def _records(store, cls, column):
    return {(r.response_id, getattr(r, column)): r for r in store.read(cls)}


def test_a_regenerated_response_loses_the_labels_and_scores_of_its_old_version(
    server, tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server.ignores = {"logprobs"}
    backend = OpenAIBackend(model="tiny", base_url=server.url, backoff=0.01, max_retries=1)
    plan = SamplingPlan(n_samples=2)
    store = RunStore(tmp_path / "run")
    examples = make_examples(3)
    with CallCache(tmp_path / "calls.sqlite") as cache:
        first = generate(store, examples, backend, plan, cache=cache)
        assert (first.lacking, first.regenerated, first.dropped_labels) == (3, 0, 0)
        # a response this generation did not write (of the dataset, or another model)
        other = Response(response_id="toy/0/other", example_id="toy/0", model="m", text="Name0")
        store.append([other])
        _label_and_score(store)
        before = _records(store, Score, "detector")
        assert all(before[(r, "perplexity")].error for r, _ in before if r != other.response_id)
        assert len(before) == 8 and len(_records(store, Label, "labeler")) == 4

        server.ignores = set()  # the server is fixed: the three are answered again
        again = generate(store, examples, backend, plan, cache=cache)
        assert (again.computed, again.regenerated, again.lacking) == (3, 3, 0)
        assert (again.dropped_labels, again.dropped_scores) == (3, 6)
        entry = store.read_manifest()["config"]["generation"][again.generation]
        assert entry["regenerated"] == 3 and entry["dropped"] == {"labels": 3, "scores": 6}
        kept_scores = _records(store, Score, "detector")
        assert set(kept_scores) == {
            (other.response_id, "perplexity"),
            (other.response_id, "length"),
        }
        assert set(_records(store, Label, "labeler")) == {(other.response_id, "exact_match")}

        scored, labelled = _label_and_score(store)
        assert scored.computed == {"perplexity": 3, "length": 3}
        assert scored.reused == {"perplexity": 1, "length": 1}
        assert labelled.computed == {"exact_match": 3}
        after = _records(store, Score, "detector")
        for response in store.read(Response):
            if response.response_id == other.response_id:
                continue
            score = after[(response.response_id, "perplexity")]
            assert not score.error and score.value is not None  # from the new log-probs
        assert after[(other.response_id, "length")] == before[(other.response_id, "length")]

        third = generate(store, examples, backend, plan, cache=cache)
        assert (third.computed, third.regenerated, third.dropped_scores) == (0, 0, 0)
        assert len(_records(store, Score, "detector")) == 8


def test_a_failed_regeneration_keeps_the_old_response_and_its_records_are_recomputed(
    tmp_path, monkeypatch, fake_openai
):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server = fake_openai.FakeOpenAIServer().start()  # stopped once, below
    server.ignores = {"logprobs"}
    backend = OpenAIBackend(model="tiny", base_url=server.url, backoff=0.01, max_retries=1)
    plan = SamplingPlan(n_samples=0)
    store = RunStore(tmp_path / "run")
    examples = make_examples(2)
    generate(store, examples, backend, plan)
    old = {r.response_id: r.text for r in store.read(Response)}
    _label_and_score(store)
    server.stop()  # the call that would replace them never succeeds
    failed = generate(store, examples, backend, plan)
    assert (failed.failed, failed.computed, failed.regenerated) == (2, 0, 2)
    assert (failed.dropped_labels, failed.dropped_scores) == (2, 4)
    # dropped before any call: a killed or failed run never leaves old records on new text
    assert {r.response_id: r.text for r in store.read(Response)} == old
    assert store.read(Label) == []
    scored, labelled = _label_and_score(store)
    assert labelled.computed == {"exact_match": 2}
    assert scored.computed == {"perplexity": 2, "length": 2}
