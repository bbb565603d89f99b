"""Fault injection: a faulty server and kill -9 mid-stage, then a resume equals a clean run.

A local OpenAI-compatible server (tests/backends/_fake_openai_server.py) answers
generation, the ``qa_judge`` labeler and semantic entropy's entailment judge.
Each of three cycles runs ``generate``, ``label`` and ``detect`` in CLI
processes while 30% of the server's attempts fail (429, 500, a reply slower
than the client's timeout, a dropped connection), and kills each process
with SIGKILL after a seeded number of server calls. A final uninterrupted
resume must then leave every record exactly once, with the values of a run
made without faults or kills.

The CLI processes are forked from one warm process (tests/runner/_cli_zygote.py)
so the test pays the imports once; each is killed like any process.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import realitycheck
from realitycheck.store import RunStore

pytest.importorskip("openai")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")

TESTS = Path(__file__).resolve().parents[1]
ZYGOTE = Path(__file__).with_name("_cli_zygote.py")
SRC = Path(realitycheck.__file__).resolve().parents[1]
FAULT_RATE = 0.3
CYCLES = 3
SEED = 0
MOST = {"generate": 20, "label": 6, "detect": 12}


def _fake_module() -> Any:
    name = "_fake_openai_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TESTS / "backends" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


FAKE = _fake_module()


class JudgingServer(FAKE.FakeOpenAIServer):
    """The fake server, replying to the two judges' prompts with a verdict fixed by the prompt."""

    def answer(self, body: dict[str, Any], chat: bool) -> dict[str, Any]:
        """Answer as the fake server does; judge prompts get a parseable verdict."""
        out = super().answer(body, chat)
        prompt = FAKE.prompt_of(body)
        coin = hashlib.sha256(prompt.encode()).digest()[0] % 2 == 1
        if "answer to grade" in prompt:
            text = json.dumps({"verdict": "correct" if coin else "incorrect"})
        elif "must Answer B also be true" in prompt:
            text = "yes" if coin else "no"
        else:
            return out
        for choice in out["choices"]:
            if chat:
                choice["message"]["content"] = text
            else:
                choice["text"] = text
        return out


class Zygote:
    """The warm process that forks one CLI process per command."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ZYGOTE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[dict[str, int]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def run(
        self,
        argv: list[str],
        log: Path,
        *,
        server: Any,
        kill_after_calls: int | None = None,
        delay: float = 0.0,
        timeout: float = 120.0,
    ) -> dict[str, int]:
        """Run one command; SIGKILL it once the server has had ``kill_after_calls`` more calls.

        Returns ``{"code": N}`` when it ended by itself, ``{"signal": 9}`` when killed.
        """
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"argv": ["-q", *argv], "log": str(log)}) + "\n")
        self.proc.stdin.flush()
        pid = self.lines.get(timeout=60)["pid"]
        start, deadline = server.stats()["calls"], time.monotonic() + timeout
        while True:
            try:
                return self.lines.get(timeout=0.002)
            except queue.Empty:
                pass
            if kill_after_calls is not None and server.stats()["calls"] - start >= kill_after_calls:
                time.sleep(delay)
                os.kill(pid, signal.SIGKILL)
                kill_after_calls = None
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                pytest.fail(f"{argv[0]} did not end within {timeout} s; see {log}")

    def close(self) -> None:
        """End the warm process."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def server():
    with JudgingServer(latency=0.005, retry_after="0.01", slow_seconds=1.0) as fake:
        yield fake


@pytest.fixture
def zygote(monkeypatch):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}
    env["OPENAI_API_KEY"] = "sk-fault-injection"
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    warm = Zygote(env)
    yield warm
    warm.close()


def _commands(url: str, data_dir: Path, run: Path) -> dict[str, list[str]]:
    backend = (
        f"openai[model=fake,base_url={url},timeout=0.5,max_retries=10,backoff=0.01,concurrency=2]"
    )
    common = ["-d", "nq-open", "--data-dir", str(data_dir), "--no-cache", "--out", str(run)]
    return {
        "generate": [
            "generate",
            *common,
            "--limit",
            "8",
            "-b",
            backend,
            "--plan",
            "default[n_samples=2]",
            "--batch-size",
            "2",
        ],
        "label": ["label", *common, "-l", f"qa_judge[judge={backend}]"],
        "detect": [
            "detect",
            *common,
            "-D",
            f"length,semantic_entropy[equivalence=llm,judge={backend}]",
        ],
    }


COLUMNS = {
    "responses": ["response_id", "example_id", "model", "prompt_variant", "text", "samples"],
    "labels": ["response_id", "labeler", "hallucinated", "category", "error"],
    "scores": ["response_id", "detector", "value", "error"],
}


def _tables(run: Path) -> dict[str, pd.DataFrame]:
    store = RunStore(run)
    out = {}
    for table, columns in COLUMNS.items():
        frame = store.frame(table)[columns]
        frame = frame.assign(samples=frame["samples"].map(list)) if table == "responses" else frame
        out[table] = frame.sort_values(columns[:2]).reset_index(drop=True)
    return out


def test_kill_9_and_a_faulty_server_then_a_resume_equal_a_clean_run(
    tmp_path, data_dir, server, zygote
):
    clean, faulty = tmp_path / "clean", tmp_path / "faulty"
    log = tmp_path / "cli.log"
    for argv in _commands(server.url, data_dir, clean).values():
        assert zygote.run(argv, log, server=server) == {"code": 0}, log.read_text()
    expected = _tables(clean)
    assert len(expected["responses"]) == 8 and len(expected["labels"]) == 8
    assert len(expected["scores"]) == 16
    # Not vacuous: the judges' verdicts parsed both ways, every score computed.
    assert set(expected["labels"]["hallucinated"]) == {True, False}
    assert (expected["labels"]["error"] == "").all() and (expected["scores"]["error"] == "").all()
    assert expected["scores"]["value"].notna().all()

    server.reset()
    server.fault_rate = FAULT_RATE
    rng = np.random.default_rng(SEED)
    commands = _commands(server.url, data_dir, faulty)
    outcomes = []
    for _ in range(CYCLES):
        for name, argv in commands.items():
            # Killed after 1 to MOST[name] server calls, then 0-10 ms more; a stage
            # with less left to do than that ends by itself.
            calls, delay = int(rng.integers(1, MOST[name] + 1)), float(rng.uniform(0, 0.01))
            ended = zygote.run(argv, log, server=server, kill_after_calls=calls, delay=delay)
            outcomes.append((name, calls, ended))
    killed = {name for name, _, ended in outcomes if ended == {"signal": 9}}
    assert killed == set(commands), outcomes  # each stage was killed at least once
    for argv in commands.values():  # the resume, faults still on
        assert zygote.run(argv, log, server=server) == {"code": 0}, log.read_text()

    assert set(server.faults) == {"429", "500", "slow", "drop"}, server.faults  # each was met
    got = _tables(faulty)
    for table, frame in expected.items():
        keys = COLUMNS[table][:2] if table != "responses" else ["response_id"]
        assert not got[table].duplicated(keys).any(), f"{table}: a record is stored twice"
        pd.testing.assert_frame_equal(got[table], frame, check_dtype=False, obj=table)
