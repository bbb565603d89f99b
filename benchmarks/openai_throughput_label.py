"""The whole ``realitycheck label`` command against a plain SDK script making the same calls.

Issue 23's target: ``realitycheck label`` with ``qa_judge`` on an ``openai``
backend takes at most 1.1x the time of a plain script that makes the same
calls with the same SDK (``openai.AsyncOpenAI``) at the same concurrency,
against a server that answers each call after ``--latency`` seconds (200 ms:
the server, not the client, is the bottleneck, as with any real LLM).

Starts the test suite's fake OpenAI server (``tests/backends/_fake_openai_server.py``)
in its own process, writes ``--n`` QA responses as a JSONL file, then times
each side as a whole process in interleaved rounds (label then plain, plain
then label, ...) after an untimed warm-up round, and reports the medians of
wall and CPU time and of the per-round ratios, with the load around the rounds:

1. ``realitycheck label -d 'files[path=…]' -l 'qa_judge[judge=openai[…,concurrency=C]]'
   --no-cache`` into a fresh run folder: loading the file, the prompts, the
   calls, reading the replies and writing the labels;
2. a plain script that reads the exact chat bodies the judge sends (made by
   the judge's own ``prompt``/``requests`` before timing) and posts them with
   one ``AsyncOpenAI`` under a semaphore of ``C``, keeping each reply.

Then it checks that the label command stored, for every response, the very
reply the plain script got (the fake server answers a body deterministically),
and that the server saw every call it should have.

It writes ``benchmarks/results/openai_throughput_label.json``. Run from the
repository root (needs the ``openai`` extra; about 20 s per side and round)::

    .venv/bin/python benchmarks/openai_throughput_label.py
    .venv/bin/python benchmarks/openai_throughput_label.py --n 1000 --rounds 1  # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

from _results import CLI, compare_exact, interleave, process, report, write_result
from openai_throughput import start_server  # the same fake server, started the same way

from realitycheck.labelers import labelers
from realitycheck.labelers.qa_judge import QAJudge
from realitycheck.records import Example, Response
from realitycheck.store import RunStore

MODEL = "fake-model"
PLAIN_SCRIPT = """
import asyncio, json, sys
from openai import AsyncOpenAI

bodies_path, url, concurrency, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(bodies_path) as f:
    bodies = [json.loads(line) for line in f]

async def main():
    client = AsyncOpenAI(base_url=url, api_key="sk-bench", max_retries=0)
    limit = asyncio.Semaphore(concurrency)

    async def call(body):
        async with limit:
            reply = await client.chat.completions.create(**body)
            return reply.choices[0].message.content

    try:
        return await asyncio.gather(*(call(b) for b in bodies))
    finally:
        await client.close()

answers = asyncio.run(main())
with open(out, "w") as f:
    json.dump(answers, f)
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


def server_calls(url: str) -> int:
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/_stats", timeout=10) as response:
        return int(json.load(response)["calls"])


def stored_replies(run: Path, order: list[str]) -> list[str]:
    """The judge's reply to each response, as the label command stored it (in ``order``).

    The run names a response ``files:<path>/<id>``; it is matched by its id.
    """
    table = RunStore(run).arrow("labels", columns=["response_id", "raw"]).to_pylist()
    by_id = {
        row["response_id"].rsplit("/", 1)[-1]: json.loads(row["raw"])["replies"][0] for row in table
    }
    return [by_id.get(response_id, "<no label>") for response_id in order]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="responses (one call each)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2, help="server seconds per call")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of each side")
    args = parser.parse_args()
    proc, url = start_server(args.latency)
    env = {"OPENAI_API_KEY": "sk-bench", "PYTHONWARNINGS": "ignore"}
    judge_key = (
        f"qa_judge[judge=openai[model={MODEL},base_url={url},concurrency={args.concurrency}]]"
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            judge = labelers.create_from_key(judge_key)
            if not isinstance(judge, QAJudge):
                raise SystemExit(f"{judge_key} is not a qa_judge")
            data, bodies, run = folder / "data.jsonl", folder / "bodies.jsonl", folder / "run"
            replies = folder / "replies.json"
            responses, examples = write_items(data, "timed", args.n)
            count = write_bodies(bodies, judge, responses, examples)
            label = [CLI, "label", "-d", f"files[path={data},constants=task:qa]"]
            label += ["--run", str(run), "-l", judge_key, "--no-cache"]
            plain = [sys.executable, "-c", PLAIN_SCRIPT, str(bodies), url]
            plain += [str(args.concurrency), str(replies)]
            calls_before = server_calls(url)
            rounds = interleave(
                {
                    "label": process(label, env=env, setup=lambda: shutil.rmtree(run, True)),
                    "plain": process(plain, env=env),
                },
                args.rounds,
            )
            calls = server_calls(url) - calls_before
            order = [r.response_id for r in responses]
            agreement = compare_exact(
                stored_replies(run, order),
                json.loads(replies.read_text(encoding="utf-8")),
                what="judge replies (label's stored vs plain's)",
            )
    finally:
        proc.kill()
        proc.wait()
    ideal = args.n / args.concurrency * args.latency
    ratio = rounds.ratio("label", "plain")
    expected_calls = count * 2 * (args.rounds + 1)
    print(
        f"{args.n} judge calls, concurrency {args.concurrency}, "
        f"server {args.latency * 1000:.0f} ms per call (ideal {ideal:.1f} s); "
        f"calls seen by the server {calls} (expected {expected_calls})"
    )
    print(f"realitycheck label          {rounds.seconds_text('label', 1)}")
    print(f"plain AsyncOpenAI script    {rounds.seconds_text('plain', 1)}")
    print(f"label / plain: {ratio:.2f}x wall (target <= 1.1x); {rounds.note('label', 'plain')}")
    equality = report(agreement)
    command = "PYTHONPATH=benchmarks .venv/bin/python benchmarks/openai_throughput_label.py"
    if (args.n, args.concurrency, args.latency, args.rounds) != (5000, 64, 0.2, 3):
        command += (
            f" --n {args.n} --concurrency {args.concurrency} --latency {args.latency}"
            f" --rounds {args.rounds}"
        )
    write_result(
        "openai_throughput_label",
        [
            {
                "work": f"{args.n} qa_judge calls, concurrency {args.concurrency}, server "
                f"{args.latency * 1000:.0f} ms per call (ideal {ideal:.1f} s)",
                "realitycheck": f"{rounds.seconds_text('label', 1)} "
                "(realitycheck label, whole command)",
                "alternative": f"{rounds.seconds_text('plain', 1)} "
                "(plain AsyncOpenAI script, same calls)",
                "ratio": f"{ratio:.2f}x",
                "note": f"label / plain wall time, target <= 1.1x; "
                f"{rounds.note('label', 'plain')}; server calls {calls} of {expected_calls} "
                f"expected; {equality}",
            }
        ],
        command,
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
