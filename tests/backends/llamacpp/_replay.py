"""A local HTTP server that answers with replies captured from llama.cpp's two servers.

The replies under ``replies/<server>/`` were recorded from real servers (see
the docstring of ``test_llamacpp_replies.py``); each file holds the request
that was sent and the reply's status, headers and body, byte for byte. The
:class:`ReplayServer` picks the recorded reply whose request matches the one
it receives (:func:`route`) and sends its status, ``Content-Type`` and body
unchanged, so the client under test reads exactly what the real server sent.
A request no recording covers gets a 501 naming it, so a test fails instead of
reading an invented answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPLIES = Path(__file__).parent / "replies"
SERVERS = ("llama-cpp-python", "llama-server", "llama-server-gemma-template")
"""``llama-cpp-python``'s ``llama_cpp.server`` (A); llama.cpp's ``llama-server`` (B), with the
model's own chat template and with the built-in ``gemma`` one (which parses replies)."""
MODEL = "tiny-llama-sp"
"""The model name every recorded request carried (except the wrong-model one)."""
N_RECORDED = (1, 2, 3, 4, 10)
"""The ``n`` values recorded for chat completions."""


@cache
def recording(server: str, name: str) -> dict[str, Any]:
    """Return the recorded request and reply ``name`` of ``server``."""
    return json.loads((REPLIES / server / f"{name}.json").read_text(encoding="utf-8"))


def recordings(server: str) -> list[str]:
    """Return the names of ``server``'s recordings, sorted."""
    return sorted(p.stem for p in (REPLIES / server).glob("*.json"))


def route(path: str, body: dict[str, Any] | None) -> str:
    """Return the name of the recording that answers a request for ``path`` with ``body``.

    The recordings differ in one field each, so the field that differs picks
    the reply; a request for more sequences than were recorded gets the reply
    to ``n=10`` (both servers answer any ``n`` above their cap alike).
    """
    if path.endswith("/models") or body is None:
        return "models"
    if body.get("model") != MODEL:
        return "chat_wrong_model"
    if "messages" not in body:
        if not body.get("echo"):
            return "completions_logprobs"
        return "completions_echo_max0" if body.get("max_tokens") == 0 else "completions_echo_max1"
    form = body.get("response_format")
    if isinstance(form, dict) and form.get("type") == "json_schema":
        return "chat_json_schema_short" if body.get("max_tokens", 0) <= 16 else "chat_json_schema"
    if isinstance(form, dict) and form.get("type") == "json_object":
        return "chat_json_object_schema" if "schema" in form else "chat_json_object"
    if body.get("logprobs"):
        top = body.get("top_logprobs") or 0
        return {0: "chat_logprobs", 1: "chat_top_logprobs1"}.get(top, "chat_top_logprobs5")
    if "top_k" in body:
        return "chat_top_k"
    if body.get("max_tokens", 0) >= 256:
        return "chat_plain_judge"
    n = body.get("n", 1)
    return f"chat_n{n}" if n in N_RECORDED else "chat_n10"


class ReplayServer:
    """Answers each request on 127.0.0.1 with ``server``'s recorded reply (see :func:`route`).

    Attributes:
        server: Which server's recordings to serve.
        pin: A recording to answer every request with (``""``: the one :func:`route` picks).
        url: The API root (``http://127.0.0.1:<port>/v1``).
        bodies: The JSON body of every request received, in order.
        served: The recording name served for each request, in order.
    """

    def __init__(self, server: str, *, pin: str = "") -> None:
        self.server = server
        self.pin = pin
        self.bodies: list[dict[str, Any]] = []
        self.served: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                self._answer(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                self._answer(json.loads(self.rfile.read(length) or b"{}"))

            def _answer(self, body: dict[str, Any] | None) -> None:
                name = replay.pin or route(self.path, body)
                path = REPLIES / replay.server / f"{name}.json"
                with replay._lock:
                    if body is not None:
                        replay.bodies.append(body)
                    replay.served.append(name if path.exists() else f"<none: {name}>")
                if path.exists():
                    reply = recording(replay.server, name)["reply"]
                    status = reply["status"]
                    kind = reply["headers"].get("content-type", "application/json")
                    data = reply["body"].encode("utf-8")
                else:
                    status, kind = 501, "text/plain"
                    data = f"no recorded reply of {replay.server} for {name}".encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def posts(self, **fields: Any) -> list[dict[str, Any]]:
        """Return the bodies received whose fields equal ``fields`` (all received if none)."""
        return [b for b in self.bodies if all(b.get(k) == v for k, v in fields.items())]

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def replaying(server: str, *, pin: str = "") -> Iterator[ReplayServer]:
    """Run a :class:`ReplayServer` of ``server``'s recordings for the ``with`` block."""
    with ReplayServer(server, pin=pin) as replay:
        yield replay
