"""Throughput of the ``openai`` backend vs plain ``httpx`` and a sequential SDK loop.

Starts the test suite's fake OpenAI server (``tests/backends/_fake_openai_server.py``,
the one implementation) in its own process with a fixed latency per request,
then in one run:

1. a plain sequential loop over the official SDK's synchronous client
   (``OpenAI(...).chat.completions.create``), the old baseline;
2. the ``openai`` backend at concurrency 1, 8, 32 and 128 (same server);
3. at concurrency 32 and 128, alternating for ``--rounds`` rounds on fresh
   prompts: the backend against plain ``httpx`` posting exactly the bodies
   the backend sends, in two shapes (one ``AsyncClient`` under a semaphore;
   one client per 16 connections, the pool shape the backend used before it
   went through the SDK), the faster of the two being the baseline (issue
   13's target, since dropped by issue 23: the backend now goes through the
   SDK's client, and ``openai_throughput_label.py`` holds it to a plain SDK
   script instead);
4. a 2,000-call job through :func:`cached_generate` into a fresh call cache,
   then the same job rerun from the cache (target < 2 s, 0 server calls);
5. end to end, each as a whole process: ``realitycheck generate`` on the
   first ``--e2e`` NQ-Open questions (greedy plan, no call cache, one stored
   batch) against a plain script that reads the same file, posts one chat
   request per question with ``httpx`` at the same concurrency and writes
   the answers as JSON lines (both with bytecode caches, after an untimed
   warm-up round, as ``benchmarks/_results.py`` runs processes).

It writes ``benchmarks/results/openai_throughput.json``. Run from the
repository root (needs the ``openai`` extra)::

    .venv/bin/python benchmarks/openai_throughput.py            # 20 ms latency
    .venv/bin/python benchmarks/openai_throughput.py --quick    # fewer requests
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

try:  # httpx 2 ships as ``httpx2``; it is the HTTP client the openai SDK uses here
    import httpx2 as httpx
except ImportError:  # pragma: no cover - an environment with httpx 1
    import httpx  # type: ignore[no-redef]

from _results import CLI, run_process, write_result

from realitycheck.backends import GenerationRequest
from realitycheck.backends._cache import CallCache, cached_generate
from realitycheck.backends.openai import OpenAIBackend

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "tests" / "backends" / "_fake_openai_server.py"
MODEL = "fake-model"
PER_CLIENT = 16  # connections per client in the tuned httpx shape

# The plain end-to-end script: python -c PLAIN DATA_FILE N URL CONCURRENCY OUT
PLAIN = r"""
import asyncio, json, sys
try:
    import httpx2 as httpx
except ImportError:
    import httpx
path, n, url, c, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
with open(path) as f:
    questions = [json.loads(line)["question"] for _, line in zip(range(n), f)]

async def main():
    limit = asyncio.Semaphore(c)
    limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        async def ask(q):
            body = {"model": "fake-model", "max_tokens": 64, "temperature": 0.0,
                    "messages": [{"role": "user", "content": "Answer briefly.\nQ: " + q + "\nA:"}]}
            async with limit:
                reply = await client.post("chat/completions", json=body)
            reply.raise_for_status()
            return reply.json()["choices"][0]["message"]["content"]
        return await asyncio.gather(*(ask(q) for q in questions))

answers = asyncio.run(main())
with open(out, "w") as f:
    for q, a in zip(questions, answers):
        f.write(json.dumps({"question": q, "answer": a}) + "\n")
print(len(answers))
"""


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit(f"the fake server did not start (said {url!r})")
    return proc, url


def server_calls(url: str) -> int:
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/_stats", timeout=10) as response:
        return int(json.load(response)["calls"])


def requests_for(tag: str, count: int, *, logprobs: bool = False) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            messages=({"role": "user", "content": f"{tag} question number {i}?"},),
            max_tokens=32,
            logprobs=logprobs,
            top_logprobs=5 if logprobs else 0,
        )
        for i in range(count)
    ]


def sdk_sequential(url: str, requests: list[GenerationRequest]) -> float:
    client = openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=60)
    start = time.perf_counter()
    for request in requests:
        response = client.chat.completions.create(
            model=MODEL,
            messages=[dict(m) for m in request.messages],
            max_tokens=request.max_tokens,
            temperature=0.0,
        )
        assert response.choices[0].message.content
    elapsed = time.perf_counter() - start
    client.close()
    return len(requests) / elapsed


def backend_rate(url: str, requests: list[GenerationRequest], concurrency: int) -> float:
    backend = OpenAIBackend(model=MODEL, base_url=url, concurrency=concurrency)
    before = server_calls(url)
    start = time.perf_counter()
    generations = backend.generate(requests)
    elapsed = time.perf_counter() - start
    errors = [g.error for g in generations if g.error]
    if errors:
        raise SystemExit(f"{len(errors)} requests failed, e.g. {errors[0]}")
    calls = server_calls(url) - before
    if calls != len(requests):
        raise SystemExit(f"expected {len(requests)} server calls, saw {calls}")
    return len(requests) / elapsed


def bodies(requests: list[GenerationRequest]) -> list[dict]:
    """The chat bodies the backend sends (greedy, no log-probs), written out by hand."""
    return [
        {
            "model": MODEL,
            "n": 1,
            "max_tokens": r.max_tokens,
            "messages": [dict(m) for m in r.messages],
            "temperature": 0.0,
        }
        for r in requests
    ]


async def httpx_semaphore(url: str, payloads: list[dict], concurrency: int) -> float:
    """One ``AsyncClient`` with ``concurrency`` connections, a task per request."""
    limit = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url + "/", limits=limits, timeout=60) as client:

        async def post(body: dict) -> None:
            async with limit:
                reply = await client.post("chat/completions", json=body)
                reply.raise_for_status()
                json.loads(reply.content)

        start = time.perf_counter()
        await asyncio.gather(*(post(b) for b in payloads))
        return len(payloads) / (time.perf_counter() - start)


async def httpx_pools(url: str, payloads: list[dict], concurrency: int) -> float:
    """``concurrency`` workers over one client per 16 connections (httpcore scans its pool)."""
    n_clients = -(-concurrency // PER_CLIENT)
    limits = httpx.Limits(max_connections=PER_CLIENT, max_keepalive_connections=PER_CLIENT)
    clients = [
        httpx.AsyncClient(base_url=url + "/", limits=limits, timeout=60) for _ in range(n_clients)
    ]
    pending = iter(payloads)

    async def worker(client: httpx.AsyncClient) -> None:
        for body in pending:
            reply = await client.post("chat/completions", json=body)
            reply.raise_for_status()
            json.loads(reply.content)

    start = time.perf_counter()
    await asyncio.gather(*(worker(clients[k % n_clients]) for k in range(concurrency)))
    rate = len(payloads) / (time.perf_counter() - start)
    for client in clients:
        await client.aclose()
    return rate


def versus_httpx(url: str, concurrency: int, count: int, rounds: int) -> dict:
    """Medians over alternating rounds of the backend and both httpx shapes.

    Each entry is ``(requests per second, client CPU microseconds per request)``;
    the CPU is this process's (``time.process_time``), the server runs in its own.
    """
    runs: dict[str, list[tuple[float, float]]] = {"httpx_single": [], "httpx_pools": []}
    runs["backend"] = []

    def measured(name: str, call: Callable[..., float], *args: Any) -> None:
        cpu = time.process_time()
        rate = call(*args)
        runs[name].append((rate, (time.process_time() - cpu) / count * 1e6))

    for k in range(rounds):
        tag = f"c{concurrency}-r{k}"
        single = bodies(requests_for(f"hs-{tag}", count))
        measured("httpx_single", asyncio.run, httpx_semaphore(url, single, concurrency))
        pooled = bodies(requests_for(f"hp-{tag}", count))
        measured("httpx_pools", asyncio.run, httpx_pools(url, pooled, concurrency))
        ours = requests_for(f"rc-{tag}", count)
        measured("backend", backend_rate, url, ours, concurrency)
    return {
        name: (statistics.median(r for r, _ in got), statistics.median(c for _, c in got))
        for name, got in runs.items()
    }


def end_to_end(url: str, n: int, concurrency: int, rounds: int) -> dict:
    """Whole-process wall times (median of ``rounds``): the CLI vs the plain script.

    Both run as :func:`_results.run_process` runs them: Python may cache bytecode
    (an installed package has its caches; this sandbox sets
    ``PYTHONDONTWRITEBYTECODE``, which would make every CLI process recompile
    realitycheck's ~360 modules while the plain script's ``httpx`` is cached).
    One untimed round warms the caches; the rounds alternate the two commands.
    """
    data = Path(os.environ.get("REALITYCHECK_DATA_DIR", REPO.parent / "shared" / "data"))
    source = data / "nq_open" / "NQ-open.dev.jsonl"
    env = {"PYTHONPATH": str(REPO / "src")}
    ours, plain = [], []
    with tempfile.TemporaryDirectory() as folder:
        for k in range(rounds + 1):
            backend = f"openai[model={MODEL},base_url={url},concurrency={concurrency}]"
            command = [CLI, "generate", "-d", "nq-open", "--data-dir", str(data)]
            command += ["--limit", str(n), "--batch-size", str(n), "-b", backend]
            command += ["--plan", "greedy", "--no-cache", "--out", f"{folder}/run{k}"]
            seconds, _ = run_process(command, env=env)
            script = [sys.executable, "-c", PLAIN, str(source), str(n), url, str(concurrency)]
            plain_seconds, _ = run_process(script + [f"{folder}/plain{k}.jsonl"], env=env)
            if k:  # round 0 warms the bytecode caches
                ours.append(seconds)
                plain.append(plain_seconds)
    return {"cli": statistics.median(ours), "plain": statistics.median(plain)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.02, help="server seconds per request")
    parser.add_argument("--quick", action="store_true", help="a quarter of the requests")
    parser.add_argument("--job", type=int, default=2000, help="calls in the cached job")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds vs httpx")
    parser.add_argument("--e2e", type=int, default=2000, help="questions in the end-to-end run")
    args = parser.parse_args()
    scale = 0.25 if args.quick else 1.0
    proc, url = start_server(args.latency)
    try:
        rows = run(url, args, scale)
    finally:
        proc.kill()
        proc.wait()
    write(rows)


def run(url: str, args: argparse.Namespace, scale: float) -> list[dict]:
    latency = args.latency
    print(f"fake OpenAI server at {url}, {latency * 1000:.0f} ms per request")
    sizes = {1: 200, 8: 800, 32: 2000, 128: 4000}
    sizes = {c: max(int(n * scale), c) for c, n in sizes.items()}
    backend_rate(url, requests_for("warm-up", 16), 8)  # imports, first connections
    rows = []

    baseline = sdk_sequential(url, requests_for("sdk", sizes[1]))
    print(f"\n{'client':<34}{'requests':>9}{'req/s':>10}{'vs SDK loop':>13}")
    print(f"{'SDK sync client, sequential loop':<34}{sizes[1]:>9}{baseline:>10.1f}{1.0:>12.2f}x")
    for concurrency, count in sizes.items():
        rate = backend_rate(url, requests_for(f"c{concurrency}", count), concurrency)
        label = f"openai backend, concurrency {concurrency}"
        print(f"{label:<34}{count:>9}{rate:>10.1f}{rate / baseline:>12.2f}x")
        if concurrency in (32, 128):
            rows.append(
                row(
                    f"openai backend vs a sequential SDK loop ({latency * 1000:.0f} ms), "
                    f"concurrency {concurrency}, one run",
                    f"{rate:,.1f} req/s",
                    f"{baseline:,.1f} req/s",
                    rate / baseline,
                    "the openai SDK's client since issue 23 (the hand-made one: 26.7x / 35.4x)",
                )
            )
    print(f"(ideal at concurrency c: c / {latency * 1000:.0f} ms = {1 / latency:.0f} x c req/s)")

    print(f"\nvs plain httpx, same bodies, median of {args.rounds} alternating rounds")
    print(
        f"{'concurrency':<12}{'backend':>10}{'httpx 1 client':>16}{'httpx pools':>13}{'ratio':>8}"
    )
    for concurrency in (32, 128):
        count = sizes[concurrency]
        got = versus_httpx(url, concurrency, count, args.rounds)
        (ours, our_cpu), (single, _), (pooled, pooled_cpu) = (
            got["backend"],
            got["httpx_single"],
            got["httpx_pools"],
        )
        best = max(single, pooled)
        ratio = ours / best
        print(f"{concurrency:<12}{ours:>10.1f}{single:>16.1f}{pooled:>13.1f}{ratio:>7.2f}x")
        print(
            f"{'':<12}client CPU per request: backend {our_cpu:,.0f} us, httpx pools "
            f"{pooled_cpu:,.0f} us ({pooled_cpu / our_cpu:.2f}x)"
        )
        rows.append(
            row(
                f"openai backend vs plain httpx posting the same bodies ({latency * 1000:.0f} ms), "
                f"concurrency {concurrency}, {count:,} requests, median of {args.rounds}",
                f"{ours:,.1f} req/s",
                f"{best:,.1f} req/s",
                ratio,
                f"baseline is the faster httpx shape (one client: {single:,.1f}; a client per "
                f"{PER_CLIENT} connections: {pooled:,.1f}); no target since issue 23; client CPU "
                f"per "
                f"request {our_cpu:,.0f} us vs {pooled_cpu:,.0f} us (httpx, a client per "
                f"{PER_CLIENT})",
            )
        )

    rows.append(cached_job(url, args.job))
    n = max(int(args.e2e * scale), 16)
    times = end_to_end(url, n, 128, args.rounds)
    ratio = times["plain"] / times["cli"]
    print(
        f"\nend to end, {n:,} NQ-Open questions, concurrency 128, median of {args.rounds}: "
        f"realitycheck generate {times['cli']:.2f} s, plain httpx script {times['plain']:.2f} s "
        f"({ratio:.2f}x)"
    )
    rows.append(
        row(
            f"end to end: `realitycheck generate -d nq-open --limit {n} --batch-size {n} "
            f"--plan greedy --no-cache` over the openai backend (concurrency 128, "
            f"{latency * 1000:.0f} ms), whole process, median of {args.rounds}",
            f"{times['cli']:.2f} s",
            f"{times['plain']:.2f} s",
            ratio,
            "the plain script reads the JSONL, posts with httpx and writes JSON lines; "
            "the CLI also validates, stores Parquet parts and a manifest",
        )
    )
    return rows


def cached_job(url: str, job: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "calls.sqlite"
        backend = OpenAIBackend(model=MODEL, base_url=url, concurrency=128)
        requests = requests_for("job", job, logprobs=True)
        before = server_calls(url)
        start = time.perf_counter()
        first = cached_generate(backend, requests, cache=CallCache(path))
        cold = time.perf_counter() - start
        paid = server_calls(url) - before
        assert not any(g.error for g in first) and paid == job

        before = server_calls(url)
        start = time.perf_counter()
        again = cached_generate(backend, requests, cache=CallCache(path))
        warm = time.perf_counter() - start
        reached = server_calls(url) - before
        assert all(g.cached for g in again) and [g.texts for g in again] == [g.texts for g in first]
        size = path.stat().st_size + sum(p.stat().st_size for p in Path(folder).glob("*-wal"))
    print(
        f"\n{job:,}-call job (logprobs, top 5), concurrency 128, fresh cache: {cold:.2f} s, "
        f"{paid:,} server calls"
    )
    print(
        f"rerun from the cache: {warm:.3f} s (target < 2 s), {reached} server calls "
        f"(target 0); cache files {size / 1e6:.1f} MB"
    )
    return row(
        f"rerun of a finished {job:,}-call job from the call cache",
        f"{warm:.2f} s, {reached} calls to the server",
        f"first run {cold:.2f} s, {paid:,} calls",
        cold / warm,
        "",
    )


def row(work: str, ours: str, theirs: str, ratio: float, note: str) -> dict:
    return {
        "work": work,
        "realitycheck": ours,
        "alternative": theirs,
        "ratio": f"{ratio:.2f}x",
        "note": note,
    }


def write(rows: list[dict]) -> None:
    command = shlex.join(["python", "benchmarks/openai_throughput.py", *sys.argv[1:]])
    write_result("openai_throughput", rows, command)


if __name__ == "__main__":
    main()
