"""Whole-process timings of ``evaluate`` and of the stages' own cost, against an older checkout.

Two pieces of work, each run as fresh processes with this checkout's code and,
with ``--before PATH`` (a checkout of an older commit), with that code through
``PYTHONPATH=PATH/src``, in alternating rounds so that a busy machine slows
both alike:

1. ``realitycheck evaluate -d truthfulqa -l rouge_l -D length`` on a run that
   already holds the dataset, its ROUGE-L labels and the length scores, so
   the time is the evaluation itself: metrics of the detector against the
   human and ROUGE-L labels, with 1,000-resample bootstrap intervals. The
   metrics written by both must be equal.
2. The label stage with no labeler on ``--responses`` synthetic responses
   (the cost of reading the run and choosing what to compute, nothing else).

The result goes to ``benchmarks/results/evaluate.json``. Run from the
repository root:

    git archive cc6e7d1 src | tar -x -C /tmp/before   # the code before issue 13
    .venv/bin/python benchmarks/evaluate.py --before /tmp/before

The data folder is ``$REALITYCHECK_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from _results import CLI, ratio, run_process, write_result

from realitycheck import Example, Response, RunStore

SRC = Path(__file__).resolve().parents[1] / "src"
ZERO_LABELERS = (
    "import sys, time; from realitycheck import RunStore, label; start = time.perf_counter(); "
    "label(RunStore(sys.argv[1]), []); print(time.perf_counter() - start)"
)


def data_dir() -> Path:
    env = os.environ.get("REALITYCHECK_DATA_DIR")
    return Path(env) if env else SRC.parents[1] / "shared" / "data"


def synthetic_run(path: Path, n_responses: int) -> None:
    """A run of ``n_responses`` responses, ten per example, with references and meta."""
    store = RunStore(path)
    n_examples = max(1, n_responses // 10)
    store.append(
        [
            Example(
                example_id=f"s/{i}",
                dataset="synthetic",
                task="qa",
                question=f"What is item {i}?",
                references=(f"item {i} is red", f"it is red {i}"),
                meta={"source": "synthetic", "i": i},
            )
            for i in range(n_examples)
        ]
    )
    store.append(
        [
            Response(
                response_id=f"s/{i % n_examples}/{i}",
                example_id=f"s/{i % n_examples}",
                model="m",
                text=f"Item {i} is probably a red thing.",
                meta={"line": i},
            )
            for i in range(n_responses)
        ]
    )
    store.compact("examples")
    store.compact("responses")


def metrics_of(run: Path) -> pd.DataFrame:
    """The metrics table of a run, sorted by key."""
    frame = pq.read_table(run / "metrics.parquet").to_pandas()
    key = ["dataset", "slice", "detector", "labeler", "metric"]
    return frame.sort_values(key).reset_index(drop=True)


def rounds(commands: dict[str, tuple[list[str], Path | None]], repeats: int) -> dict[str, list]:
    """Run each command ``repeats`` times in turn, after one warm-up round; wall seconds and MiB."""
    times: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    for k in range(repeats + 1):
        for name, (argv, src) in commands.items():
            seconds, peak = run_process(argv, env={"PYTHONPATH": str(src or SRC)})
            if k:
                times[name].append((seconds, peak))
    return times


def median(pairs: list[tuple[float, int]]) -> tuple[float, int]:
    return statistics.median(p[0] for p in pairs), max(p[1] for p in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="A checkout of an older commit.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--responses", type=int, default=100_000)
    args = parser.parse_args()
    before = None if args.before is None else args.before / "src"
    work = Path(tempfile.mkdtemp(prefix="evaluate-bench-"))
    try:
        rows = [evaluate_rows(work, before, args.repeats), *stage_rows(work, before, args)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    flags = "" if before is None else " --before BEFORE"
    write_result("evaluate", rows, f"python benchmarks/evaluate.py{flags}")


def evaluate_rows(work: Path, before: Path | None, repeats: int) -> dict[str, str]:
    """Time ``evaluate`` on TruthfulQA; check both checkouts write the same metrics."""
    runs = {"now": work / "now", "before": work / "before"}
    command = ["evaluate", "-d", "truthfulqa", "-l", "rouge_l", "-D", "length"]
    command += ["--data-dir", str(data_dir()), "--no-cache"]
    commands = {"now": ([CLI, *command, "--run", str(runs["now"])], SRC)}
    if before is not None:
        commands["before"] = ([CLI, *command, "--run", str(runs["before"])], before)
    times = rounds(commands, repeats)
    ours, ours_rss = median(times["now"])
    print(f"evaluate: this checkout {ours:.2f} s, {ours_rss} MiB")
    row = {
        "work": "`realitycheck evaluate -d truthfulqa -l rouge_l -D length`, labels and scores "
        "already in the run (1,000 resamples)",
        "realitycheck": f"{ours:.2f} s",
        "alternative": "",
        "ratio": "",
        "note": f"whole process, median of {repeats}; peak RSS {ours_rss} MiB",
    }
    if before is not None:
        theirs, theirs_rss = median(times["before"])
        pd.testing.assert_frame_equal(metrics_of(runs["now"]), metrics_of(runs["before"]))
        print(f"evaluate: before {theirs:.2f} s, {theirs_rss} MiB; metrics equal")
        row["alternative"] = f"before issue 13 {theirs:.2f} s"
        row["ratio"] = ratio(theirs, ours)
        row["note"] += f" vs {theirs_rss} MiB; every metric and CI equal"
    return row


def stage_rows(work: Path, before: Path | None, args: argparse.Namespace) -> list[dict[str, str]]:
    """Time the label stage with no labeler on a synthetic run."""
    run = work / "synthetic"
    synthetic_run(run, args.responses)
    argv = [sys.executable, "-c", ZERO_LABELERS, str(run)]
    commands = {"now": (argv, SRC)}
    if before is not None:
        commands["before"] = (argv, before)
    times = rounds(commands, args.repeats)
    ours, ours_rss = median(times["now"])
    row = {
        "work": f"label stage with no labeler, {args.responses:,} synthetic responses "
        "(reading the run and choosing what to compute)",
        "realitycheck": f"{ours:.2f} s",
        "alternative": "",
        "ratio": "",
        "note": f"whole process (imports included), median of {args.repeats}; "
        f"peak RSS {ours_rss} MiB",
    }
    print(f"zero labelers: this checkout {ours:.2f} s, {ours_rss} MiB")
    if before is not None:
        theirs, theirs_rss = median(times["before"])
        print(f"zero labelers: before {theirs:.2f} s, {theirs_rss} MiB")
        row["alternative"] = f"before issue 13 {theirs:.2f} s"
        row["ratio"] = ratio(theirs, ours)
        row["note"] += f" vs {theirs_rss} MiB"
    return [row]


if __name__ == "__main__":
    main()
