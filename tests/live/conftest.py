"""`transformers serve` on 127.0.0.1 with a tiny random-weight Llama (see _tiny_llama.py).

The server is Hugging Face transformers' own OpenAI-compatible server
(``pip install 'realitycheck[serve]'``, i.e. ``transformers[serving]``): the
``transformers serve FOLDER --host 127.0.0.1 --port N --device cpu`` command,
run by the console script's function in a process forked from a warm parent
(_serve_zygote.py: a restart after a kill then takes about a second instead of
a cold start's 10-15 s). ``FOLDER`` is its pinned model (``FORCE_MODEL``): it
loads the folder with ``from_pretrained`` before it listens, and answers only
requests whose ``model`` is that folder's path (or none). Everything runs
offline (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``, its own ``HF_HOME``).
The model's greedy replies are noise full of verdict words ("no yes true
consistent ... incorrect inconsistent false"), cut off by ``max_tokens``.

What the server really does (transformers 5.24, probed with the ``openai``
SDK and plain HTTP on /v1/chat/completions and /v1/completions):

=========================  ==================================================
request field              what comes back
=========================  ==================================================
logprobs, top_logprobs     ignored: HTTP 200, ``logprobs`` absent (the SDK
                           reads None); also in streaming chunks
n                          ignored: one choice, whatever ``n`` asks
response_format            ignored (``json_schema`` and ``json_object``): free
                           text, no error
echo (completions)         ignored: the reply holds the completion only
top_k                      refused: HTTP 422 ``Unexpected fields in the
                           request: {'top_k'}`` (chat and completions)
seed                       honoured by seeding torch globally: two requests
                           with one seed agree when sent one after another
                           (concurrent requests share that global state)
temperature                0 means greedy (same reply twice); > 0 samples only
                           if the model's generation_config has
                           ``do_sample=True`` (it never turns sampling on)
max_tokens                 honoured (also ``max_completion_tokens``); 0 gives
                           HTTP 500 (``max_new_tokens must be greater than
                           0``); absent means up to 1024 new tokens
stop                       honoured, but the stop string is kept at the end
                           of the reply (OpenAI's API leaves it out)
finish_reason              ``length`` when the reply reached ``max_tokens``,
                           else ``stop`` (EOS or a stop string)
model                      another name than the pinned one: HTTP 400
                           ``Server is pinned to '<folder>'; requested '<m>'``;
                           absent: the pinned model. (Unpinned, a folder
                           path in ``model`` is loaded on demand, and an
                           unknown or absent name is an HTTP 500: the Hub
                           lookup fails offline.)
=========================  ==================================================

Ignored fields are logged once per set of names in the *server's* log
(``Ignoring unsupported fields in the request: {...}``); the client is told
nothing. After a 500 (an exception in the app) the server drops the
connection, and the client's next request on that kept-alive connection can
fail with a connection error. Requests are answered one at a time (one
inference thread), so concurrency does not shorten a stage; a call of this
model costs about 0.1 s plus 10-15 ms per generated token on a loaded core.
``/health`` answers 200 once the pinned model is loaded; ``/v1/models``
lists that model alone (its id is the folder path).

Fixtures: ``serve`` (one server per test module, on one port; a test may
kill it, and the next test gets it started again) and ``cli`` (runs a
``realitycheck`` command in this process and keeps its output, its logged
warnings and its exit code).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _live_server import TransformersServer, run_cli


@pytest.fixture(scope="module")
def _server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TransformersServer]:
    """One server for a test module (stopped when it ends, not kept for the rest of the suite)."""
    pytest.importorskip("fastapi", reason="needs pip install 'realitycheck[serve]'")
    pytest.importorskip("uvicorn", reason="needs pip install 'realitycheck[serve]'")
    pytest.importorskip("transformers", reason="needs pip install 'realitycheck[serve]'")
    server = TransformersServer(tmp_path_factory.mktemp("transformers-serve"))
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def serve(_server: TransformersServer, monkeypatch: pytest.MonkeyPatch) -> TransformersServer:
    """The running server (started again if a test killed it); no OpenAI settings leak in."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _server.start()
    return _server


@pytest.fixture
def cli(serve: TransformersServer):
    """:func:`_live_server.run_cli` against the running server: ``cli(args) -> Outcome``."""
    return lambda args: run_cli(serve, args)
