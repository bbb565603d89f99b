"""The few-shot judges on the tiny local hf model, in a run: the plumbing, through the cache.

The model has random weights and a word-level vocabulary without the verdict
words, so every reply is unreadable: what is checked is that both judges ask
the model through the label stage (worked examples from the run's calibration
split, the search within its budget), keep the replies and their reasons, and
that a rerun of the same calls is answered by the cache.
"""

from __future__ import annotations

import json

import pytest

from realitycheck import Example, Label, Response, RunStore, label
from realitycheck.analysis import split_of
from realitycheck.backends import CallCache
from realitycheck.labelers.fewshot_judge import FewShotJudge
from realitycheck.labelers.optimized_judge import OptimizedJudge


def _run(path) -> RunStore:
    store = RunStore(path)
    examples, responses, labels = [], [], []
    for i in range(8):
        eid = f"q{i}"
        examples.append(
            Example(
                example_id=eid,
                dataset="t",
                task="qa",
                question="capital of france",
                references=("paris",),
            )
        )
        for text, bad in (("paris", False), ("rome", True)):
            rid = f"{eid}/{text}"
            responses.append(Response(response_id=rid, example_id=eid, model=text, text=text))
            labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
    for records in (examples, responses, labels):
        store.append(records)
    return store


@pytest.mark.slow
def test_both_judges_run_on_a_local_model_in_a_run_and_a_rerun_reuses_the_cache(
    hf, tmp_path, request
):
    store = _run(tmp_path / "run")  # q0, q1, q2, q7 in the calibration split, the rest in test
    assert list(split_of([f"q{i}" for i in range(8)])).count("calibration") == 4
    few = FewShotJudge(judge=hf, k=2, max_tokens=4)
    opt = OptimizedJudge(
        judge=hf, k=2, sets=1, instructions=("match", "strict"), budget=4, max_tokens=4
    )
    with CallCache(tmp_path / "calls.sqlite") as cache:
        label(store, [few, opt], cache=cache)
        sent = request.getfixturevalue("hf_sent")  # counts from here on
        responses = store.read(Response)
        examples = {e.example_id: e for e in store.read(Example)}
        pool = few.pool(responses, examples, store.read(Label))
        again = {
            judge.key: judge.label_with(responses, examples, pool, cache=cache)
            for judge in (few, opt)
        }
    assert sent == []
    stored = {(x.labeler, x.response_id): x for x in store.read(Label)}

    def kept(x):  # what the reply was and what was shown, not whether the cache answered
        return {k: v for k, v in json.loads(x.raw or "{}").items() if k != "usage"}

    for key, labels in again.items():
        assert [kept(x) for x in labels] == [kept(stored[(key, x.response_id)]) for x in labels]
    graded = {key: [x for x in labels if x.raw] for key, labels in again.items()}
    assert len(graded[few.key]) == 16 and len(graded[opt.key]) == 8  # opt: the test split only
    for labels in graded.values():
        assert all(x.category == "invalid" and x.hallucinated is None for x in labels)
        assert all(x.unreadable == 1 and json.loads(x.raw)["replies"][0] for x in labels)
    chosen = json.loads(graded[opt.key][0].spec)["chosen"]
    # Both candidates score 0 on unreadable replies: the tie goes to the first.
    assert chosen["search_calls"] == 4 and chosen["instruction"] == "match"
