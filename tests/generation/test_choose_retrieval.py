"""The choose stage with a retriever: passages before the question, ids and key in the meta."""

from __future__ import annotations

import json
import math

import pytest

from realitycheck.backends.mock import MockBackend, tokenize
from realitycheck.errors import InvalidInputError
from realitycheck.generation import ChoicePlan, variants
from realitycheck.pipeline import choose
from realitycheck.records import Example, Response
from realitycheck.store import RunStore

LOGPROBS = (-0.3, -2.0, -0.7)
PASSAGES = [
    {"id": "fr", "text": "Paris is the capital city of France.", "title": "France"},
    {"id": "jup", "text": "Jupiter is the largest planet of the solar system."},
    {"id": "ban", "text": "Bananas are long yellow fruits."},
]


def _mcq(i: int, question: str, choices: tuple[str, ...]) -> Example:
    return Example(
        example_id=f"toy/{i}",
        dataset="toy",
        task="mcq",
        question=question,
        choices=choices,
        references=(choices[0],),
        meta={"gold": [0]},
    )


EXAMPLES = [
    _mcq(0, "The capital city of France is", ("Paris", "Rome", "Oslo")),
    _mcq(1, "The largest planet is", ("Jupiter", "Mars")),
    _mcq(2, "Zebras eat", ("grass", "stones")),  # no passage shares a word
]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "passages.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    return path


def _record_contexts(monkeypatch) -> list[str]:
    contexts: list[str] = []
    original = MockBackend.loglik_tokens

    def recording(self, pairs):
        contexts.extend(context for context, _ in pairs)
        return original(self, pairs)

    monkeypatch.setattr(MockBackend, "loglik_tokens", recording)
    return contexts


def test_answers_with_and_without_retrieval_are_both_kept(tmp_path, corpus, monkeypatch):
    contexts = _record_contexts(monkeypatch)
    store = RunStore(tmp_path / "run")
    backend = MockBackend(logprob=LOGPROBS)
    vs = [variants.create("default"), variants.create("shuffle_options", seed=1)]
    key = f"bm25[cache_dir={tmp_path / 'idx'},corpus={corpus},k=1]"
    with_rag = ChoicePlan(template="qa", retriever=key)
    plain = ChoicePlan(template="qa")
    assert choose(store, EXAMPLES, backend, plain, vs).computed == 6
    assert choose(store, EXAMPLES, backend, with_rag, vs).computed == 6
    responses = store.read(Response)
    assert len({r.response_id for r in responses}) == 12
    expected = {"toy/0": ["fr"], "toy/1": ["jup"], "toy/2": []}
    for r in responses:
        question = next(e.question for e in EXAMPLES if e.example_id == r.example_id)
        if "retriever" not in r.meta:
            assert "passages" not in r.meta
            assert r.meta["prompt"] == f"Q: {question}\nA:"
            continue
        assert r.meta["retriever"] == with_rag.retriever.key
        assert r.meta["passages"] == expected[r.example_id]
        text = {p["id"]: p["text"] for p in PASSAGES}
        for pid in r.meta["passages"]:  # the passage comes before the question
            assert r.meta["prompt"].index(text[pid]) < r.meta["prompt"].index(f"Q: {question}")
        if not r.meta["passages"]:
            assert r.meta["prompt"] == f"Q: {question}\nA:"
        for i, option in enumerate(EXAMPLES[int(r.example_id[-1])].choices):
            n = len(tokenize(" " + option))  # the mock's rule: token t has LOGPROBS[t % 3]
            total = math.fsum(LOGPROBS[t % 3] for t in range(n))
            assert r.meta["options"][i]["sum"] == pytest.approx(total)
    sent_with_passages = {c for c in contexts if c.startswith("A search of the reference corpus")}
    stored = {r.meta["prompt"] for r in responses if r.meta.get("passages")}
    assert sent_with_passages == stored and len(stored) == 2


def test_a_bad_corpus_fails_before_any_call(tmp_path, monkeypatch):
    contexts = _record_contexts(monkeypatch)
    store = RunStore(tmp_path / "run")
    default = [variants.create("default")]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    no_text = tmp_path / "no_text.jsonl"
    no_text.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n', encoding="utf-8")
    for path, match in [
        (empty, r"empty\.jsonl.*holds no passage"),
        (no_text, r"no_text\.jsonl, line 2, field 'text'"),
    ]:
        plan = ChoicePlan(retriever=f"bm25[corpus={path},cache_dir={tmp_path / 'idx'}]")
        with pytest.raises(InvalidInputError, match=match):
            choose(store, EXAMPLES, MockBackend(), plan, default)
    assert contexts == [] and not store.read(Response)
