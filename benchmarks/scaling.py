"""How ``evaluate`` scales with the number of responses: wall time and peak memory.

For each size, a synthetic run is built (one dataset, ten responses per
example, a human label and one detector score per response, the score
informative about the label), then ``realitycheck.evaluate`` runs on it in a
fresh process with the default 1,000-resample bootstrap. The time and peak
RSS are of that process alone (imports included); building the run is not
timed. The issue-13 targets are 10M responses under 10 minutes and 8 GB.
Run from the repository root:

    .venv/bin/python benchmarks/scaling.py --sizes 10000 100000 1000000

The result goes to ``benchmarks/results/scaling.json``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from _results import run_process, write_result

from realitycheck import Example, Label, Response, RunStore, Score

EVALUATE = (
    "import sys; from realitycheck import RunStore, evaluate; evaluate(RunStore(sys.argv[1]))"
)
BATCH = 200_000


def synthetic_run(path: Path, n: int, seed: int = 0) -> None:
    """A run of ``n`` responses with a human label and a ``recorded:noisy`` score each."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    n_examples = max(1, n // 10)
    for start in range(0, n_examples, BATCH):
        ids = range(start, min(n_examples, start + BATCH))
        store.append([Example(example_id=f"s/{i}", dataset="synthetic", task="qa") for i in ids])
    for start in range(0, n, BATCH):
        ids = range(start, min(n, start + BATCH))
        bad = rng.random(len(ids)) < 0.3
        noise = rng.normal(size=len(ids))
        rids = [f"s/{i % n_examples}/{i}" for i in ids]
        store.append(
            [
                Response(response_id=r, example_id=f"s/{i % n_examples}", model="m", text="t")
                for r, i in zip(rids, ids, strict=True)
            ]
        )
        store.append(
            [
                Label(response_id=r, labeler="human", hallucinated=bool(b))
                for r, b in zip(rids, bad, strict=True)
            ]
        )
        store.append(
            [
                Score(response_id=r, detector="recorded:noisy", value=float(b + z))
                for r, b, z in zip(rids, bad, noise, strict=True)
            ]
        )
    for table in ("examples", "responses", "labels", "scores"):
        store.compact(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        work = Path(tempfile.mkdtemp(prefix="scaling-bench-"))
        try:
            synthetic_run(work / "run", n)
            seconds, peak = run_process([sys.executable, "-c", EVALUATE, str(work / "run")])
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{n:>12,} responses: evaluate {seconds:8.1f} s, peak RSS {peak:,} MiB")
        rows.append(
            {
                "work": f"`evaluate`, {n:,} synthetic responses, one detector, human labels",
                "realitycheck": f"{seconds:.1f} s, {peak:,} MiB",
                "alternative": "",
                "ratio": "",
                "note": "whole process, one run; target for 10M: under 600 s and 8 GB",
            }
        )
    sizes = " ".join(str(n) for n in args.sizes)
    write_result("scaling", rows, f"python benchmarks/scaling.py --sizes {sizes}")


if __name__ == "__main__":
    main()
