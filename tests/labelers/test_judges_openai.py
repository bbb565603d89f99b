"""The judges against a real OpenAI-compatible HTTP server on 127.0.0.1 that answers by prompt."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import _fake_openai_server
import pytest

from realitycheck import Example, Response
from realitycheck.backends import CallCache
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.labelers.factuality_judge import FactualityJudge
from realitycheck.labelers.qa_judge import QAJudge

pytest.importorskip("openai")


FAKE = _fake_openai_server

# What the scripted server replies, by the answer quoted in the prompt.
SCRIPT = (
    (r'answer to grade: "Paris', '{"reason": "same city", "verdict": "correct"}'),
    (r'answer to grade: "Lyon', 'The answer names another city.\n{"verdict": "incorrect"}'),
    (r'answer to grade: "I cannot', '{"reason": "declines", "verdict": "refuse"}'),
    (r'answer to grade: "Cut', '{"verdict": "incorrect", "reason": "a correct answer would'),
    (r'answer to grade: "Empty', ""),
    (r'submitted answer: "Paris', 'Step 1: same facts.\n{"reasoning": "same", "choice": "C"}'),
    (r'submitted answer: "Lyon', "D"),
)


class ScriptedServer(FAKE.FakeOpenAIServer):
    """The backend tests' fake server, replying with :data:`SCRIPT` instead of random words."""

    def answer(self, body: dict[str, Any], chat: bool) -> dict[str, Any]:
        """Answer as the fake server does, with the scripted text as every choice's content."""
        out = super().answer(body, chat)
        prompt = FAKE.prompt_of(body)
        text = next((reply for pattern, reply in SCRIPT if re.search(pattern, prompt)), "???")
        for choice in out["choices"]:
            if chat:
                choice["message"]["content"] = text
            else:
                choice["text"] = text
        return out


@pytest.fixture
def server() -> Iterator[Any]:
    with ScriptedServer() as fake:
        yield fake


@pytest.fixture
def backend(server, monkeypatch) -> OpenAIBackend:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return OpenAIBackend(
        model="judge-model",
        base_url=server.url,
        backoff=0.01,
        timeout=5.0,
        max_retries=2,
        price_per_1k=(0.5, 1.5),
    )


QA = Example(
    example_id="q", dataset="t", task="qa", question="Capital of France?", references=("Paris",)
)
EXAMPLES = {"q": QA}


def _responses(*texts: str) -> list[Response]:
    return [
        Response(response_id=f"r{i}", example_id="q", model="m", text=t)
        for i, t in enumerate(texts)
    ]


def test_qa_judge_over_http_parses_each_reply_and_records_tokens_and_cost(backend, server):
    texts = ("Paris.", "Lyon.", "I cannot say.", "Cut short", "Empty reply", "Gibberish")
    labels = QAJudge(judge=backend).label(_responses(*texts), EXAMPLES)
    got = [(x.category, x.hallucinated) for x in labels]
    assert got == [
        ("correct", False),
        ("incorrect", True),
        ("refuse", True),
        ("incorrect", True),
        ("invalid", None),
        ("invalid", None),
    ]
    assert all(x.error == "" for x in labels[:4])
    assert [x.unreadable for x in labels] == [0, 0, 0, 0, 1, 1]
    assert all(x.error.startswith("no verdict in the judge's reply") for x in labels[4:])
    # The first reply is the JSON object the schema asks for; whether each followed it is kept.
    assert json.loads(labels[0].raw)["schema_followed"] == [True]
    usage = json.loads(labels[0].raw)["usage"]
    assert usage["prompt_tokens"] > 100 and usage["completion_tokens"] > 0
    expected = usage["prompt_tokens"] / 1000 * 0.5 + usage["completion_tokens"] / 1000 * 1.5
    assert usage["cost"] == pytest.approx(expected)
    body = server.bodies[0]
    assert body["temperature"] == 0.0 and body["messages"][0]["role"] == "user"
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert schema["properties"]["verdict"]["enum"] == ["incorrect", "refuse", "correct"]


def test_structured_false_or_completions_mode_sends_no_response_format(backend, server):
    QAJudge(judge=backend, structured=False).label(_responses("Paris"), EXAMPLES)
    completions = OpenAIBackend(**{**backend.params(), "mode": "completions"})
    (label,) = QAJudge(judge=completions).label(_responses("Paris"), EXAMPLES)
    assert label.category == "correct"
    assert [("response_format" in b, "prompt" in b) for b in server.bodies] == [
        (False, False),
        (False, True),
    ]


def test_factuality_judge_over_http(backend):
    labels = FactualityJudge(judge=backend).label(_responses("Paris", "Lyon"), EXAMPLES)
    assert [(x.category, x.hallucinated) for x in labels] == [("C", False), ("D", True)]


def test_a_rerun_through_the_cache_sends_nothing(backend, server, tmp_path):
    judge = QAJudge(judge=backend, repeats=3, temperature=0.7)
    responses = _responses("Paris.", "I cannot say.")  # both replies follow the JSON schema
    with CallCache(tmp_path / "calls.sqlite") as cache:
        first = judge.label(responses, EXAMPLES, cache=cache)
        calls = server.calls
        assert calls == 6 and {b["seed"] for b in server.bodies} == {0, 1, 2}
        again = judge.label(responses, EXAMPLES, cache=cache)
    assert server.calls == calls
    assert [x.hallucinated for x in again] == [x.hallucinated for x in first] == [False, True]


def test_a_reply_that_ignored_the_schema_is_read_and_cached(backend, server, tmp_path):
    # "Lyon" is answered with prose before the JSON: the server did not follow the schema.
    # The reply is still an answer (its conclusion is read), so it is cached like any other.
    with CallCache(tmp_path / "calls.sqlite") as cache:
        (first,) = QAJudge(judge=backend).label(_responses("Lyon."), EXAMPLES, cache=cache)
        assert first.category == "incorrect"
        assert json.loads(first.raw)["schema_followed"] == [False]
        calls = server.calls
        (again,) = QAJudge(judge=backend).label(_responses("Lyon."), EXAMPLES, cache=cache)
    assert server.calls == calls  # not asked again
    assert again.category == "incorrect" and json.loads(again.raw)["schema_followed"] == [False]


def test_rate_limits_are_retried_and_server_errors_become_retryable_error_labels(
    backend, server, tmp_path
):
    # 503 throughout: overloaded, so retryable.
    texts = ("Paris [fault=429]", "Lyon [fault=503*9]", "Paris, France [fault=503,429]")
    with CallCache(tmp_path / "calls.sqlite") as cache:
        labels = QAJudge(judge=backend).label(_responses(*texts), EXAMPLES, cache=cache)
        ok, failed, recovered = labels
        assert (ok.category, ok.error) == ("correct", "")
        assert (recovered.category, recovered.error) == ("correct", "")
        assert failed.hallucinated is None and failed.retryable is True
        assert "503" in failed.error and "failed on 1 of 1 calls" in failed.error
        # The resumed run asks again only what failed.
        before = server.calls
        QAJudge(judge=backend).label(_responses(*texts), EXAMPLES, cache=cache)
        assert server.calls - before == 3  # the 503s, after the backend's own retries


def test_a_refused_request_is_a_permanent_error(backend):
    (label,) = QAJudge(judge=backend).label(_responses("Paris [fault=400]"), EXAMPLES)
    assert label.hallucinated is None and label.retryable is False and "400" in label.error


def test_a_reply_slower_than_the_timeout_is_a_retryable_error(server, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.slow_seconds = 1.0
    impatient = OpenAIBackend(
        model="judge-model", base_url=server.url, backoff=0.01, timeout=0.2, max_retries=1
    )
    (label,) = QAJudge(judge=impatient).label(_responses("Paris [fault=slow*2]"), EXAMPLES)
    assert label.hallucinated is None and label.retryable is True
    assert "timed out" in label.error
