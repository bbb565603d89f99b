"""``plan_calls`` and ``label --dry-run``: prompts, tokens and cost, with nothing called."""

from __future__ import annotations

import json
import math

import pytest

from realitycheck import Example, Response
from realitycheck.backends import CallCache
from realitycheck.backends.mock import MockBackend
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.cli import main
from realitycheck.labelers import estimate_tokens, plan_calls
from realitycheck.labelers.qa_judge import QAJudge

QA = Example(example_id="q", dataset="t", task="qa", question="Capital?", references=("Paris",))
OPEN = Example(example_id="o", dataset="t", task="open", question="Hi?")
EXAMPLES = {"q": QA, "o": OPEN}
RESPONSES = [
    Response(response_id="a", example_id="q", model="m", text="Paris"),
    Response(response_id="b", example_id="q", model="m", text="Lyon"),
    Response(response_id="c", example_id="q", model="m", text="Paris"),  # the same call as "a"
    Response(response_id="d", example_id="o", model="m", text="Hello"),  # no references
]


def test_estimate_tokens_is_four_characters_a_token():
    assert [estimate_tokens(t) for t in ("", "abc", "abcd", "abcde")] == [0, 1, 1, 2]


def test_plan_counts_calls_tokens_and_cost_without_calling(no_calls):
    backend = OpenAIBackend(
        model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1", price_per_1k=(0.15, 0.6)
    )
    judge = QAJudge(judge=backend, repeats=2, temperature=0.5, max_tokens=100)
    plan = plan_calls(judge, RESPONSES, EXAMPLES, show=1)
    prompts = [judge.prompt(r, QA) for r in RESPONSES[:2]]
    assert plan.prompts == (prompts[0],)
    assert (plan.responses, plan.unjudgeable, plan.requests, plan.cached) == (3, 1, 6, 2)
    assert plan.prompt_tokens == 2 * sum(math.ceil(len(p) / 4) for p in prompts)
    assert plan.completion_tokens == 4 * 100
    expected = plan.prompt_tokens / 1000 * 0.15 + plan.completion_tokens / 1000 * 0.6
    assert plan.price_per_1k == (0.15, 0.6) and plan.cost == pytest.approx(expected)


def test_plan_counts_what_the_cache_already_answers(tmp_path):
    judge = QAJudge(judge=MockBackend(reply="correct"))
    with CallCache(tmp_path / "calls.sqlite") as cache:
        judge.label(RESPONSES[:1], EXAMPLES, cache=cache)
        plan = plan_calls(judge, RESPONSES, EXAMPLES, cache=cache)
    assert (plan.requests, plan.cached) == (3, 2)  # "a" is cached and "c" repeats it
    assert plan.cost is None and plan.price_per_1k is None  # the mock has no price


def test_label_dry_run_prints_prompts_and_cost_and_writes_nothing(tmp_path, capsys, no_calls):
    rows = [
        {
            "qid": "q1",
            "task": "qa",
            "question": "Capital?",
            "answer": "Paris",
            "references": "Paris",
        },
        {
            "qid": "q2",
            "task": "qa",
            "question": "Capital?",
            "answer": "Rome",
            "references": "Paris",
        },
    ]
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    dataset = f"files[path={path},text=answer,columns=example_id:qid]"
    judge = "qa_judge[judge=openai[model=m,base_url=http://127.0.0.1:9/v1,price_per_1k=1+2]]"
    run, cache = tmp_path / "run", tmp_path / "cache"
    args = ["label", "--dry-run", "--show", "1", "-d", dataset, "-l", f"{judge},rouge_l"]
    assert main([*args, "--out", str(run), "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert out.count("=== DATA ===") == 1 and 'answer to grade: "Paris"' in out
    assert "calls: 2 (0 free: cached or repeated), 2 to pay for" in out
    assert "at most 512 completion" in out and "cost: at most" in out
    assert "rouge_l: computed locally, no model calls." in out
    assert not run.exists() and not cache.exists()


def test_dry_run_on_a_generated_run_plans_its_stored_responses(tmp_path, data_dir, capsys):
    run = str(tmp_path / "run")
    common = ["-d", "nq_open", "--data-dir", str(data_dir), "--out", run]
    generate = ["generate", *common, "--limit", "3", "-b", "mock[reply=Paris]", "--no-cache"]
    assert main(["-q", *generate, "--plan", "greedy"]) == 0
    capsys.readouterr()
    key = "qa_judge[judge=mock[reply=correct]]"
    assert main(["-q", "label", *common, "-l", key, "--dry-run", "--show", "1"]) == 0
    out = capsys.readouterr().out
    assert "dry run: 3 responses" in out
    assert "calls: 3 (0 free: cached or repeated), 3 to pay for" in out
    assert '"Paris"' in out
