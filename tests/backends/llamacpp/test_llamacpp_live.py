"""The ``openai`` backend against live llama.cpp servers, when they are installed.

``llama-server`` (llama.cpp) runs when a binary is found: ``$LLAMA_SERVER``,
else ``llama-server`` on ``PATH``; it is started twice, with the model's own
chat template and with the built-in ``gemma`` one, whose replies the server
parses (a reply cut off inside a JSON Schema is then a 500 instead of an
unfinished 200). ``llama-cpp-python``'s server runs when ``$LLAMA_CPP_PYTHON``
names a Python that has ``llama-cpp-python[server]``. Each is skipped, saying
why, when it is not there.

The servers load the tiny random-weight Llama beside this file
(``tiny-llama-sp.gguf``, SentencePiece vocabulary; how it and the servers were
built is in ``test_llamacpp_replies.py``) on 127.0.0.1, and the tests check on
the real thing what the recorded replies check: ``n`` above what the server
gives is filled with more calls, log-probs come back, a JSON-Schema judge
request ends in an answer without retrying a refusal, and scoring
continuations either counts the continuation's own tokens (A) or fails at
once saying the prompt was not echoed (B).
"""

from __future__ import annotations

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
from _schemas import JUDGE_SCHEMA

from realitycheck.backends import GenerationRequest
from realitycheck.backends.openai import OpenAIBackend
from realitycheck.errors import BackendError

MODEL_FILE = Path(__file__).parent / "tiny-llama-sp.gguf"
MODEL = "tiny-llama-sp"
LLAMA_SERVER = os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
LLAMA_CPP_PYTHON = os.environ.get("LLAMA_CPP_PYTHON", "")
SLOTS = 4
PROMPT = "Question: What is the capital of France?\nAnswer:"
CONT = " Paris"
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(server: str, port: int) -> list[str]:
    """Return the command that serves the tiny model as ``server`` on ``port``; skip if absent."""
    where = ["--host", "127.0.0.1", "--port", str(port)]
    if server == "llama-cpp-python":
        if not LLAMA_CPP_PYTHON:
            pytest.skip(
                "no llama-cpp-python server: set $LLAMA_CPP_PYTHON to a Python that has "
                "llama-cpp-python[server] (see test_llamacpp_replies.py for the build)"
            )
        model = ["--model", str(MODEL_FILE), "--model_alias", MODEL, "--n_threads", "1"]
        return [LLAMA_CPP_PYTHON, "-m", "llama_cpp.server", *model, *where]
    if not LLAMA_SERVER:
        pytest.skip(
            "no llama-server binary: set $LLAMA_SERVER to one or put llama-server on PATH "
            "(built from the llama-cpp-python sdist, see test_llamacpp_replies.py)"
        )
    command = [LLAMA_SERVER, "-m", str(MODEL_FILE), "--alias", MODEL, *where]
    command += ["--parallel", str(SLOTS), "--ctx-size", "4096", "--threads", "1"]
    if server == "llama-server-gemma-template":
        command += ["--chat-template", "gemma"]
    return command


@pytest.fixture(
    scope="module", params=["llama-server", "llama-server-gemma-template", "llama-cpp-python"]
)
def live(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start the server named by the parameter on the tiny model; yield its name and API root."""
    port = _free_port()
    command = _command(request.param, port)
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"{request.param} did not start ({' '.join(command)}):\n"
                    + log.read_text(errors="replace")[-2000:]
                )
            time.sleep(0.2)
        yield request.param, f"http://127.0.0.1:{port}/v1"
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


def test_n_above_what_the_server_gives_is_filled_with_more_calls(live):
    _, url = live
    (gen,) = _backend(url).generate(
        [_ask(n=10, decoding="sampling", temperature=1.0, max_tokens=8, seed=3)]
    )
    assert gen.error == ""
    assert len(gen.texts) == 10


def test_logprobs_come_back_without_asking_for_alternatives(live):
    _, url = live
    (gen,) = _backend(url).generate([_ask(max_tokens=4, logprobs=True)])
    assert gen.error == "" and gen.texts
    assert gen.token_logprobs and len(gen.token_logprobs[0]) == len(gen.tokens[0]) > 0
    assert all(v <= 0 for v in gen.token_logprobs[0])
    assert not gen.unsupported


def test_a_json_schema_judge_request_gets_an_answer_without_retrying_a_refusal(live):
    _, url = live
    started = time.monotonic()
    gens = _backend(url, backoff=1.0).generate(
        [_ask(max_tokens=256, json_schema=JUDGE_SCHEMA, seed=k) for k in range(3)]
    )
    took = time.monotonic() - started
    # Six retries of a refusal at backoff 1 s sleep about 30 s per request.
    assert took < 15, f"{took:.0f} s for 3 judge requests: a refusal was retried"
    for gen in gens:
        assert gen.error == "" and len(gen.texts) == 1, gen.error


def test_scoring_a_continuation_counts_its_tokens_or_says_the_prompt_was_not_echoed(live):
    server, url = live
    backend = _backend(url, mode="completions")
    if server == "llama-cpp-python":
        (values,) = backend.loglik_tokens([(PROMPT, CONT)])
        # " Paris" is three tokens of this vocabulary: " P", "ar", "is".
        assert len(values) == 3 and all(v < 0 for v in values)
    else:
        started = time.monotonic()
        with pytest.raises(BackendError, match="not echo"):
            backend.loglik_tokens([(PROMPT, CONT)])
        assert time.monotonic() - started < 5, "a server that does not echo was asked again"
