"""Judge throughput against a local OpenAI-compatible server, as a share of plain ``httpx``.

Starts the test suite's fake OpenAI server (``tests/backends/_fake_openai_server.py``)
in its own process with a fixed latency per request, builds ``--n`` QA
responses with distinct questions, and in one run, alternating, at the same
concurrency against the same server:

1. plain ``httpx.AsyncClient`` posting, under a semaphore, exactly the chat
   bodies the judge would send (its prompts, ``max_tokens``, temperature and
   JSON-schema ``response_format``): the floor of what any client can do;
2. ``qa_judge[judge=openai[...]]`` labelling the same responses through its
   public ``label()``: prompt building, the backend (retries, usage), reply
   parsing and label records, with no call cache (so every request is sent).

It prints requests/second of each, and the judge's share of ``httpx`` (issue
8's target: at least 90 %). Each side runs ``--rounds`` times on fresh
questions and the median is shown. Run from the repository root::

    .venv/bin/python benchmarks/judge_throughput.py
    .venv/bin/python benchmarks/judge_throughput.py --n 4000 --concurrency 128
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

try:  # httpx 2 ships as ``httpx2``; it is the HTTP client the openai SDK uses here
    import httpx2 as httpx
except ImportError:  # pragma: no cover - an environment with httpx 1
    import httpx  # type: ignore[no-redef]

from openai_throughput import start_server  # the same fake server, started the same way

from realitycheck.backends.openai import OpenAIBackend
from realitycheck.labelers.qa_judge import QAJudge
from realitycheck.records import Example, Response

MODEL = "fake-model"


def qa_items(tag: str, n: int) -> tuple[list[Response], dict[str, Example]]:
    examples = {
        f"{tag}-{i}": Example(
            example_id=f"{tag}-{i}",
            dataset="bench",
            task="qa",
            question=f"{tag}: what is the capital of country number {i}?",
            references=(f"City {i}",),
        )
        for i in range(n)
    }
    responses = [
        Response(response_id=f"{e}-r", example_id=e, model="m", text=f"It is City {i}.")
        for i, e in enumerate(examples)
    ]
    return responses, examples


def bodies(judge: QAJudge, responses: list[Response], examples: dict[str, Example]) -> list[dict]:
    """The chat bodies the judge's backend sends for these responses."""
    out = []
    for response in responses:
        for request in judge.requests(judge.prompt(response, examples[response.example_id])):
            body: dict = {  # what OpenAIBackend sends for this request (chat mode)
                "model": MODEL,
                "messages": [dict(m) for m in request.messages],
                "max_tokens": request.max_tokens,
                "temperature": request.temperature,
            }
            if request.json_schema:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "reply",
                        "schema": json.loads(request.json_schema),
                        "strict": True,
                    },
                }
            out.append(body)
    return out


async def httpx_rate(url: str, payloads: list[dict], concurrency: int) -> float:
    limit = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:

        async def post(body: dict) -> None:
            async with limit:
                reply = await client.post("/chat/completions", json=body)
                reply.raise_for_status()
                json.loads(reply.text)

        start = time.perf_counter()
        await asyncio.gather(*(post(b) for b in payloads))
        return len(payloads) / (time.perf_counter() - start)


def judge_rate(judge: QAJudge, responses: list[Response], examples: dict[str, Example]) -> float:
    start = time.perf_counter()
    labels = judge.label(responses, examples, cache=None)
    elapsed = time.perf_counter() - start
    failed = [lab.error for lab in labels if lab.error]
    if failed:
        raise SystemExit(f"{len(failed)} labels failed, e.g. {failed[0]}")
    return len(responses) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="responses per round")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.02, help="server seconds per request")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    proc, url = start_server(args.latency)
    try:
        backend = OpenAIBackend(model=MODEL, base_url=url, concurrency=args.concurrency)
        judge = QAJudge(judge=backend)
        warm, warm_examples = qa_items("warm-up", 64)
        judge_rate(judge, warm, warm_examples)
        asyncio.run(httpx_rate(url, bodies(judge, warm, warm_examples), args.concurrency))
        plain, ours = [], []
        for k in range(args.rounds):
            responses, examples = qa_items(f"httpx-{k}", args.n)
            payloads = bodies(judge, responses, examples)
            plain.append(asyncio.run(httpx_rate(url, payloads, args.concurrency)))
            responses, examples = qa_items(f"judge-{k}", args.n)
            ours.append(judge_rate(judge, responses, examples))
    finally:
        proc.kill()
        proc.wait()
    base, rate = statistics.median(plain), statistics.median(ours)
    print(
        f"fake OpenAI server at {url}, {args.latency * 1000:.0f} ms per request; "
        f"{args.n} responses per round, concurrency {args.concurrency}, "
        f"median of {args.rounds} rounds"
    )
    print(f"{'client':<40}{'req/s':>10}")
    print(f"{'plain httpx.AsyncClient, same bodies':<40}{base:>10.1f}")
    print(f"{'qa_judge through the openai backend':<40}{rate:>10.1f}")
    print(f"qa_judge / httpx: {rate / base:.1%} (target >= 90%)")


if __name__ == "__main__":
    main()
