"""The ``openai`` backend on replies captured from llama.cpp's two servers (issue 23).

What was captured
-----------------
Both servers were built from the ``llama-cpp-python`` 0.3.36 sdist (PyPI; it
vendors llama.cpp at commit 0c1e570), CPU only, and run on 127.0.0.1:

- **A**, ``llama-cpp-python``'s own server (``replies/llama-cpp-python/``;
  uvicorn 0.54.0, fastapi 0.165.0), built in 1,025 s on 2 shared cores::

      pip download --no-binary :all: --no-deps llama-cpp-python
      CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DGGML_BLAS=OFF -DGGML_CUDA=OFF \
          -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_HIP=OFF -DGGML_OPENCL=OFF -DGGML_SYCL=OFF \
          -DGGML_RPC=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
          -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF" \
          pip install "./llama_cpp_python-0.3.36.tar.gz[server]"
      python -m llama_cpp.server --model tiny-llama-sp.gguf --model_alias tiny-llama-sp \
          --host 127.0.0.1 --port 8101

- **B**, llama.cpp's ``llama-server`` (``llama-server --version``: 0.5.0-dev,
  build 1, commit 0c1e570), built from the sdist's ``vendor/llama.cpp`` in 762 s::

      cmake -S vendor/llama.cpp -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
          -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
          -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
          -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF
      cmake --build build --target llama-server -j 2
      llama-server -m tiny-llama-sp.gguf --alias tiny-llama-sp --host 127.0.0.1 --port 8102

  recorded twice: with the model's own chat template (``replies/llama-server/``)
  and with ``--chat-template gemma`` (``replies/llama-server-gemma-template/``),
  a template whose replies the server parses, so that a reply cut off inside
  the JSON Schema is refused with a 500 ("The model produced output that does
  not match the expected peg-native format") instead of returned unfinished.

The model, ``tiny-llama-sp.gguf`` beside this file, is a random-weight Llama
(2 layers, hidden size 64, 4 heads, 2 KV heads, vocabulary 1,000, seed 23)
built from a ``LlamaConfig`` with ``transformers`` 5.24, with a SentencePiece
BPE tokenizer (byte fallback) trained with ``sentencepiece`` 0.2.3 on this
project's README and sources and loaded as ``LlamaTokenizer``; saved with
``save_pretrained`` and converted with the sdist's
``convert_hf_to_gguf.py --outtype f16`` (its ``gguf-py``).

Each request was sent once with ``http.client`` and its reply kept as it came:
status, the headers that matter (``Content-Type``, ``Content-Length``,
``Server``) and the body text. A file holds ``request`` (method, path, JSON
body), ``reply`` (``status``, ``headers``, ``body``), what the request tests,
and the server's version and command.

What the tests check
--------------------
:class:`_replay.ReplayServer` answers the backend's requests with those bytes
(the recording whose request matches, :func:`_replay.route`), and the tests
assert the behaviour issue 23 asks of the ``openai`` backend:

- a server that caps ``n`` (B refuses ``n > 4`` with a 400) or ignores it
  (A returns one sequence) still yields ``n`` sequences, the rest asked for in
  further calls;
- A returns no log-probs for ``logprobs: true`` alone, so the backend sends
  ``top_logprobs`` whenever it asks for log-probs, and an answer without them
  names what is missing (``Generation.unsupported``);
- a refused ``response_format`` (A: 500 on ``json_schema``; B with the gemma
  template: 500 on every structured form) falls back to ``json_object``, then
  plain text, without retrying the refusal;
- ``max_tokens: 0`` (A: "no limit") is never sent to score continuations, and
  A's ``text_offset`` (shifted by one character by SentencePiece's dummy-prefix
  space) does not move the prompt's last token into the continuation; B does
  not echo the prompt, and the backend says so after one call.

``test_llamacpp_live.py`` checks the same on a live ``llama-server`` when one is
installed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import pytest
from _replay import MODEL, SERVERS, ReplayServer, recording, recordings, replaying
from _schemas import JUDGE_SCHEMA

from realitycheck.backends import GenerationRequest
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.errors import BackendError

A, B, B_GEMMA = SERVERS
ASK = ({"role": "user", "content": "Is the proposed answer correct? Answer yes or no."},)


@pytest.fixture(autouse=True)
def _no_env_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _backend(replay: ReplayServer, **params: Any) -> OpenAIBackend:
    defaults: dict[str, Any] = {
        "model": MODEL,
        "base_url": replay.url,
        "backoff": 0.01,
        "timeout": 10.0,
        "max_retries": 6,
        "concurrency": 1,
    }
    return OpenAIBackend(**{**defaults, **params})


def _reply(server: str, name: str) -> dict[str, Any]:
    return json.loads(recording(server, name)["reply"]["body"])


# --- the recordings say what the issue says the servers do ---------------------------


@pytest.mark.parametrize("server", SERVERS)
def test_every_recording_holds_a_request_and_the_reply_as_sent(server):
    names = recordings(server)
    assert {"chat_n10", "chat_logprobs", "chat_json_schema", "completions_echo_max1"} <= set(names)
    for name in names:
        record = recording(server, name)
        assert record["server"] == server and record["version"] and record["command"]
        assert record["request"]["method"] in ("GET", "POST")
        reply = record["reply"]
        assert 200 <= reply["status"] < 600 and "content-type" in reply["headers"]
        if "json" in reply["headers"]["content-type"]:
            json.loads(reply["body"])


def _status(server: str, name: str) -> int:
    return int(recording(server, name)["reply"]["status"])


def test_the_recordings_show_the_differences_the_issue_names():
    # B caps n at its slot count (4); A ignores n.
    for b in (B, B_GEMMA):
        assert _status(b, "chat_n10") == 400 and len(_reply(b, "chat_n4")["choices"]) == 4
        assert "'n'" in _reply(b, "chat_n10")["error"]["message"]
    assert all(len(_reply(A, f"chat_n{n}")["choices"]) == 1 for n in (2, 3, 4, 10))
    # A drops log-probs unless top_logprobs is sent; B does not.
    assert _reply(A, "chat_logprobs")["choices"][0]["logprobs"] is None
    assert _reply(A, "chat_top_logprobs1")["choices"][0]["logprobs"]["content"]
    assert _reply(B, "chat_logprobs")["choices"][0]["logprobs"]["content"]
    # B gives a run of byte tokens that ends inside a UTF-8 character as one entry with the
    # last token's log-prob (4 tokens, 2 entries); A gives one entry per token.
    for server, entries in ((A, 4), (B, 2)):
        body = _reply(server, "chat_top_logprobs1")
        assert body["usage"]["completion_tokens"] == 4
        assert len(body["choices"][0]["logprobs"]["content"]) == entries
    # A refuses json_schema with a 500 and accepts json_object with a schema.
    assert _status(A, "chat_json_schema") == 500
    assert _status(A, "chat_json_object_schema") == 200
    # B honours the schema; a reply cut off by max_tokens is a 200 with its own template,
    # a 500 "does not match the expected peg-native format" with one whose replies it parses.
    assert _reply(B, "chat_json_schema")["choices"][0]["finish_reason"] == "length"
    assert _status(B_GEMMA, "chat_json_schema") == 500
    assert "does not match" in _reply(B_GEMMA, "chat_json_schema")["error"]["message"]
    assert _status(B_GEMMA, "chat_json_object") == 500
    assert _status(B_GEMMA, "chat_plain_judge") == 200
    # A reads max_tokens 0 as "no limit"; B does not echo the prompt.
    assert _reply(A, "completions_echo_max0")["usage"]["completion_tokens"] > 100
    for b in (B, B_GEMMA):
        echoed = _reply(b, "completions_echo_max1")["choices"][0]
        assert echoed["logprobs"] is None and not echoed["text"].startswith("Question")
    # Neither checks the model name; the same seed gives the same sample.
    for server in SERVERS:
        assert _status(server, "chat_wrong_model") == 200
        seeded = [_reply(server, f"chat_seed_{k}")["choices"][0]["message"] for k in "ab"]
        assert seeded[0] == seeded[1]


@pytest.mark.parametrize("server", SERVERS)
def test_the_replay_serves_the_recorded_bytes(server):
    import urllib.request

    with replaying(server) as replay:
        record = recording(server, "chat_n2")
        body = json.dumps(record["request"]["body"]).encode()
        request = urllib.request.Request(
            replay.url + "/chat/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request) as got:
            assert got.status == record["reply"]["status"]
            assert got.read().decode("utf-8") == record["reply"]["body"]
    assert replay.served == ["chat_n2"]


# --- n: capped (B) or ignored (A), the rest asked for in more calls --------------------


@pytest.mark.parametrize("server", SERVERS)
def test_n_the_server_caps_or_ignores_is_filled_with_more_calls(server):
    with replaying(server) as replay:
        request = GenerationRequest(
            messages=ASK, n=10, decoding="sampling", temperature=1.0, max_tokens=8, seed=5
        )
        (gen,) = _backend(replay).generate([request])
    assert gen.error == "" and not gen.retryable
    assert len(gen.texts) == 10
    answered = [name for name in replay.served if not name.startswith("<none")]
    assert answered == replay.served, f"requests no recording covers: {replay.served}"
    if server != A:
        # One refusal of n=10 at most, then calls within the cap of 4.
        refused = [b for b in replay.bodies if b.get("n", 1) > 4]
        assert len(refused) <= 1, [b.get("n") for b in replay.bodies]
        assert len(replay.bodies) <= 1 + 3
    else:
        assert len(replay.bodies) <= 10 + 1


@pytest.mark.parametrize("server", SERVERS)
def test_n_within_the_cap_takes_one_call(server):
    with replaying(server) as replay:
        request = GenerationRequest(
            messages=ASK, n=2, decoding="sampling", temperature=1.0, max_tokens=8
        )
        (gen,) = _backend(replay).generate([request])
    assert gen.error == "" and len(gen.texts) == 2
    expected_calls = 1 if len(_reply(server, "chat_n2")["choices"]) == 2 else 2
    assert len(replay.bodies) == expected_calls


# --- log-probs: A drops them unless top_logprobs is sent -------------------------------


@pytest.mark.parametrize("server", SERVERS)
def test_logprobs_are_asked_for_with_top_logprobs(server):
    with replaying(server) as replay:
        request = GenerationRequest(messages=ASK, max_tokens=4, logprobs=True)
        (gen,) = _backend(replay).generate([request])
    assert gen.error == ""
    asked = [b for b in replay.bodies if b.get("logprobs")]
    assert asked and all(b.get("top_logprobs", 0) >= 1 for b in asked), replay.bodies
    content = _reply(server, replay.served[-1])["choices"][0]["logprobs"]["content"]
    assert gen.token_logprobs == (tuple(t["logprob"] for t in content),)
    assert not gen.unsupported


def test_a_reply_without_logprobs_is_named_unsupported_with_one_warning(caplog):
    # A's reply to "logprobs": true alone, whatever was asked: the answer says what is
    # missing, and one warning (for two requests) names the server, the model and the field.
    caplog.set_level(logging.WARNING)
    with replaying(A, pin="chat_logprobs") as replay:
        request = GenerationRequest(messages=ASK, max_tokens=4, logprobs=True, top_logprobs=2)
        gens = _backend(replay).generate([request, dataclasses.replace(request, seed=1)])
    text = _reply(A, "chat_logprobs")["choices"][0]["message"]["content"]
    for gen in gens:
        assert gen.texts == (text,) and gen.token_logprobs == ()
        assert {"logprobs", "top_logprobs"} <= set(gen.unsupported)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    about = [w for w in warned if replay.url in w and MODEL in w and "'logprobs'" in w]
    assert len(about) == 1, warned


# --- structured output: A refuses json_schema with a 500 --------------------------------


def _judge_request(seed: int = 0) -> GenerationRequest:
    return GenerationRequest(messages=ASK, json_schema=JUDGE_SCHEMA, max_tokens=256, seed=seed)


def _follows_schema(text: str) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return (
        isinstance(data, dict)
        and set(data) == {"reason", "verdict"}
        and data["verdict"] in ("correct", "incorrect")
    )


def _form(body: dict[str, Any]) -> str:
    form = body.get("response_format")
    return form.get("type", "?") if isinstance(form, dict) else "text"


@pytest.mark.parametrize("server", SERVERS)
def test_a_refused_json_schema_falls_back_without_retrying_the_refusal(server):
    with replaying(server) as replay:
        (gen,) = _backend(replay).generate([_judge_request()])
    forms = [_form(b) for b in replay.bodies]
    assert forms.count("json_schema") <= 2, forms  # a deterministic 500 is not retried 6 times
    assert len(forms) <= 4, forms
    assert gen.error == "" and len(gen.texts) == 1, (gen.error, forms)
    # The answer followed the schema, or says it did not, or was cut off by max_tokens
    # (B's grammar held, the reply is unfinished: the judge reads it as truncated).
    followed = _follows_schema(gen.texts[0])
    cut = gen.finish_reasons == ("length",) and forms[-1] == "json_schema"
    assert followed or cut or "json_schema" in gen.unsupported, (gen, forms)


def test_after_a_refusal_the_form_that_works_is_sent_for_the_rest_of_the_run():
    with replaying(A) as replay:
        gens = _backend(replay).generate([_judge_request(seed) for seed in range(5)])
    forms = [_form(b) for b in replay.bodies]
    assert all(g.error == "" and g.texts for g in gens), [g.error for g in gens]
    assert forms.count("json_schema") <= 2, forms
    assert len(forms) <= 5 + 2, forms


def test_a_is_sent_the_schema_with_json_object_after_refusing_json_schema():
    # A refuses json_schema but constrains json_object to a schema sent with it, so
    # the first fallback keeps the schema and the judge's reply follows it.
    with replaying(A) as replay:
        (gen,) = _backend(replay).generate([_judge_request()])
    objects = [b["response_format"] for b in replay.bodies if _form(b) == "json_object"]
    assert objects, [_form(b) for b in replay.bodies]
    assert all(form.get("schema") == json.loads(JUDGE_SCHEMA) for form in objects), objects
    assert _follows_schema(gen.texts[0]), gen.texts


def test_json_object_with_the_schema_is_what_a_follows():
    # The recording behind the fallback: A constrains json_object to a schema sent with it.
    text = _reply(A, "chat_json_object_schema")["choices"][0]["message"]["content"]
    assert _follows_schema(text)
    assert not _follows_schema(_reply(A, "chat_json_object")["choices"][0]["message"]["content"])


# --- scoring continuations: max_tokens 0 and A's text_offset ----------------------------

PROMPT = "Question: What is the capital of France?\nAnswer:"
CONT = " Paris"


def _echo_logprobs(server: str) -> dict[str, Any]:
    return _reply(server, "completions_echo_max1")["choices"][0]["logprobs"]


def test_a_shifts_text_offset_by_one_character_with_sentencepiece():
    # The recording: the first echoed token is SentencePiece's dummy-prefix space, which
    # is not in the echoed text, yet every offset counts it.
    body = _reply(A, "completions_echo_max1")
    logprobs = body["choices"][0]["logprobs"]
    tokens, offsets = logprobs["tokens"], logprobs["text_offset"]
    assert tokens[0] == " " and body["choices"][0]["text"].startswith(PROMPT + CONT)
    starts = [sum(len(t) for t in tokens[1:i]) for i in range(1, len(tokens))]
    assert offsets[1:] == [s + 1 for s in starts]
    assert offsets[tokens.index(" P", 1)] == len(PROMPT) + 1


def test_scoring_a_continuation_never_sends_max_tokens_0():
    with replaying(A) as replay:
        _backend(replay, mode="completions").loglik_tokens([(PROMPT, CONT)])
    assert replay.bodies, "no call was made"
    assert all(b.get("max_tokens") != 0 for b in replay.bodies), replay.bodies
    assert all(b["prompt"] == PROMPT + CONT and b.get("echo") for b in replay.bodies)


def test_scoring_a_continuation_on_a_counts_only_its_own_tokens():
    with replaying(A, pin="completions_echo_max1") as replay:
        (values,) = _backend(replay, mode="completions").loglik_tokens([(PROMPT, CONT)])
    logprobs = _echo_logprobs(A)
    generated = _reply(A, "completions_echo_max1")["usage"]["completion_tokens"]
    echoed = len(logprobs["tokens"]) - generated
    # The continuation is the shortest run of echoed tokens that spells it (" P", "ar", "is"),
    # not the prompt's last token (":") that the shifted offsets put after the prompt.
    k = next(
        k for k in range(1, echoed) if "".join(logprobs["tokens"][echoed - k : echoed]) == CONT
    )
    assert values == tuple(logprobs["token_logprobs"][echoed - k : echoed])


@pytest.mark.parametrize("server", [B, B_GEMMA])
def test_scoring_a_continuation_on_b_fails_once_saying_the_prompt_was_not_echoed(server):
    with replaying(server) as replay:
        backend = _backend(replay, mode="completions")
        with pytest.raises(BackendError, match="not echo"):
            backend.loglik_tokens([(PROMPT, CONT)])
    assert len(replay.bodies) == 1, "a server that does not echo fails the same way every time"


# --- top_k: both servers take it ---------------------------------------------------------


@pytest.mark.parametrize("server", SERVERS)
def test_top_k_is_sent_and_the_sample_read(server):
    with replaying(server) as replay:
        request = GenerationRequest(
            messages=ASK, decoding="top_k", top_k=40, temperature=1.0, max_tokens=8
        )
        (gen,) = _backend(replay).generate([request])
    assert [b.get("top_k") for b in replay.bodies] == [40]
    assert gen.error == ""
    assert gen.texts == (_reply(server, "chat_top_k")["choices"][0]["message"]["content"],)
