"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat / completions protocol.

An asyncio HTTP/1.1 server with keep-alive (one event loop in a daemon thread),
so a hundred concurrent connections cost no thread each.

Used by the backend tests and by ``benchmarks/openai_throughput.py`` (the one
implementation of the fake server). Answers are deterministic functions of the
prompt (:func:`expected_choice`), so a test can check what the client parsed
against what the server meant to send.

Faults are injected per prompt with a marker in the prompt text, applied to
that prompt's first attempts in order::

    "What is 2+2? [fault=429*2,drop]"   # attempts 1-2: 429, attempt 3: dropped, 4: answered

Kinds: ``429`` (with ``Retry-After: <server.retry_after>``), ``500``, ``503``,
``400``, ``401``, ``404``, ``501``, ``500format`` (a transient 500 whose message
happens to say "format"), ``slow`` (answers after ``server.slow_seconds``),
``malformed`` (200 with a truncated JSON body), ``drop`` (closes the socket
without a response), ``nologprobs`` (400 "logprobs are not supported" when
log-probs were asked for), ``onechoice`` (returns one choice whatever ``n``).

Server-wide knobs that play what real servers do (set them as attributes):
``ignores`` (fields the server ignores: ``"logprobs"``, ``"n"``,
``"response_format"``, ``"echo"``, as ``transformers serve`` does), ``n_cap``
(a 400 like ``llama-server``'s when ``n`` is larger), ``refuse_top_k`` (a 422
"Unexpected fields {'top_k'}"), ``refused_formats`` (``response_format`` types
answered with a 500, as ``llama-cpp-python`` does for ``json_schema``),
``format_mismatch`` (a 500 "output does not match the expected format" for
every ``json_schema`` request), ``logprobs_need_top`` (chat log-probs only when
``top_logprobs`` is sent, as ``llama-cpp-python``), ``zero_means_unlimited``
(``max_tokens: 0`` generates 1,000 tokens) and ``offset_shift`` (echoed
``text_offset`` shifted by that many characters, as ``llama-cpp-python`` with
SentencePiece). A request with a ``response_format`` the server honours is
answered with the JSON object ``{"answer": <text>}``.

Other server-wide knobs: ``latency`` (seconds before every answer),
``slow_after`` (after that many answered calls, every later call is slow) and
``fault_rate`` (that share of the attempts without a planned fault, chosen by
a hash of ``fault_seed``, the prompt and the attempt number, gets a fault; the
``fault_kinds`` take turns, so any four faults include each default kind).
``GET /_stats`` returns the counters as JSON (for a server in another process);
run as a script (``python _fake_openai_server.py --latency 0.02``) it prints
its URL on the first line and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import threading
from collections import Counter
from http import HTTPStatus
from typing import Any

VOCAB = (
    "the answer is Paris London 1889 blue seven a cat river old new tower king queen no "
    "yes maybe water fire Einstein Newton red green tall small"
).split()
_FAULT = re.compile(r"\[fault=([^\]]+)\]")


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("|".join(map(str, parts)).encode()).digest()


def expected_choice(
    prompt: str,
    index: int,
    *,
    temperature: float,
    max_tokens: int,
    top_logprobs: int = 0,
    seed: int | None = None,
) -> dict[str, Any]:
    """What the server answers for ``prompt`` as choice ``index`` (and ``seed``).

    Greedy requests (temperature 0) give the same sequence for every index.

    Returns:
        ``{"tokens", "token_logprobs", "top_logprobs", "text"}``; token ``i > 0``
        starts with a space, so ``text == "".join(tokens)``.
    """
    seed_bytes = _digest(prompt, 0 if temperature == 0 else index, seed)
    length = min(max_tokens, 3 + seed_bytes[0] % 6)
    tokens, values, tops = [], [], []
    for i in range(length):
        d = _digest(seed_bytes.hex(), i)
        word = VOCAB[d[0] % len(VOCAB)]
        token = word if i == 0 else " " + word
        value = -round(0.01 + d[1] / 64, 4)
        top = {token: value}
        for j in range(1, top_logprobs):
            alt = VOCAB[(d[0] + j) % len(VOCAB)]
            top[alt if i == 0 else " " + alt] = round(value - j * 0.5, 4)
        tokens.append(token)
        values.append(value)
        tops.append(top)
    return {
        "tokens": tokens,
        "token_logprobs": values,
        "top_logprobs": tops,
        "text": "".join(tokens),
    }


def prompt_of(body: dict[str, Any]) -> str:
    """The prompt text of a request body (chat: the message contents joined by newlines)."""
    if "messages" in body:
        return "\n".join(str(m.get("content", "")) for m in body["messages"])
    return str(body.get("prompt", ""))


def _faults(prompt: str) -> list[str]:
    match = _FAULT.search(prompt)
    if match is None:
        return []
    plan = []
    for item in match.group(1).split(","):
        kind, _, count = item.strip().partition("*")
        plan.extend([kind] * (int(count) if count else 1))
    return plan


class FakeOpenAIServer:
    """The server: one asyncio event loop in a daemon thread; a context manager.

    Args:
        latency: Seconds to wait before every answer.
        retry_after: The ``Retry-After`` header value sent with a 429.
        slow_seconds: How long a slow answer takes.
        slow_after: After this many answered calls every call is slow (``None``: never).
        port: The port to listen on (0: a free one).
        fault_rate: Share of the unplanned attempts that meet a fault.
        fault_kinds: The faults injected, in turn.
        fault_seed: Seed of the draw of the faulty attempts.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        retry_after: str = "0.2",
        slow_seconds: float = 2.0,
        slow_after: int | None = None,
        port: int = 0,
        fault_rate: float = 0.0,
        fault_kinds: tuple[str, ...] = ("429", "500", "slow", "drop"),
        fault_seed: int = 0,
    ) -> None:
        self.latency = latency
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.slow_after = slow_after
        self._port = port
        self.fault_rate = fault_rate
        self.fault_kinds = fault_kinds
        self.fault_seed = fault_seed
        self.ignores: set[str] = set()
        self.n_cap: int | None = None
        self.refuse_top_k = False
        self.refused_formats: set[str] = set()
        self.format_mismatch = False
        self.logprobs_need_top = False
        self.zero_means_unlimited = False
        self.offset_shift = 0
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    def reset(self) -> None:
        """Zero every counter."""
        with self._lock:
            self.calls = 0  # requests received on a completion endpoint
            self.answered = 0  # of those, answered with 200 and a full body
            self.in_flight = 0
            self.max_in_flight = 0
            self.attempts: Counter[str] = Counter()
            self.faults: Counter[str] = Counter()  # random faults injected, by kind
            self.bodies: list[dict[str, Any]] = []
            self.auth_headers: set[str] = set()

    @property
    def url(self) -> str:
        """The API root, ``http://127.0.0.1:PORT/v1``."""
        if not self._ready.is_set():
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._port}/v1"

    def stats(self) -> dict[str, int]:
        """The counters as plain data."""
        with self._lock:
            return {
                "calls": self.calls,
                "answered": self.answered,
                "max_in_flight": self.max_in_flight,
            }

    def start(self) -> FakeOpenAIServer:
        """Start serving in a daemon thread; return once the port is open."""
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the fake server did not start")
        return self

    def stop(self) -> None:
        """Stop serving; handlers still waiting are cancelled. Stopping twice is harmless."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        writers: set[asyncio.StreamWriter] = set()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writers.add(writer)
            try:
                await _Connection(self, reader, writer).run()
            finally:
                writers.discard(writer)
                writer.close()

        server = await asyncio.start_server(connection, "127.0.0.1", self._port, backlog=1024)
        self._port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        for writer in list(writers):
            writer.close()

    def answer(self, body: dict[str, Any], chat: bool) -> dict[str, Any]:
        """Build the response body for a request body."""
        prompt = prompt_of(body)
        if body.get("echo") and not chat and "echo" not in self.ignores:
            return _echo_answer(prompt, body, self.offset_shift)
        n = 1 if "n" in self.ignores else int(body.get("n") or 1)
        max_tokens = int(body.get("max_tokens") if body.get("max_tokens") is not None else 16)
        if max_tokens == 0 and self.zero_means_unlimited:
            max_tokens = 1000
        temperature = float(body.get("temperature", 1.0))
        if "logprobs" in self.ignores:
            k = -1
        elif chat:
            k = int(body.get("top_logprobs") or 0) if body.get("logprobs") else -1
            if self.logprobs_need_top and "top_logprobs" not in body:
                k = -1
        else:
            k = -1 if body.get("logprobs") is None else int(body["logprobs"])
        choices = []
        for i in range(n):
            exp = expected_choice(
                prompt,
                i,
                temperature=temperature,
                max_tokens=max_tokens,
                top_logprobs=k,
                seed=body.get("seed"),
            )
            if body.get("response_format") and "response_format" not in self.ignores:
                exp = {**exp, "text": json.dumps({"answer": exp["text"]})}
            choices.append(_choice(exp, i, chat=chat, top_logprobs=k))
        return {
            "id": "cmpl-" + _digest(prompt).hex()[:12],
            "object": "chat.completion" if chat else "text_completion",
            "model": body.get("model", ""),
            "choices": choices,
            "usage": {
                "prompt_tokens": len(prompt.split()),
                "completion_tokens": sum(len(c["_tokens"]) for c in choices),
                "total_tokens": len(prompt.split()) + sum(len(c["_tokens"]) for c in choices),
            },
        }


def echo_tokens(text: str) -> list[tuple[str, int, float | None]]:
    """The server's echo of ``text``: (token, character offset, log-prob) per token.

    A token is a run of non-space characters with the spaces before it; its
    log-prob is a hash of the text before it and itself (none for the first).
    """
    out: list[tuple[str, int, float | None]] = []
    for match in re.finditer(r"\s*\S+", text):
        token, start = match.group(0), match.start()
        d = _digest("echo", text[:start], token)
        out.append((token, start, None if start == 0 else -round(0.01 + d[0] / 32, 4)))
    return out


def _echo_answer(prompt: str, body: dict[str, Any], shift: int = 0) -> dict[str, Any]:
    """Answer an ``echo=True`` completions request: the prompt's tokens and log-probs.

    With ``max_tokens`` > 0 one generated token (``" gen"``) follows the echo.
    """
    echoed = echo_tokens(prompt)
    if int(body.get("max_tokens") or 0) > 0:
        echoed.append((" gen", len(prompt), -0.5))
        prompt += " gen"
    return {
        "id": "cmpl-" + _digest(prompt).hex()[:12],
        "object": "text_completion",
        "model": body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "text": prompt,
                "finish_reason": "length",
                "_tokens": [],
                "logprobs": {
                    "tokens": [t for t, _, _ in echoed],
                    "token_logprobs": [v for _, _, v in echoed],
                    "top_logprobs": [None] * len(echoed),
                    "text_offset": [o + shift for _, o, _ in echoed],
                },
            }
        ],
        "usage": {"prompt_tokens": len(echoed), "completion_tokens": 0},
    }


def _choice(exp: dict[str, Any], index: int, *, chat: bool, top_logprobs: int) -> dict[str, Any]:
    out: dict[str, Any] = {"index": index, "finish_reason": "stop", "_tokens": exp["tokens"]}
    if chat:
        out["message"] = {"role": "assistant", "content": exp["text"]}
        out["logprobs"] = None
        if top_logprobs >= 0:
            out["logprobs"] = {
                "content": [
                    {
                        "token": t,
                        "logprob": v,
                        "bytes": list(t.encode()),
                        "top_logprobs": [
                            {"token": a, "logprob": w, "bytes": list(a.encode())}
                            for a, w in top.items()
                        ][:top_logprobs],
                    }
                    for t, v, top in zip(
                        exp["tokens"], exp["token_logprobs"], exp["top_logprobs"], strict=True
                    )
                ]
            }
    else:
        out["text"] = exp["text"]
        out["logprobs"] = None
        if top_logprobs >= 0:
            offsets, pos = [], 0
            for t in exp["tokens"]:
                offsets.append(pos)
                pos += len(t)
            out["logprobs"] = {
                "tokens": exp["tokens"],
                "token_logprobs": exp["token_logprobs"],
                "top_logprobs": [dict(list(t.items())[:top_logprobs]) for t in exp["top_logprobs"]],
                "text_offset": offsets,
            }
    return out


class _Connection:
    """One keep-alive HTTP/1.1 connection: read a request, answer it, repeat."""

    def __init__(
        self, fake: FakeOpenAIServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.fake, self.reader, self.writer = fake, reader, writer

    async def run(self) -> None:
        while True:
            try:
                head = await self.reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            try:
                raw = await self.reader.readexactly(int(headers.get("content-length") or 0))
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if method == "GET" and path.rstrip("/").endswith("_stats"):
                self._send(200, json.dumps(self.fake.stats()).encode())
            elif method == "POST" and path.endswith("completions"):
                if not await self._post(path, headers, json.loads(raw or b"{}")):
                    return
            else:
                self._error(404, f"no route {method} {path}")
            try:
                await self.writer.drain()
            except ConnectionError:
                return

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        lines = [
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
            "Content-Type: application/json",
            f"Content-Length: {len(payload)}",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
        ]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        body = {"error": {"message": message, "type": "fake_error", "code": status}}
        self._send(status, json.dumps(body).encode(), headers)

    async def _post(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> bool:
        """Answer one completion request; ``False`` when the connection was dropped."""
        fake = self.fake
        prompt = prompt_of(body)
        with fake._lock:
            fake.calls += 1
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            fake.attempts[prompt] += 1
            attempt = fake.attempts[prompt]
            fake.bodies.append(body)
            fake.auth_headers.add(headers.get("authorization", ""))
            slow = fake.slow_after is not None and fake.answered >= fake.slow_after
        try:
            plan = _faults(prompt)
            fault = plan[attempt - 1] if attempt <= len(plan) else ("slow" if slow else "")
            if not fault and fake.fault_rate:
                draw = _digest("fault", fake.fault_seed, prompt, attempt)
                if draw[0] < fake.fault_rate * 256:
                    with fake._lock:  # the kinds take turns, so every kind is met early
                        n = sum(fake.faults.values())
                        fault = fake.fault_kinds[n % len(fake.fault_kinds)]
                        fake.faults[fault] += 1
            return await self._answer(body, path.endswith("/chat/completions"), fault)
        finally:
            with fake._lock:
                fake.in_flight -= 1

    async def _answer(self, body: dict[str, Any], chat: bool, fault: str) -> bool:
        fake = self.fake
        if fake.latency:
            await asyncio.sleep(fake.latency)
        refusal = self._refusal(body)
        if refusal is not None and not fault:
            status, message = refusal
            self._error(status, message)
            return True
        if fault in ("400", "401", "404", "500", "501", "503"):
            self._error(int(fault), f"injected {fault}")
        elif fault == "500format":
            self._error(500, "Internal error in the response format layer; please try again")
        elif fault == "429":
            self._error(429, "rate limited", {"Retry-After": fake.retry_after})
        elif fault == "drop":
            self.writer.close()  # no status line, no headers: the socket just closes
            return False
        elif fault == "nologprobs" and (body.get("logprobs") or body.get("top_logprobs")):
            self._error(400, "logprobs are not supported by this server")
        elif fault == "malformed":
            self._send(200, b'{"id": "cmpl-x", "choices": [{"index": 0, "text": "tru')
        else:
            if fault == "slow":
                await asyncio.sleep(fake.slow_seconds)
            if fault == "onechoice":
                body = {**body, "n": 1}
            response = fake.answer(body, chat)
            for choice in response["choices"]:
                choice.pop("_tokens")
            if self.writer.is_closing():
                return False  # the client gave up (timeout)
            self._send(200, json.dumps(response).encode())
            with fake._lock:
                fake.answered += 1
        return True

    def _refusal(self, body: dict[str, Any]) -> tuple[int, str] | None:
        """The error a real server of the configured kind answers ``body`` with, if any."""
        fake = self.fake
        n = int(body.get("n") or 1)
        if fake.n_cap is not None and n > fake.n_cap:
            return 400, f"Field 'n': Value must be between 1 <= value <= {fake.n_cap}, but got {n}"
        if fake.refuse_top_k and "top_k" in body:
            return 422, "Unexpected fields {'top_k'}"
        kind = (body.get("response_format") or {}).get("type")
        if kind in fake.refused_formats:  # llama-cpp-python 0.3.36's words, as recorded
            return 500, (
                "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
                f"'input': '{kind}'}}"
            )
        if kind == "json_schema" and fake.format_mismatch:
            return 500, "The output does not match the expected format"
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the fake OpenAI API until killed.")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = FakeOpenAIServer(latency=args.latency, port=args.port).start()
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
