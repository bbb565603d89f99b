"""The whole ``realitycheck label`` command against a plain SDK script making the same calls.

Issue 23's target: ``realitycheck label`` with ``qa_judge`` on an ``openai``
backend takes at most 1.1x the time of a plain script that makes the same
calls with the same SDK (``openai.AsyncOpenAI``) at the same concurrency,
against a server that answers each call after ``--latency`` seconds (200 ms:
the server, not the client, is the bottleneck, as with any real LLM).

Starts the test suite's fake OpenAI server (``tests/backends/_fake_openai_server.py``)
in its own process, writes ``--n`` QA responses as a JSONL file, then times,
each as a whole process after an untimed warm-up round on other questions:

1. ``realitycheck label -d 'files[path=…]' -l 'qa_judge[judge=openai[…,concurrency=C]]'
   --no-cache`` into a fresh run folder: loading the file, the prompts, the
   calls, reading the replies and writing the labels;
2. a plain script that reads the exact chat bodies the judge sends (made by
   the judge's own ``prompt``/``requests`` before timing) and posts them with
   one ``AsyncOpenAI`` under a semaphore of ``C``, reading each reply's JSON.

It writes ``benchmarks/results/openai_throughput_label.json``. Run from the
repository root (needs the ``openai`` extra; about 20 s per side)::

    .venv/bin/python benchmarks/openai_throughput_label.py
    .venv/bin/python benchmarks/openai_throughput_label.py --n 1000   # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

from _results import CLI, run_process, write_result
from openai_throughput import start_server  # the same fake server, started the same way

from realitycheck.labelers import labelers
from realitycheck.labelers.qa_judge import QAJudge
from realitycheck.records import Example, Response

MODEL = "fake-model"
PLAIN_SCRIPT = """
import asyncio, json, sys
from openai import AsyncOpenAI

bodies_path, url, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(bodies_path) as f:
    bodies = [json.loads(line) for line in f]

async def main():
    client = AsyncOpenAI(base_url=url, api_key="sk-bench", max_retries=0)
    limit = asyncio.Semaphore(concurrency)

    async def call(body):
        async with limit:
            reply = await client.chat.completions.create(**body)
            return json.loads(reply.choices[0].message.content or "null")

    try:
        return await asyncio.gather(*(call(b) for b in bodies))
    finally:
        await client.close()

answers = asyncio.run(main())
print(len(answers))
"""


def write_items(path: Path, tag: str, n: int) -> tuple[list[Response], dict[str, Example]]:
    """Write ``n`` QA responses as JSONL; return them as records too (for the bodies)."""
    rows, responses, examples = [], [], {}
    for i in range(n):
        example_id = f"{tag}-{i}"
        question = f"{tag}: what is the capital of country number {i}?"
        rows.append(
            {
                "example_id": example_id,
                "response_id": f"{example_id}-r",
                "question": question,
                "references": [f"City {i}"],
                "text": f"It is City {i}.",
                "model": "m",
            }
        )
        examples[example_id] = Example(
            example_id=example_id,
            dataset="bench",
            task="qa",
            question=question,
            references=(f"City {i}",),
        )
        responses.append(
            Response(
                response_id=f"{example_id}-r",
                example_id=example_id,
                model="m",
                text=rows[-1]["text"],
            )
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return responses, examples


def write_bodies(
    path: Path, judge: QAJudge, responses: list[Response], examples: dict[str, Example]
) -> int:
    """Write the chat bodies the judge's backend sends (as the SDK's ``create`` arguments)."""
    lines = []
    for response in responses:
        for request in judge.requests(judge.prompt(response, examples[response.example_id])):
            body: dict = {
                "model": MODEL,
                "messages": [dict(m) for m in request.messages],
                "max_tokens": request.max_tokens,
                "temperature": 0.0 if request.decoding == "greedy" else request.temperature,
                "n": request.n,
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
            if request.seed is not None:
                body["seed"] = request.seed
            lines.append(json.dumps(body))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def _children_cpu() -> float:
    """User plus system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def server_calls(url: str) -> int:
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/_stats", timeout=10) as response:
        return int(json.load(response)["calls"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="responses (one call each)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2, help="server seconds per call")
    parser.add_argument("--warm", type=int, default=256, help="responses of the warm-up round")
    args = parser.parse_args()
    proc, url = start_server(args.latency)
    env = {"OPENAI_API_KEY": "sk-bench", "PYTHONWARNINGS": "ignore"}
    judge_key = (
        f"qa_judge[judge=openai[model={MODEL},base_url={url},concurrency={args.concurrency}]]"
    )
    timed: dict[str, float] = {}
    cpu: dict[str, float] = {}
    calls: dict[str, int] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            judge = labelers.create_from_key(judge_key)
            if not isinstance(judge, QAJudge):
                raise SystemExit(f"{judge_key} is not a qa_judge")
            for tag, n in (("warm", args.warm), ("timed", args.n)):
                data = folder / f"{tag}.jsonl"
                responses, examples = write_items(data, tag, n)
                bodies = folder / f"{tag}-bodies.jsonl"
                count = write_bodies(bodies, judge, responses, examples)
                run = folder / f"run-{tag}"
                shutil.rmtree(run, ignore_errors=True)
                label = [
                    CLI,
                    "label",
                    "-d",
                    f"files[path={data},constants=task:qa]",
                    "--run",
                    str(run),
                ]
                label += ["-l", judge_key, "--no-cache"]
                plain = [
                    sys.executable,
                    "-c",
                    PLAIN_SCRIPT,
                    str(bodies),
                    url,
                    str(args.concurrency),
                ]
                before = server_calls(url)
                cpu_0 = _children_cpu()
                seconds_label, _ = run_process(label, env=env)
                cpu_1 = _children_cpu()
                middle = server_calls(url)
                seconds_plain, _ = run_process(plain, env=env)
                cpu_2 = _children_cpu()
                after = server_calls(url)
                if tag == "timed":
                    timed = {"label": seconds_label, "plain": seconds_plain}
                    cpu = {"label": cpu_1 - cpu_0, "plain": cpu_2 - cpu_1}
                    calls = {"label": middle - before, "plain": after - middle, "bodies": count}
    finally:
        proc.kill()
        proc.wait()
    ratio = timed["label"] / timed["plain"]
    ideal = args.n / args.concurrency * args.latency
    print(
        f"{args.n} judge calls, concurrency {args.concurrency}, "
        f"server {args.latency * 1000:.0f} ms per call (ideal {ideal:.1f} s); "
        f"calls seen by the server: {calls}"
    )
    print(f"realitycheck label          {timed['label']:7.1f} s  ({cpu['label']:.1f} CPU s)")
    print(f"plain AsyncOpenAI script    {timed['plain']:7.1f} s  ({cpu['plain']:.1f} CPU s)")
    print(f"label / plain: {ratio:.2f}x (target <= 1.1x)")
    command = "PYTHONPATH=benchmarks .venv/bin/python benchmarks/openai_throughput_label.py"
    if (args.n, args.concurrency, args.latency) != (5000, 64, 0.2):
        command += f" --n {args.n} --concurrency {args.concurrency} --latency {args.latency}"
    write_result(
        "openai_throughput_label",
        [
            {
                "work": f"{args.n} qa_judge calls, concurrency {args.concurrency}, server "
                f"{args.latency * 1000:.0f} ms per call (ideal {ideal:.1f} s)",
                "realitycheck": f"{timed['label']:.1f} s, {cpu['label']:.1f} CPU s "
                "(realitycheck label, whole command)",
                "alternative": f"{timed['plain']:.1f} s, {cpu['plain']:.1f} CPU s "
                "(plain AsyncOpenAI script, same calls)",
                "ratio": f"{ratio:.2f}x",
                "note": f"label / plain, target <= 1.1x; server calls {calls['label']} "
                f"(label) and {calls['plain']} (plain) for {calls['bodies']} bodies",
            }
        ],
        command,
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
