"""Throughput of the ``openai`` backend vs a sequential loop over the SDK; a cached rerun.

Starts the test suite's fake OpenAI server (``tests/backends/_fake_openai_server.py``,
the one implementation) in its own process with a fixed latency per request,
then in one run:

1. a plain sequential loop over the official SDK's synchronous client
   (``OpenAI(...).chat.completions.create``), the baseline;
2. the ``openai`` backend at concurrency 1, 8, 32 and 128 (same requests,
   same server), printing requests/second and the ratio to the baseline;
3. a 2,000-call job through :func:`cached_generate` into a fresh call cache,
   then the same job rerun from the cache: its wall time (target < 2 s) and
   the number of calls that reached the server (target 0).

Run from the repository root (needs the ``openai`` package)::

    .venv/bin/python benchmarks/openai_throughput.py            # 20 ms latency
    .venv/bin/python benchmarks/openai_throughput.py --quick    # fewer requests
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import openai

from realitycheck.backends import GenerationRequest
from realitycheck.backends._cache import CallCache, cached_generate
from realitycheck.backends.openai import OpenAIBackend

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "tests" / "backends" / "_fake_openai_server.py"
MODEL = "fake-model"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.02, help="server seconds per request")
    parser.add_argument("--quick", action="store_true", help="a quarter of the requests")
    parser.add_argument("--job", type=int, default=2000, help="calls in the cached job")
    args = parser.parse_args()
    scale = 0.25 if args.quick else 1.0
    proc, url = start_server(args.latency)
    try:
        run(url, args.latency, scale, args.job)
    finally:
        proc.kill()
        proc.wait()


def run(url: str, latency: float, scale: float, job: int) -> None:
    print(f"fake OpenAI server at {url}, {latency * 1000:.0f} ms per request")
    sizes = {1: 200, 8: 800, 32: 2000, 128: 4000}
    sizes = {c: max(int(n * scale), c) for c, n in sizes.items()}
    backend_rate(url, requests_for("warm-up", 16), 8)  # imports, first connections

    baseline = sdk_sequential(url, requests_for("sdk", sizes[1]))
    print(f"\n{'client':<34}{'requests':>9}{'req/s':>10}{'vs SDK loop':>13}")
    print(f"{'SDK sync client, sequential loop':<34}{sizes[1]:>9}{baseline:>10.1f}{1.0:>12.2f}x")
    for concurrency, count in sizes.items():
        rate = backend_rate(url, requests_for(f"c{concurrency}", count), concurrency)
        label = f"openai backend, concurrency {concurrency}"
        print(f"{label:<34}{count:>9}{rate:>10.1f}{rate / baseline:>12.2f}x")
    print(f"(ideal at concurrency c: c / {latency * 1000:.0f} ms = {1 / latency:.0f} x c req/s)")

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


if __name__ == "__main__":
    main()
