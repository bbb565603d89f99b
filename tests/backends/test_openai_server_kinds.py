"""The openai backend against what real servers do: n capped or ignored, features dropped.

The fake server plays each real server's habit (see ``_fake_openai_server``'s
knobs): ``transformers serve`` ignores logprobs, n and response_format;
``llama-server`` caps n; ``llama-cpp-python`` drops log-probs without
``top_logprobs`` and refuses ``json_schema``; OpenAI refuses ``top_k``.
"""

from __future__ import annotations

import json
import logging

import pytest
from _fake_openai_server import echo_tokens, expected_choice
from _schemas import JUDGE_SCHEMA

from realitycheck.backends import CallCache, GenerationRequest, cached_generate, usage_of
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.backends.openai._loglik import echoed_continuation, token_offsets
from realitycheck.backends.openai._server import facts_for
from realitycheck.errors import FatalBackendError, InvalidInputError

SCHEMA = json.dumps({"type": "object", "properties": {"answer": {"type": "string"}}})
LOGGER = "realitycheck.backends.openai"


def _sampled(prompt: str, **kw) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, decoding="sampling", temperature=1.0, **kw)


def test_a_capped_n_is_filled_with_more_calls_and_counted(make_backend, server, caplog):
    server.n_cap = 4
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        (gen,) = make_backend().generate([_sampled("q", n=10, seed=5)])
    assert gen.error == "" and len(gen.texts) == 10
    assert [b["n"] for b in server.bodies] == [10, 4, 4, 2]
    assert [b["seed"] for b in server.bodies[1:]] == [5, 6, 7]
    assert gen.usage["calls"] == 3 and usage_of([gen]).calls == 3
    assert "caps 'n' at 4" in caplog.text and server.url in caplog.text
    # The cap is remembered: the next request is sent within it from the start.
    server.reset()
    make_backend().generate([_sampled("r", n=6)])
    assert [b["n"] for b in server.bodies] == [4, 2]


def test_a_server_that_ignores_logprobs_is_named_once_and_not_cached(
    make_backend, server, caplog, tmp_path
):
    server.ignores = {"logprobs", "n"}
    backend = make_backend()
    requests = [_sampled(f"q{i}", n=2, logprobs=True, top_logprobs=2) for i in range(3)]
    with caplog.at_level(logging.WARNING, logger=LOGGER), CallCache(tmp_path / "c") as cache:
        gens = cached_generate(backend, requests, cache=cache)
        assert all(g.unsupported == ("logprobs", "top_logprobs") for g in gens)
        assert all(g.texts and g.token_logprobs == () for g in gens)
        assert len(cache) == 0
        assert usage_of(gens).calls == 6 == server.calls
        cached_generate(backend, requests, cache=cache)
        assert server.calls == 12  # asked again: nothing degraded was stored
    warnings = [r.getMessage() for r in caplog.records if "'logprobs'" in r.getMessage()]
    assert len(warnings) == 1
    assert server.url in warnings[0] and "fake-model" in warnings[0]


def test_chat_logprobs_send_top_logprobs_for_llama_cpp_python(make_backend, server):
    server.logprobs_need_top = True
    (gen,) = make_backend().generate([GenerationRequest(prompt="q", logprobs=True)])
    assert server.bodies[0]["top_logprobs"] == 1 and gen.unsupported == ()
    assert gen.token_logprobs and gen.top_logprobs == ()


def test_top_k_on_openai_is_refused_before_any_call(monkeypatch):
    monkeypatch.setenv("RC_KEY", "sk-x")
    backend = OpenAIBackend(model="gpt-4o-mini", api_key_env="RC_KEY")
    with pytest.raises(InvalidInputError, match="refuses the 'top_k' parameter") as info:
        backend.generate(
            [GenerationRequest(prompt="q", decoding="top_k", temperature=1.0, top_k=40)]
        )
    assert "again" not in str(info.value)


def test_a_server_refusing_top_k_fails_each_such_request_and_answers_the_rest(make_backend, server):
    server.refuse_top_k = True
    backend = make_backend()
    request = GenerationRequest(prompt="q", decoding="top_k", temperature=1.0, top_k=40)
    (gen,) = backend.generate([request])
    assert not gen.retryable and server.calls == 1
    assert "refuses the 'top_k' parameter" in gen.error and "422" in gen.error
    assert server.url in gen.error and "fake-model" in gen.error
    # Learned mid-run: a later batch is not refused as bad input (the stage would stop
    # with exit 2 after a batch ran); each top_k request fails, named, without a call.
    later = [
        GenerationRequest(prompt="r", decoding="top_k", temperature=1.0, top_k=40),
        _sampled("s"),
        GenerationRequest(prompt="t", decoding="top_k", temperature=0.7, top_k=5),
    ]
    failed, answered, failed_too = backend.generate(later)
    assert answered.error == "" and answered.texts
    for g in (failed, failed_too):
        assert g.error.startswith("TopKRefused:") and not g.retryable and g.texts == ()
        assert "refuses the 'top_k' parameter" in g.error and "422" in g.error
        assert "was not sent" in g.error and "again to retry" not in g.error
    assert [b["messages"][0]["content"] for b in server.bodies] == ["q", "s"]


@pytest.mark.parametrize(
    ("refused", "mismatch", "forms", "unsupported"),
    [
        # json_object with the schema beside it is followed: nothing is missing.
        ({"json_schema"}, False, ["json_schema", "json_object+schema", "json_object+schema"], ()),
        (
            {"json_schema", "json_object"},
            False,
            ["json_schema", "json_object+schema", "json_object", None, None],
            ("json_schema",),  # plain text at last: the reply does not follow the schema
        ),
        (set(), True, ["json_schema", "json_object+schema", "json_object+schema"], ()),
    ],
)
def test_a_refused_json_schema_falls_back_for_the_rest_of_the_run(
    make_backend, server, refused, mismatch, forms, unsupported, caplog
):
    server.refused_formats = refused
    server.format_mismatch = mismatch
    backend = make_backend(max_retries=6)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        (first,) = backend.generate([GenerationRequest(prompt="a", json_schema=SCHEMA)])
        (second,) = backend.generate([GenerationRequest(prompt="b", json_schema=SCHEMA)])
    formats = [b.get("response_format") or {} for b in server.bodies]
    sent = [f.get("type", "") + ("+schema" if "schema" in f else "") or None for f in formats]
    assert sent == forms  # one refusal per form, never seven retries
    assert all(f["schema"] == json.loads(SCHEMA) for f in formats if "schema" in f)
    assert first.error == second.error == ""
    assert first.unsupported == second.unsupported == unsupported
    assert "refused response_format 'json_schema'" in caplog.text
    ignored = [r for r in caplog.records if "did not follow" in r.getMessage()]
    assert len(ignored) == len(unsupported), caplog.text  # warned only when it did not follow


@pytest.mark.parametrize("max_tokens", [64, 2])  # 2: cut off by the length limit
def test_a_server_that_ignores_response_format_is_named(make_backend, server, max_tokens, caplog):
    server.ignores = {"response_format"}
    request = GenerationRequest(prompt="a", json_schema=SCHEMA, max_tokens=max_tokens)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        (gen,) = make_backend().generate([request])
    assert gen.unsupported == ("json_schema",)
    assert "'response_format'" in caplog.text and "'json_schema'" in caplog.text
    assert facts_for(server.url, "fake-model").schema_ignored
    server.ignores = set()
    (honoured,) = make_backend().generate([GenerationRequest(prompt="b", json_schema=SCHEMA)])
    assert honoured.unsupported == () and json.loads(honoured.texts[0])["answer"]


def test_answered_calls_of_a_failed_request_are_kept_and_the_rerun_asks_the_rest(
    make_backend, server, tmp_path
):
    # Two calls answer one sequence each, then the server fails for good this run.
    prompt = "q [fault=onechoice*2,500*4]"
    request = _sampled(prompt, n=4, seed=10)
    backend = make_backend(max_retries=3)
    with CallCache(tmp_path / "calls.sqlite") as cache:
        (failed,) = cached_generate(backend, [request], cache=cache)
        assert failed.error and failed.retryable and failed.texts == ()
        assert server.calls == 6 and usage_of([failed]).calls == 2
        posts = len(server.bodies)
        (done,) = cached_generate(backend, [request], cache=cache)
        rest = server.bodies[posts:]
        assert [(b["n"], b["seed"]) for b in rest] == [(2, 12)]  # only the missing ones
        assert done.error == "" and len(done.texts) == 4 and usage_of([done]).calls == 1
        expected = [
            expected_choice(prompt, i, temperature=1.0, max_tokens=64, seed=seed)["text"]
            for i, seed in ((0, 10), (0, 11), (0, 12), (1, 12))
        ]
        assert list(done.texts) == expected
        (again,) = cached_generate(backend, [request], cache=cache)
        assert again.cached and again.texts == done.texts and len(server.bodies) == posts + 1


def test_loglik_never_sends_max_tokens_0_and_ignores_the_generated_token(make_backend, server):
    server.zero_means_unlimited = True
    (values,) = make_backend(mode="completions").loglik_tokens([("the answer is", " Paris")])
    assert server.bodies[0]["max_tokens"] == 1
    assert values == (echo_tokens("the answer is Paris")[-1][2],)


def test_offsets_shifted_by_one_character_are_rebuilt_from_the_token_texts(make_backend, server):
    server.offset_shift = 1
    (values,) = make_backend(mode="completions").loglik_tokens([("Q: who?\nA:", " Einstein")])
    assert values == (echo_tokens("Q: who?\nA: Einstein")[-1][2],)


def test_a_sentencepiece_echo_with_a_prefix_space_is_read_by_token_text():
    # The shape llama-cpp-python sends: tokens decoded with SentencePiece's prefix
    # space, offsets one character on; the prompt's last token must stay in the prompt.
    text = "Q: A"
    tokens = [" Q", ":", " A", " gen"]
    data = {
        "choices": [
            {
                "text": text + " gen",
                "logprobs": {
                    "tokens": tokens,
                    "token_logprobs": [None, -1.0, -2.0, -3.0],
                    "text_offset": [1, 2, 3, 5],
                },
            }
        ]
    }
    assert token_offsets(tokens, [1, 2, 3, 5], text) == [0, 1, 2, 4]
    assert echoed_continuation(data, prompt="Q:", continuation=" A") == (-2.0,)


@pytest.mark.parametrize(
    ("ignored", "message"),
    [({"echo"}, "did not echo the prompt"), ({"echo", "logprobs"}, "does not echo prompt log")],
)
def test_a_server_that_ignores_echo_says_so_at_once(make_backend, server, ignored, message):
    server.ignores = ignored
    backend = make_backend(mode="completions", max_retries=6)
    with pytest.raises(FatalBackendError, match=message):
        backend.loglik_tokens([("the answer is", " Paris")])
    assert server.calls == 1  # the same reply would come again: no retries


# llama-cpp-python 0.3.36's echo of "Question: What is the capital of France?\nAnswer: Paris"
# (max_tokens 1, a SentencePiece vocabulary), as recorded: a prefix-space token first and
# every offset one character on, then the generated token "op".
_RECORDED_ECHO = [
    (" ", 0, None),
    ("Q", 1, -6.8216),
    ("ue", 2, -6.7551),
    ("st", 4, -6.9908),
    ("ion", 6, -7.0624),
    (":", 9, -6.8445),
    (" ", 10, -6.7308),
    ("W", 11, -6.9153),
    ("h", 12, -6.7264),
    ("at", 13, -6.6697),
    (" is", 15, -6.9138),
    (" the", 18, -6.7460),
    (" c", 22, -6.8942),
    ("ap", 24, -6.9148),
    ("it", 26, -6.7117),
    ("al", 28, -6.8559),
    (" of", 30, -7.0338),
    (" F", 33, -7.0403),
    ("ra", 35, -6.9159),
    ("n", 37, -6.8737),
    ("ce", 38, -6.9977),
    ("?", 40, -7.0340),
    ("\n", 41, -6.6536),
    ("A", 42, -6.8302),
    ("n", 43, -7.0184),
    ("sw", 44, -6.5480),
    ("er", 46, -6.9435),
    (":", 48, -7.0113),
    (" P", 49, -7.0335),
    ("ar", 51, -7.0182),
    ("is", 53, -6.9946),
    ("op", 55, -6.2900),
]


def test_the_recorded_llama_cpp_python_echo_counts_only_the_option_tokens():
    prompt, option = "Question: What is the capital of France?\nAnswer:", " Paris"
    data = {
        "choices": [
            {
                "text": prompt + option + "op",
                "logprobs": {
                    "tokens": [t for t, _, _ in _RECORDED_ECHO],
                    "token_logprobs": [v for _, _, v in _RECORDED_ECHO],
                    "text_offset": [o for _, o, _ in _RECORDED_ECHO],
                },
            }
        ]
    }
    # Read by the server's offsets, the prompt's ":" (offset 48) would count to the option.
    assert echoed_continuation(data, prompt=prompt, continuation=option) == (
        -7.0335,
        -7.0182,
        -6.9946,
    )


def test_a_transient_500_that_says_format_is_retried_and_keeps_the_form(make_backend, server):
    prompt = "a [fault=500format*2]"
    backend = make_backend(max_retries=6)
    (gen,) = backend.generate([GenerationRequest(prompt=prompt, json_schema=SCHEMA)])
    assert gen.error == "" and gen.unsupported == () and server.attempts[prompt] == 3
    (later,) = backend.generate([GenerationRequest(prompt="b", json_schema=SCHEMA)])
    forms = [(b.get("response_format") or {}).get("type") for b in server.bodies]
    assert forms == ["json_schema"] * 4  # never downgraded for the rest of the run
    assert later.error == "" and later.unsupported == ()


def _recorded_choices(server: str, name: str):
    from pathlib import Path

    from realitycheck.backends.openai._parse import parse_choices

    path = Path(__file__).parent / "llamacpp" / "replies" / server / f"{name}.json"
    reply = json.loads(path.read_text(encoding="utf-8"))["reply"]
    return parse_choices(json.loads(reply["body"]), chat=True)[0]


def test_llama_cpp_pythons_recorded_json_object_with_schema_reply_is_not_unsupported():
    from realitycheck.backends.openai._server import missing_features

    request = GenerationRequest(prompt="q", json_schema=JUDGE_SCHEMA, max_tokens=256)
    followed = _recorded_choices("llama-cpp-python", "chat_json_object_schema")
    assert followed[0].text.startswith("{") and followed[0].finish_reason == "stop"
    assert missing_features(request, followed, chat=True) == ()
    # Its bare json_object reply ('{"" :null}') did not follow the schema, and is named.
    bare = _recorded_choices("llama-cpp-python", "chat_json_object")
    assert missing_features(request, bare, chat=True) == ("json_schema",)


def test_judge_answers_from_a_server_that_ignores_the_schema_are_cached(
    make_backend, server, tmp_path, caplog
):
    from realitycheck import Example, Response
    from realitycheck.labelers.qa_judge import QAJudge

    server.ignores = {"response_format"}
    examples = {
        "q": Example(
            example_id="q", dataset="t", task="qa", question="Capital?", references=("Paris",)
        )
    }
    responses = [
        Response(response_id=f"r{i}", example_id="q", model="m", text=text)
        for i, text in enumerate(["Paris.", "Lyon.", "Rome."])
    ]
    judge = QAJudge(judge=make_backend())
    with caplog.at_level(logging.WARNING, logger=LOGGER), CallCache(tmp_path / "c") as cache:
        first = judge.label(responses, examples, cache=cache)
        calls = server.calls
        assert calls == 3 and all(b["response_format"] for b in server.bodies)
        assert all(json.loads(x.raw)["schema_followed"] == [False] for x in first), first
        second = judge.label(responses, examples, cache=cache)
    assert server.calls == calls  # the second run makes no call
    replies = [json.loads(x.raw)["replies"] for x in first]
    assert [json.loads(x.raw)["replies"] for x in second] == replies
    assert [x.category for x in second] == [x.category for x in first]
    assert all(json.loads(x.raw)["usage"]["cached"] == 1 for x in second), second
    warnings = [r.getMessage() for r in caplog.records if "did not follow" in r.getMessage()]
    assert len(warnings) == 1 and "cached" in warnings[0], warnings
