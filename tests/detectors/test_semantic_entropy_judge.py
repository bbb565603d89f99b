"""Semantic entropy's LLM judge: a nested backend, in its key and stored spec, cached per run."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from realitycheck import Example, Response, RunStore, Score, detect, detectors
from realitycheck.backends import CallCache

# The mock judge says "Yes." when both answers start with the same word.
SAME_FIRST_WORD = r"Answer A: (\S+)(?:[ \t][^\n]*)?\nAnswer B: \1\s=>Yes."
JUDGE = {"name": "mock", "params": {"reply": "no", "replies": [SAME_FIRST_WORD]}}
SPEC = {"name": "semantic_entropy", "params": {"equivalence": "llm", "judge": JUDGE}}
SAMPLES = ("paris city", "paris", "rome", "rome capital", "london")


def _entropy(classes):
    counts = [classes.count(c) for c in set(classes)]
    return -sum(n / len(classes) * math.log(n / len(classes)) for n in counts)


def _store(path) -> RunStore:
    store = RunStore(path)
    store.append([Example(example_id="e", dataset="t", task="qa", question="Capital?")])
    store.append(
        [
            Response(response_id=f"r{i}", example_id="e", model="m", text="x", samples=samples)
            for i, samples in enumerate([SAMPLES, SAMPLES[:2], SAMPLES[2:]])
        ]
    )
    return store


def _calls(path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM calls").fetchone()[0])


def test_the_judge_is_a_nested_backend_in_the_key_and_the_spec():
    det = detectors.create_from_spec(SPEC)
    judge = det.judge
    assert judge is not None and judge.name == "mock" and judge.replies == (SAME_FIRST_WORD,)
    assert det.key.startswith("semantic_entropy[equivalence=llm,judge=mock[")
    assert f"judge={judge.key}" in det.key
    assert det.spec["params"]["judge"] == judge.spec
    # The pattern holds "+", brackets and backslashes: quoted in the key, read back whole.
    assert detectors.create_from_key(det.key) == det
    assert detectors.create_from_spec(json.loads(det.spec_json)) == det


def test_the_same_judge_typed_in_a_key():
    det = detectors.create_from_key(
        "semantic_entropy[equivalence=llm,judge=mock[model=judge,reply=no]]"
    )
    assert det.judge is not None and (det.judge.model, det.judge.reply) == ("judge", "no")
    assert det.key == "semantic_entropy[equivalence=llm,judge=mock[model=judge,reply=no]]"


def test_judge_calls_go_through_the_run_cache_and_the_nested_spec_is_stored(tmp_path):
    det = detectors.create_from_spec(SPEC)
    cache = CallCache(tmp_path / "calls.sqlite")
    report = detect(_store(tmp_path / "run1"), [det], cache=cache)
    assert report.computed == {det.key: 3}
    stored = {s.response_id: s for s in RunStore(tmp_path / "run1").read(Score)}
    assert stored["r0"].value == pytest.approx(_entropy([0, 0, 1, 1, 2]))
    assert stored["r1"].value == pytest.approx(0.0)
    assert stored["r2"].value == pytest.approx(_entropy([0, 0, 1]))
    spec = json.loads(stored["r0"].spec)
    assert spec["params"]["judge"] == det.judge.spec
    assert spec["params"]["judge"]["params"]["replies"] == [SAME_FIRST_WORD]
    asked = _calls(tmp_path / "calls.sqlite")
    assert asked > 0

    # Another run with the same cache asks the judge nothing: one that refuses every
    # prompt (fail_on is not part of the call's identity) still gives every score.
    refusing = {**JUDGE, "params": {**JUDGE["params"], "fail_on": "."}}
    again = detectors.create_from_spec({**SPEC, "params": {**SPEC["params"], "judge": refusing}})
    assert again.key == det.key
    detect(_store(tmp_path / "run2"), [again], cache=cache)
    second = {s.response_id: s.value for s in RunStore(tmp_path / "run2").read(Score)}
    assert second == {rid: s.value for rid, s in stored.items()}
    assert _calls(tmp_path / "calls.sqlite") == asked

    # Without the cache the refusing judge is asked, and fails: no verdict, no value.
    detect(_store(tmp_path / "run3"), [again])
    third = RunStore(tmp_path / "run3").read(Score)
    assert len(third) == 3 and all(s.value is None and "judge" in s.error for s in third)
