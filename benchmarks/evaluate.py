"""Whole-process timings of ``evaluate`` and of the stages' own cost, against an older checkout.

Two pieces of work, each run as fresh processes with this checkout's code and,
with ``--before PATH`` (a checkout of an older commit), with that code through
``PYTHONPATH=PATH/src``, in interleaved rounds after a warm-up round
(``benchmarks/_results.py``: medians of wall and CPU seconds, the ratio the
median of the rounds' ratios, the load stated):

1. ``realitycheck evaluate -d truthfulqa -l rouge_l -D length`` on a run that
   already holds the dataset, its ROUGE-L labels and the length scores, so
   the time is the evaluation itself: metrics of the detector against the
   human and ROUGE-L labels, with 1,000-resample bootstrap intervals. The
   metrics tables written by both are compared cell by cell (numbers within
   1e-9), and the note says how many cells differ.
2. The label stage with no labeler on ``--responses`` synthetic responses
   (the cost of reading the run and choosing what to compute, nothing else).
   Each side has its own copy of the run; the check is that neither wrote
   anything (every file of each copy byte-identical before and after).

The result goes to ``benchmarks/results/evaluate.json``. Run from the
repository root:

    git archive cc6e7d1 src | tar -x -C /tmp/before   # the code before issue 13
    .venv/bin/python benchmarks/evaluate.py --before /tmp/before

The data folder is ``$REALITYCHECK_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from _results import (
    CLI,
    SRC,
    Rounds,
    compare_exact,
    compare_tables,
    interleave,
    process,
    report,
    write_result,
)

from realitycheck import Example, Response, RunStore

ZERO_LABELERS = (
    "import sys; from realitycheck import RunStore, label; label(RunStore(sys.argv[1]), [])"
)


def data_dir() -> Path:
    env = os.environ.get("REALITYCHECK_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


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


def digest(folder: Path) -> str:
    """SHA-256 over every file's relative path and bytes under ``folder``."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def sides(argv: dict[str, list[str]], before: Path | None) -> dict[str, object]:
    """Process sides: this checkout (``now``) and, with ``before``, the older code."""
    out = {"now": process(argv["now"], env={"PYTHONPATH": str(SRC)})}
    if before is not None:
        out["before"] = process(argv["before"], env={"PYTHONPATH": str(before)})
    return out


def row(work: str, timed: Rounds, before: Path | None, checked: str) -> dict[str, str]:
    """A result row: this checkout's medians, the older code's, ratio and note."""
    note = f"whole process; {timed.note('before', 'now') if before else timed.note()}"
    note += f"; peak RSS {timed.peak('now')} MiB"
    result = {"work": work, "realitycheck": timed.seconds_text("now"), "alternative": ""}
    result["ratio"] = ""
    if before is not None:
        note += f" vs {timed.peak('before')} MiB"
        result["alternative"] = f"before issue 13 {timed.seconds_text('before')}"
        result["ratio"] = timed.ratio_text("before", "now")
    result["note"] = f"{note}; {checked}"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="A checkout of an older commit.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--responses", type=int, default=100_000)
    args = parser.parse_args()
    before = None if args.before is None else args.before / "src"
    work = Path(tempfile.mkdtemp(prefix="evaluate-bench-"))
    try:
        rows = [evaluate_row(work, before, args.rounds), stage_row(work, before, args)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    flags = "" if before is None else " --before BEFORE"
    flags += "" if args.rounds == 3 else f" --rounds {args.rounds}"
    write_result("evaluate", rows, f"python benchmarks/evaluate.py{flags}")


def evaluate_row(work: Path, before: Path | None, rounds: int) -> dict[str, str]:
    """Time ``evaluate`` on TruthfulQA; compare the metrics both checkouts write."""
    command = ["evaluate", "-d", "truthfulqa", "-l", "rouge_l", "-D", "length"]
    command += ["--data-dir", str(data_dir()), "--no-cache"]
    argv = {name: [CLI, *command, "--run", str(work / name)] for name in ("now", "before")}
    print("evaluate:")
    timed = interleave(sides(argv, before), rounds)
    print(f"  this checkout {timed.seconds_text('now')}, {timed.peak('now')} MiB")
    checked = "metrics not compared (no older code)"
    if before is not None:
        print(f"  before {timed.seconds_text('before')}, {timed.peak('before')} MiB")
        now, then = metrics_of(work / "now"), metrics_of(work / "before")
        checked = report(compare_tables(now, then, tol=1e-9, what="metrics cells"))
    return row(
        "`realitycheck evaluate -d truthfulqa -l rouge_l -D length`, labels and scores "
        "already in the run (1,000 resamples)",
        timed,
        before,
        checked,
    )


def stage_row(work: Path, before: Path | None, args: argparse.Namespace) -> dict[str, str]:
    """Time the label stage with no labeler on a synthetic run; check that neither writes."""
    synthetic_run(work / "synthetic", args.responses)
    for name in ("now", "before"):
        shutil.copytree(work / "synthetic", work / f"synthetic-{name}")
    original = digest(work / "synthetic")
    argv = {
        n: [sys.executable, "-c", ZERO_LABELERS, str(work / f"synthetic-{n}")]
        for n in argv_names(before)
    }
    print("label stage with no labeler:")
    timed = interleave(sides(argv, before), args.rounds)
    after = [digest(work / f"synthetic-{n}") for n in argv]
    checked = report(
        compare_exact([original] * len(after), after, what="each run folder before and after")
    )
    return row(
        f"label stage with no labeler, {args.responses:,} synthetic responses "
        "(reading the run and choosing what to compute)",
        timed,
        before,
        checked,
    )


def argv_names(before: Path | None) -> list[str]:
    return ["now"] if before is None else ["now", "before"]


if __name__ == "__main__":
    main()
