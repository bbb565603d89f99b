"""``optimized_judge``: the search on calibration, its budget, the frozen choice, test only.

The mock backend is scripted so that the instructions disagree: under
``strict`` it grades right (an answer starting with Zorblax is incorrect),
under ``match`` it grades every answer the wrong way round, and under
``lenient`` it calls every answer correct. ``strict`` is not first in the
order tried, so picking it is the search's doing.
"""

from __future__ import annotations

import json

import pytest
from _fewshot_run import build_run, human, mine, raw, side, worked_examples
from sklearn.metrics import balanced_accuracy_score

from realitycheck import EvaluationConfig, InvalidInputError, Label, Response, evaluate, label
from realitycheck import labelers as registry
from realitycheck.analysis import Bootstrap
from realitycheck.backends import CallCache
from realitycheck.cli import main
from realitycheck.labelers import plan_calls
from realitycheck.labelers._judge import Unjudgeable
from realitycheck.labelers._shots import Labelled
from realitycheck.labelers.optimized_judge import OptimizedJudge
from realitycheck.records import Example

STARTS = {
    "match": "Your task is to decide",
    "strict": "You are checking an answer",
    "lenient": "Read an answer to a question",
}
WRONG = 'answer to grade: "Zorblax'
SCRIPT = {
    "name": "mock",
    "params": {
        "reply": '{"verdict": "correct"}',
        "replies": [
            f'^{STARTS["strict"]}(?s:.*){WRONG}=>{{{{"verdict": "incorrect"}}}}',
            f'^{STARTS["match"]}(?s:.*){WRONG}=>{{{{"verdict": "correct"}}}}',
            f'^{STARTS["match"]}=>{{{{"verdict": "incorrect"}}}}',
        ],
    },
}


def judge(**params) -> OptimizedJudge:
    return registry.create("optimized_judge", judge=SCRIPT, **params)


def inputs(store):
    responses = store.read(Response)
    examples = {e.example_id: e for e in store.read(Example)}
    return responses, examples, store.read(Label)


def scripted(instruction: str, text: str) -> bool:
    """What the script makes the judge say of ``text`` under ``instruction`` (True: incorrect)."""
    wrong = text.startswith("Zorblax")
    return {"strict": wrong, "match": not wrong, "lenient": False}[instruction]


def test_the_search_picks_the_best_balanced_accuracy_and_freezes_it(tmp_path):
    store = build_run(tmp_path / "run", n=80)
    opt = judge(budget=60)
    responses, examples, labels = inputs(store)
    pool = opt.pool(responses, examples, labels)
    search = opt.plan_search("t", pool["t"])
    assert [c.instruction for c in search.candidates] == ["match"] * 2 + ["strict"] * 2 + [
        "lenient"
    ] * 2
    y_true = [x.hallucinated for x in search.items]
    assert sum(y_true) * 2 == len(y_true) == 10  # 60 calls // 6 candidates, balanced
    label(store, [opt])
    found = mine(store, opt.key)
    graded = [x for r, x in found.items() if side(r) == "test" and not x.error]
    chosen = json.loads(graded[0].spec)["chosen"]
    assert all(json.loads(x.spec)["chosen"] == chosen for x in graded)
    assert (chosen["instruction"], chosen["set"]) == ("strict", 0)  # ties go to the first set
    for candidate in chosen["candidates"]:
        expected = balanced_accuracy_score(
            y_true, [scripted(candidate["instruction"], x.response.text) for x in search.items]
        )
        assert candidate["balanced_accuracy"] == pytest.approx(expected)
    assert [c["balanced_accuracy"] for c in chosen["candidates"]] == [0, 0, 1, 1, 0.5, 0.5]
    assert chosen["calibration_balanced_accuracy"] == 1.0
    assert chosen["examples"] == search.candidates[2].examples
    assert chosen["search_items"] == 10 and chosen["search_calls"] == 60
    assert chosen["budget"] == 60 and chosen["dataset"] == "t"
    # The frozen prompt grades the test split: the chosen instruction and examples, right.
    for x in graded:
        assert raw(x)["shown"] == chosen["examples"] and raw(x)["chosen"] == chosen
        assert x.hallucinated is scripted("strict", _text(store, x.response_id))


def _text(store, response_id):
    return next(r.text for r in store.read(Response) if r.response_id == response_id)


def test_it_grades_the_test_split_only_and_evaluation_counts_only_those(tmp_path):
    store = build_run(tmp_path / "run", n=60)
    truth = human(store)
    opt = judge(budget=24, k=2)
    label(store, [opt])
    found = mine(store, opt.key)
    chosen = None
    for rid, x in found.items():
        if side(rid) == "calibration":
            assert x.hallucinated is None and not x.failed
            assert "in the calibration split, on which optimized_judge chose its prompt" in x.error
        elif not x.error:
            chosen = json.loads(x.spec)["chosen"]
    assert chosen is not None
    assert all(side(s) == "calibration" for s in chosen["examples"])
    assert sorted(truth[s] for s in chosen["examples"]) == [False, True]
    test_graded = [r for r, x in found.items() if x.hallucinated is not None]
    assert test_graded and all(side(r) == "test" for r in test_graded)
    agreement = evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=10))).agreement
    rows = agreement[(agreement["labeler"] == opt.key) & (agreement["slice"] == "all")]
    # Measured on the graded test responses with a human label, never on calibration ones.
    assert set(rows["n"]) == {sum(r in truth for r in test_graded)}


def test_the_search_respects_its_budget_and_a_rerun_pays_nothing(tmp_path, sent):
    store = build_run(tmp_path / "run", n=80)
    opt = judge(budget=50, repeats=2, temperature=0.5, instructions=["strict", "lenient"])
    responses, examples, labels = inputs(store)
    pool = opt.pool(responses, examples, labels)
    with CallCache(tmp_path / "calls.sqlite") as cache:
        found = opt.label_with(responses, examples, pool, cache=cache)
        chosen = next(json.loads(x.spec)["chosen"] for x in found if not x.error)
        # 50 // (4 candidates x 2 repeats) = 6 items; 4 x 6 x 2 = 48 calls <= 50.
        assert chosen["search_items"] == 6 and chosen["search_calls"] == 48
        n_test = sum(not x.error for x in found)
        assert sum(sent) == 48 + 2 * n_test
        sent.clear()
        again = opt.label_with(responses, examples, pool, cache=cache)
    assert sent == []
    assert [(x.hallucinated, x.spec) for x in again] == [(x.hallucinated, x.spec) for x in found]


def test_a_budget_below_two_items_per_candidate_is_refused():
    pattern = (
        r"^The 'budget' parameter of optimized_judge must be an int >= 24 \(2 search items "
        r"for each of 6 candidate prompts, 2 calls each\)\. Got 23 instead\.$"
    )
    with pytest.raises(InvalidInputError, match=pattern):
        judge(budget=23, repeats=2)
    with pytest.raises(InvalidInputError, match="'instructions' parameter .*Did you mean 'strict'"):
        judge(instructions=["strikt"])


@pytest.mark.parametrize(
    ("script", "retryable"),
    [({"fail_on": 'answer to grade: "Zorblax'}, False), ({"fail_every": 7}, True)],
)
def test_a_failed_search_fails_the_test_labels(tmp_path, script, retryable):
    store = build_run(tmp_path / "run", n=40)
    broken = {"name": "mock", "params": {**SCRIPT["params"], **script}}
    opt = registry.create("optimized_judge", judge=broken, budget=240)
    label(store, [opt])
    found = mine(store, opt.key)
    tested = [x for r, x in found.items() if side(r) == "test" and "empty" not in r]
    assert tested and all(x.failed and x.hallucinated is None for x in tested)
    assert all(x.retryable is retryable for x in tested)
    assert all("the prompt search on dataset 't' failed on" in x.error for x in tested)


def test_a_search_short_of_examples_or_items_says_why_and_calls_nothing(tmp_path, sent):
    example = Example(example_id="q", dataset="t", task="qa", question="?", references=("a",))
    pool = [
        Labelled(
            Response(response_id=f"q/{v}", example_id="q", model="m", text=v), example, v == "b"
        )
        for v in ("a", "b")
    ]
    # The one question's two answers are the worked examples: nothing is left to score them on.
    with pytest.raises(Unjudgeable, match="needs a calibration response of each verdict besides"):
        judge(k=2).plan_search("t", pool)
    with pytest.raises(Unjudgeable, match="4 worked examples need 2 of each verdict"):
        judge(k=4).plan_search("t", pool)
    store = build_run(tmp_path / "run", n=6)
    opt = judge(k=20)
    label(store, [opt])
    errors = {x.error for r, x in mine(store, opt.key).items() if side(r) == "test"}
    assert sent == [] and len(errors) == 1
    assert "20 worked examples need 10 of each verdict" in errors.pop()


def test_the_dry_run_plans_the_search_the_run_makes(tmp_path, sent):
    store = build_run(tmp_path / "run", n=60)
    opt = judge(budget=36)
    responses, examples, labels = inputs(store)
    plan = plan_calls(opt, responses, examples, labels=labels, show=1)
    assert sent == []
    label(store, [opt])
    found = mine(store, opt.key)
    graded = [x for x in found.values() if not x.error]
    chosen = json.loads(graded[0].spec)["chosen"]
    assert plan.search_requests == chosen["search_calls"] == 36
    assert plan.responses == len(graded) and plan.requests == 36 + len(graded) == sum(sent)
    assert worked_examples(plan.prompts[0])  # a test response's prompt, at a candidate's length


def test_label_dry_run_prints_the_cost_of_the_search(tmp_path, capsys, no_calls):
    rows = []
    for i in range(40):
        for answer, wrong in ((f"City{i}", 0), (f"Zorblax {i}", 1)):
            rows.append(
                {"qid": f"q{i}", "question": f"Capital {i}?", "references": f"City{i}"}
                | {"answer": answer, "wrong": wrong, "model": f"m{wrong}"}
            )
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    dataset = (
        f"files[path={path},text=answer,label=wrong,positive=1,negative=0,"
        "columns=example_id:qid,constants=task:qa]"
    )
    backend = "openai[model=m,base_url=http://127.0.0.1:9/v1,price_per_1k=1+2]"
    keys = f"optimized_judge[judge={backend},budget=48],fewshot_judge[judge={backend}]"
    run = tmp_path / "run"
    assert (
        main(["label", "--dry-run", "--show", "1", "-d", dataset, "-l", keys, "--out", str(run)])
        == 0
    )
    out = capsys.readouterr().out
    assert "of which the prompt search on the calibration split: 48 calls" in out
    assert out.count("worked examples:") == 2 and "cost: at most" in out
    assert not run.exists()
