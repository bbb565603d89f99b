"""How ``evaluate`` scales with the number of responses: wall time and peak memory.

For each size, a synthetic run is built (one dataset, ten responses per
example, a human label and one detector score per response, the score
informative about the label), then ``realitycheck.evaluate`` runs on it in a
fresh process with the default 1,000-resample bootstrap, ``--rounds`` times
(default 3; there is no other tool to interleave with, so the rounds follow
one another). The figures are the medians of the wall and CPU seconds of
that process alone (imports included) and its largest peak RSS; building
the run is not timed; the load around the rounds is stated. The AUROC that
``evaluate`` stores is checked against ``sklearn.metrics.roc_auc_score`` on
the same labels and scores (within 1e-9). The issue-13 targets are 10M
responses under 10 minutes and 8 GB. Run from the repository root:

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
from _results import Rounds, compare_values, interleave, process, report, run_process, write_result
from sklearn.metrics import roc_auc_score

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


def synthetic_run(path: Path, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A run of ``n`` responses with a human label and a ``recorded:noisy`` score each.

    Ten responses per example; 30% hallucinated; the score is the label plus
    standard normal noise (AUROC about 0.76). Returns the labels and scores.
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
    value = bad + rng.normal(size=n)
    _write(store, "scores", {"response_id": response_ids, "value": pa.array(value)}, n)
    return bad, value


def stored_auroc(run: Path) -> float:
    """The AUROC of ``recorded:noisy`` against the human labels that ``evaluate`` stored."""
    metrics = pq.read_table(run / "metrics.parquet").to_pandas()
    mask = (metrics["metric"] == "auroc") & (metrics["slice"] == "all")
    return float(metrics.loc[mask, "value"].item())


def _exponent(rows: list[tuple[int, float]]) -> list[str]:
    """The growth exponent of CPU time between consecutive sizes: log(t2/t1) / log(n2/n1).

    CPU time, not wall time: on a shared machine the load, not n, moves wall time most.
    """
    out = [""]
    for (n1, t1), (n2, t2) in zip(rows, rows[1:], strict=False):
        out.append(f"CPU time grows as n^{math.log(t2 / t1) / math.log(n2 / n1):.2f} from {n1:,}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 10_000_000]
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--report-sizes",
        type=int,
        nargs="*",
        default=[10_000, 1_000_000],
        help="also write the HTML report at these sizes (untimed) and give its size",
    )
    args = parser.parse_args()
    measured: list[tuple[int, Rounds, str]] = []
    reports: dict[int, int] = {}
    for n in args.sizes:
        work = Path(tempfile.mkdtemp(prefix="scaling-bench-"))
        try:
            bad, value = synthetic_run(work / "run", n)
            print(f"{n:>12,} responses:", flush=True)
            argv = [sys.executable, "-c", EVALUATE, str(work / "run")]
            timed = interleave({"evaluate": process(argv)}, args.rounds, warmup=0)
            checked = report(
                compare_values(
                    [stored_auroc(work / "run")],
                    [roc_auc_score(bad, value)],
                    tol=1e-9,
                    what="AUROC vs sklearn",
                )
            )
            if n in args.report_sizes:
                run_process([sys.executable, "-c", REPORT, str(work / "run"), str(work / "report")])
                reports[n] = (work / "report" / "report.html").stat().st_size
        finally:
            shutil.rmtree(work, ignore_errors=True)
        shown = f", report.html {reports[n] / 1024:,.0f} KiB" if n in reports else ""
        print(
            f"  evaluate {timed.seconds_text('evaluate', 1)}, peak RSS "
            f"{timed.peak('evaluate'):,} MiB{shown}"
        )
        measured.append((n, timed, checked))
        _write_rows(measured, reports, args)  # after every size: a cut-off run keeps its rows


def _write_rows(
    measured: list[tuple[int, Rounds, str]], reports: dict[int, int], args: argparse.Namespace
) -> None:
    growth = _exponent([(n, timed.cpu("evaluate")) for n, timed, _ in measured])
    rows = []
    for (n, timed, checked), grows in zip(measured, growth, strict=True):
        notes = [
            f"whole process, median of {timed.n} rounds; {timed.load()}",
            "target for 10M: under 600 s and 8 GB",
            grows,
            checked,
        ]
        if n in reports:
            notes.append(f"report.html {reports[n] / 1024:,.0f} KiB")
        if n > LITTLE_BOOTSTRAP_ABOVE:
            notes.append(f"intervals: bag of little bootstraps (n > {LITTLE_BOOTSTRAP_ABOVE:,})")
        rows.append(
            {
                "work": f"`evaluate`, {n:,} synthetic responses, one detector, human labels",
                "realitycheck": f"{timed.seconds_text('evaluate', 1)}, "
                f"{timed.peak('evaluate'):,} MiB",
                "alternative": "",
                "ratio": "",
                "note": "; ".join(x for x in notes if x),
            }
        )
    sizes = " ".join(str(n) for n, _, _ in measured)
    reported = " ".join(str(n) for n in args.report_sizes)
    rounds = "" if args.rounds == 3 else f" --rounds {args.rounds}"
    write_result(
        "scaling",
        rows,
        f"python benchmarks/scaling.py --sizes {sizes} --report-sizes {reported}{rounds}",
    )


if __name__ == "__main__":
    main()
