"""The live tests' `transformers serve` process and CLI runner (see conftest.py)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

READY_SECONDS = 180.0  # a cold start takes about 10 s; the machine may be loaded
STOP_SECONDS = 15.0
ZYGOTE = Path(__file__).with_name("_serve_zygote.py")
_POST = re.compile(r'"POST /v1/(?:chat/)?completions HTTP/1\.[01]" (\d{3})')
# The line `transformers serve` logs as it starts on a request: "[Request received] ..."
# up to 5.24 (always), "Request <id>: model ..." from 5.25 (with --enable-log-requests).
_RECEIVED = re.compile(r"\[Request received\] |\bRequest \S+: model ")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TransformersServer:
    """`transformers serve` pinned to the tiny model folder, on one port, restartable.

    The server processes are forked from a warm process (_serve_zygote.py), so
    a restart after a kill costs a model load, not the imports.
    """

    def __init__(self, root: Path) -> None:
        self.model = str(root / "tiny-llama")
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = root / "server.log"
        self.pid: int | None = None
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HOME": str(root / "hf-home"),
            "PYTHONUNBUFFERED": "1",
            "TOKENIZERS_PARALLELISM": "false",
            # A 32-wide model gains nothing from threads; the cores are shared.
            "OMP_NUM_THREADS": "1",
        }
        with self.log.open("ab") as out:
            self.zygote = subprocess.Popen(
                [sys.executable, str(ZYGOTE), self.model],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=out,
                env=env,
                text=True,
            )
        ready = self._reply()
        self.log_requests = bool(ready.get("log_requests"))
        if not ready.get("ready"):
            self.close()
            pytest.fail(f"the tiny model was not built: {ready}\n{self.tail()}")

    def _reply(self) -> dict[str, object]:
        assert self.zygote.stdout is not None
        ready, _, _ = select.select([self.zygote.stdout], [], [], READY_SECONDS)
        line = self.zygote.stdout.readline() if ready else ""
        if not line:
            pytest.fail(f"the server's warm process ended:\n{self.tail()}")
        return dict(json.loads(line))

    def start(self) -> None:
        """Start the server and wait until it answers ``/health`` (or fail with its log)."""
        if self.alive():
            return
        argv = ["serve", self.model, "--host", "127.0.0.1", "--port", str(self.port)]
        argv += ["--device", "cpu"]
        if self.log_requests:  # a log line per request, which received() counts
            argv += ["--enable-log-requests"]
        assert self.zygote.stdin is not None
        self.zygote.stdin.write(json.dumps({"argv": argv, "log": str(self.log)}) + "\n")
        self.zygote.stdin.flush()
        self.pid = int(str(self._reply()["pid"]))
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if not self.alive():
                pytest.fail(f"transformers serve ended before it was ready:\n{self.tail()}")
            if self._healthy():
                return
            time.sleep(0.1)
        self.kill()
        pytest.fail(f"transformers serve was not ready within {READY_SECONDS} s:\n{self.tail()}")

    def _healthy(self) -> bool:
        url = self.base_url.removesuffix("/v1") + "/health"
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                return bool(reply.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def alive(self) -> bool:
        """Whether the server process is running (its warm parent reaps it when it ends)."""
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def _signal(self, signum: int, wait: float) -> bool:
        if self.alive():
            assert self.pid is not None
            os.killpg(self.pid, signum)
        deadline = time.monotonic() + wait
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self.alive()

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if not self._signal(signal.SIGKILL, STOP_SECONDS):
            pytest.fail(f"transformers serve (pid {self.pid}) survived SIGKILL")

    def stop(self) -> None:
        """Stop the server cleanly (SIGTERM), killing it if it does not end in time."""
        if not self._signal(signal.SIGTERM, STOP_SECONDS):
            self.kill()

    def close(self) -> None:
        """Stop the server and end its warm parent."""
        self.stop()
        if self.zygote.stdin is not None:
            self.zygote.stdin.close()
        try:
            self.zygote.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.zygote.kill()
            self.zygote.wait()
        if self.zygote.stdout is not None:
            self.zygote.stdout.close()

    def posts(self) -> list[int]:
        """HTTP status of every generation request the server answered so far (its access log)."""
        return [int(m.group(1)) for m in _POST.finditer(self.log.read_text(errors="replace"))]

    def received(self) -> int:
        """Generation requests the server has started on so far (it logs each one)."""
        return len(_RECEIVED.findall(self.log.read_text(errors="replace")))

    def tail(self, lines: int = 40) -> str:
        """The end of the server's log."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def backend(self, **params: object) -> str:
        """An ``openai`` backend key for this server; ``params`` add or override fields."""
        fields: dict[str, object] = {"model": self.model, "base_url": self.base_url}
        fields.update(params)
        return "openai[" + ",".join(f"{k}={v}" for k, v in fields.items()) + "]"


@dataclass
class Outcome:
    """What one CLI command did: its exit code, terminal text and logged warnings."""

    exit_code: int
    output: str
    warnings: list[str]
    calls: list[int]  # HTTP status of each generation request the server answered

    @property
    def text(self) -> str:
        """Everything the user saw: the terminal text and the logged warnings."""
        return self.output + "\n" + "\n".join(self.warnings)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def run_cli(server: TransformersServer, args: Sequence[str]) -> Outcome:
    """Run ``realitycheck ARGS`` in this process, as the console script does.

    It calls the console script's function, so the exit code is the one a
    shell would see; its terminal text (stdout and stderr), its logged
    warnings and the server's answers to it are kept.
    """
    from realitycheck.cli import main

    before = len(server.posts())
    collect = _Collect()
    root = logging.getLogger()
    root.addHandler(collect)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["-q", *args])
    finally:
        root.removeHandler(collect)
    return Outcome(code, out.getvalue() + err.getvalue(), collect.messages, server.posts()[before:])
