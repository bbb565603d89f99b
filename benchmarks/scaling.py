"""How ``evaluate`` scales with the number of responses: wall time and peak memory.

For each size, a synthetic run is built (one dataset, ten responses per
example, a human label and one detector score per response, the score
informative about the label), then ``realitycheck.evaluate`` runs on it in a
fresh process with the default 1,000-resample bootstrap. The time and peak
RSS are of that process alone (imports included); building the run is not
timed. The issue-13 targets are 10M responses under 10 minutes and 8 GB.
Run from the repository root:

    .venv/bin/python benchmarks/scaling.py --sizes 10000 100000 1000000 10000000

The synthetic tables are written as Parquet directly with pyarrow, in the
schema the store itself writes (10M responses in seconds, not the minutes
record objects take). With ``--report-sizes`` the HTML report is also
written (untimed) and its size printed: it must not grow with n.

The result goes to ``benchmarks/results/scaling.json``.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from _results import run_process, write_result

from realitycheck import Example, Label, Response, RunStore, Score
from realitycheck.metrics import LITTLE_BOOTSTRAP_ABOVE

EVALUATE = (
    "import sys; from realitycheck import RunStore, evaluate; evaluate(RunStore(sys.argv[1]))"
)
REPORT = (
    "import sys; from realitycheck import RunStore, write_report; "
    "write_report(RunStore(sys.argv[1]), sys.argv[2])"
)
TEMPLATES = {
    "examples": Example(example_id="x", dataset="synthetic", task="qa"),
    "responses": Response(response_id="x/0", example_id="x", model="m", text="t"),
    "labels": Label(response_id="x/0", labeler="human", hallucinated=True),
    "scores": Score(response_id="x/0", detector="recorded:noisy", value=0.0),
}


def _ids(prefix: str, *parts: np.ndarray) -> pa.Array:
    """``prefix/part0/part1...`` for each row, built by Arrow (no Python strings)."""
    columns = [pc.cast(pa.array(p), pa.string()) for p in parts]
    return pc.binary_join_element_wise(pa.scalar(prefix), *columns, "/")


def _write(store: RunStore, table: str, given: dict[str, pa.Array], n: int) -> None:
    """Write ``table`` as one Parquet file: ``given`` columns, the template's value elsewhere.

    The schema and the other fields come from one record written through the
    store (``append`` + ``compact``), so the file is what the store itself writes.
    """
    store.append([TEMPLATES[table]])
    store.compact(table)
    path = store.path / f"{table}.parquet"
    template = pq.read_table(path)
    first = pa.array(np.zeros(n, dtype=np.int64))
    columns = [
        given[f.name] if f.name in given else template.column(f.name).take(first)
        for f in template.schema
    ]
    pq.write_table(pa.table(columns, schema=template.schema), path)


def synthetic_run(path: Path, n: int, seed: int = 0) -> None:
    """A run of ``n`` responses with a human label and a ``recorded:noisy`` score each.

    Ten responses per example; 30% hallucinated; the score is the label plus
    standard normal noise (AUROC about 0.76).
    """
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    n_examples = max(1, n // 10)
    rows = np.arange(n, dtype=np.int64)
    example_of = _ids("s", rows % n_examples)
    response_ids = _ids("s", rows % n_examples, rows)
    bad = rng.random(n) < 0.3
    _write(store, "examples", {"example_id": _ids("s", np.arange(n_examples))}, n_examples)
    _write(store, "responses", {"response_id": response_ids, "example_id": example_of}, n)
    _write(store, "labels", {"response_id": response_ids, "hallucinated": pa.array(bad)}, n)
    value = pa.array(bad + rng.normal(size=n))
    _write(store, "scores", {"response_id": response_ids, "value": value}, n)


def _exponent(rows: list[tuple[int, float]]) -> list[str]:
    """The growth exponent of time between consecutive sizes: log(t2/t1) / log(n2/n1)."""
    out = [""]
    for (n1, t1), (n2, t2) in zip(rows, rows[1:], strict=False):
        out.append(f"time grows as n^{math.log(t2 / t1) / math.log(n2 / n1):.2f} from {n1:,}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 10_000_000]
    )
    parser.add_argument(
        "--report-sizes",
        type=int,
        nargs="*",
        default=[10_000, 1_000_000],
        help="also write the HTML report at these sizes (untimed) and give its size",
    )
    args = parser.parse_args()
    measured, reports = [], {}
    for n in args.sizes:
        work = Path(tempfile.mkdtemp(prefix="scaling-bench-"))
        try:
            synthetic_run(work / "run", n)
            seconds, peak = run_process([sys.executable, "-c", EVALUATE, str(work / "run")])
            if n in args.report_sizes:
                run_process([sys.executable, "-c", REPORT, str(work / "run"), str(work / "report")])
                reports[n] = (work / "report" / "report.html").stat().st_size
        finally:
            shutil.rmtree(work, ignore_errors=True)
        shown = f", report.html {reports[n] / 1024:,.0f} KiB" if n in reports else ""
        print(f"{n:>12,} responses: evaluate {seconds:8.1f} s, peak RSS {peak:,} MiB{shown}")
        measured.append((n, seconds, peak))
        _write_rows(measured, reports, args)  # after every size: a cut-off run keeps its rows


def _write_rows(
    measured: list[tuple[int, float, int]], reports: dict[int, int], args: argparse.Namespace
) -> None:
    growth = _exponent([(n, t) for n, t, _ in measured])
    rows = []
    for (n, seconds, peak), grows in zip(measured, growth, strict=True):
        notes = ["whole process, one run; target for 10M: under 600 s and 8 GB", grows]
        if n in reports:
            notes.append(f"report.html {reports[n] / 1024:,.0f} KiB")
        if n > LITTLE_BOOTSTRAP_ABOVE:
            notes.append(f"intervals: bag of little bootstraps (n > {LITTLE_BOOTSTRAP_ABOVE:,})")
        rows.append(
            {
                "work": f"`evaluate`, {n:,} synthetic responses, one detector, human labels",
                "realitycheck": f"{seconds:.1f} s, {peak:,} MiB",
                "alternative": "",
                "ratio": "",
                "note": "; ".join(x for x in notes if x),
            }
        )
    sizes = " ".join(str(n) for n, _, _ in measured)
    reported = " ".join(str(n) for n in args.report_sizes)
    write_result(
        "scaling",
        rows,
        f"python benchmarks/scaling.py --sizes {sizes} --report-sizes {reported}",
    )


if __name__ == "__main__":
    main()
