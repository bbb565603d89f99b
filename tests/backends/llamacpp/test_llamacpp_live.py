"""The ``openai`` backend against a live ``llama-server`` (llama.cpp), when one is installed.

Runs when a ``llama-server`` binary is found: ``$LLAMA_SERVER``, else
``llama-server`` on ``PATH``; skipped otherwise. It serves the tiny
random-weight Llama beside this file (``tiny-llama-sp.gguf``, SentencePiece
vocabulary; how it and the binary were built is in
``test_llamacpp_replies.py``) on 127.0.0.1 and checks the behaviour the
recorded replies check, on the real thing: ``n`` above the server's cap is
filled with more calls, log-probs come back, a JSON-Schema judge request
ends in an answer instead of a retry loop, and scoring continuations (which
needs the prompt echoed) fails with a message that says why.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from realitycheck.backends import GenerationRequest
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.errors import BackendError

MODEL_FILE = Path(__file__).parent / "tiny-llama-sp.gguf"
MODEL = "tiny-llama-sp"
BINARY = os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
SLOTS = 4
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not BINARY,
        reason="no llama-server binary: set $LLAMA_SERVER to one or put llama-server on PATH "
        "(built from the llama-cpp-python sdist, see test_llamacpp_replies.py)",
    ),
]
SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "verdict": {"type": "string", "enum": ["correct", "incorrect"]},
        },
        "required": ["reason", "verdict"],
        "additionalProperties": False,
    },
    sort_keys=True,
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module", params=["model", "gemma"], ids=["own-template", "gemma-template"])
def llama_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Start ``llama-server`` on the tiny model; yield its API root; stop it.

    Twice: with the model's own chat template, and with the built-in ``gemma``
    one, whose replies the server parses (a reply cut off inside a JSON Schema
    is then a 500 instead of an unfinished 200).
    """
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        str(BINARY),
        "-m",
        str(MODEL_FILE),
        "--alias",
        MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--parallel",
        str(SLOTS),
        "--ctx-size",
        "4096",
        "--threads",
        "1",
    ]
    if request.param != "model":
        command += ["--chat-template", request.param]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"llama-server did not start ({' '.join(command)}):\n"
                    + log.read_text(errors="replace")[-2000:]
                )
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _backend(url: str, **params: object) -> OpenAIBackend:
    defaults: dict[str, object] = {
        "model": MODEL,
        "base_url": url,
        "backoff": 0.05,
        "timeout": 60.0,
        "max_retries": 6,
        "concurrency": 2,
    }
    return OpenAIBackend(**{**defaults, **params})


def _ask(**fields: object) -> GenerationRequest:
    messages = ({"role": "user", "content": "Is the proposed answer correct? Answer yes or no."},)
    return GenerationRequest(messages=messages, **fields)  # type: ignore[arg-type]


def test_n_above_the_slot_count_is_filled_with_more_calls(llama_server):
    (gen,) = _backend(llama_server).generate(
        [_ask(n=10, decoding="sampling", temperature=1.0, max_tokens=8, seed=3)]
    )
    assert gen.error == ""
    assert len(gen.texts) == 10


def test_logprobs_come_back_without_asking_for_alternatives(llama_server):
    (gen,) = _backend(llama_server).generate([_ask(max_tokens=4, logprobs=True)])
    assert gen.error == "" and gen.texts
    assert gen.token_logprobs and len(gen.token_logprobs[0]) == len(gen.tokens[0]) > 0
    assert all(v <= 0 for v in gen.token_logprobs[0])
    assert not getattr(gen, "unsupported", ())


def test_a_json_schema_judge_request_gets_an_answer_without_retrying_a_refusal(llama_server):
    started = time.monotonic()
    gens = _backend(llama_server, backoff=1.0).generate(
        [_ask(max_tokens=256, json_schema=SCHEMA, seed=k) for k in range(3)]
    )
    took = time.monotonic() - started
    # Six retries of a refusal at backoff 1 s sleep about 30 s per request.
    assert took < 15, f"{took:.0f} s for 3 judge requests: a refusal was retried"
    for gen in gens:
        assert gen.error == "" and len(gen.texts) == 1, gen.error


def test_scoring_continuations_fails_saying_the_prompt_was_not_echoed(llama_server):
    backend = _backend(llama_server, mode="completions")
    with pytest.raises(BackendError, match="not echo"):
        backend.loglik_tokens([("Question: What is the capital of France?\nAnswer:", " Paris")])
