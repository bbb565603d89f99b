"""Each stage's share of the demo's time: wall and CPU seconds, on a fresh folder.

Runs what ``realitycheck demo --report-dir OUT`` runs (the same datasets, labelers,
detectors, evaluate settings, every study and the report), stage by stage,
and times each one: ingest per dataset, each labeler and each detector per
dataset, evaluate, the studies (side by side in one worker process per core,
as the demo runs them; ``--study-workers 1`` times each study alone, one
after another), the report. The machine may be shared, so the
CPU time of the process (all its threads, plus finished children, from
``resource.getrusage``) is recorded beside the wall time; judge changes by
CPU time. The studies also pay for loading the run's data (once per worker).

The embedding cache (``REALITYCHECK_EMBED_CACHE``) is pointed at a fresh
folder inside ``OUT`` unless ``--embed-cache`` names one, so the default
measures a first run (set ``REALITYCHECK_CACHE_DIR`` to a fresh folder too, so
that the ONNX export is paid for as well). Each run writes its raw timings to
``benchmarks/results/demo_stages/<name>.json``, with the load before and
after it; ``--compare-with FOLDER`` (another run's ``OUT``) also compares
every CSV table of the two runs cell by cell
(``benchmarks/compare_demo_runs.py``) and records how many differ.
``--summarise FIRST WARM`` turns two of them into
``benchmarks/results/demo_stages.{json,md}`` (the headline rows in
``benchmarks/table.py``'s schema, every stage's CPU and wall seconds in
each run). There is no other tool to interleave with: each figure is one
run, and says so. Run from the repository root:

    REALITYCHECK_CACHE_DIR=/tmp/c PYTHONPATH=src .venv/bin/python \
        benchmarks/demo_stages.py --out /tmp/d1 --name first
    REALITYCHECK_CACHE_DIR=/tmp/c PYTHONPATH=src .venv/bin/python \
        benchmarks/demo_stages.py --out /tmp/d2 --embed-cache /tmp/d1/embed --name warm \
        --compare-with /tmp/d1
    .venv/bin/python benchmarks/demo_stages.py --summarise first warm
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
RAW = RESULTS / "demo_stages"
"""Each run's raw stage timings (not read by table.py, which reads ``results/*.json``)."""


def cpu_seconds() -> float:
    """User + system CPU seconds of this process's threads and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Timer:
    """Collects ``(stage, wall seconds, CPU seconds)`` for each timed block, in order."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float]] = []

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as stage ``name``."""
        wall, cpu = time.perf_counter(), cpu_seconds()
        try:
            yield
        finally:
            row = (name, time.perf_counter() - wall, cpu_seconds() - cpu)
            self.rows.append(row)
            print(f"{row[0]:<55} wall {row[1]:8.2f} s  cpu {row[2]:8.2f} s", flush=True)


def run(out: Path, data_dir: str | None, timer: Timer, workers: int | None = None) -> None:
    """Run the demo's stages into ``out`` (``out/run`` and the report), timing each.

    With ``workers`` other than 1 the studies run as the demo runs them
    (``run_studies``, side by side in that many worker processes; ``None`` =
    one per core), timed as one stage; with 1 each study is timed alone.
    """
    from realitycheck.analysis import Bootstrap
    from realitycheck.datasets import datasets
    from realitycheck.detectors import detectors
    from realitycheck.labelers import labelers
    from realitycheck.pipeline import EvaluationConfig, detect, evaluate, ingest, label
    from realitycheck.report import write_report
    from realitycheck.runner import DEMO_PLAN, build_studies, demo_study_keys, run_studies
    from realitycheck.store import RunData, RunStore, save_result

    bootstrap = Bootstrap()
    store = RunStore(out / "run")
    for name, (lab_keys, det_keys) in DEMO_PLAN.items():
        with timer.stage(f"ingest {name}"):
            ds = datasets.create(name, data_dir=data_dir) if data_dir else datasets.create(name)
            ingest(store, ds)
        for key in lab_keys:
            with timer.stage(f"label {name} {key}"):
                label(store, [labelers.create_from_key(key)], datasets=[ds.run_name])
        for key in det_keys:
            with timer.stage(f"detect {name} {key}"):
                detect(store, [detectors.create_from_key(key)], datasets=[ds.run_name])
    with timer.stage("evaluate"):
        evaluate(store, EvaluationConfig(bootstrap=bootstrap))
    if workers == 1:
        data = RunData(store)
        for component in build_studies(demo_study_keys()):
            with timer.stage(f"study {component.name}"):
                save_result(store, component.run(data, bootstrap=bootstrap))
    else:
        with timer.stage(f"studies ({workers or 'one per core'} workers)"):
            run_studies(store, demo_study_keys(), bootstrap=bootstrap, workers=workers)
    with timer.stage("report"):
        write_report(store, out)


def stage_record(
    timer: Timer, wall: float, cpu: float, loads: tuple[float, float], compared: str
) -> dict[str, object]:
    """One run's raw timings: date, machine, command, load, totals and each stage's seconds."""
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}, "
        f"load {loads[0]:.1f} before, {loads[1]:.1f} after",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "load_before": round(loads[0], 2),
        "load_after": round(loads[1], 2),
        "compared": compared,
        "total_wall_s": round(wall, 2),
        "total_cpu_s": round(cpu, 2),
        "stages": [
            {"work": name, "wall_s": round(w, 3), "cpu_s": round(c, 3)} for name, w, c in timer.rows
        ],
    }


def _seconds(run: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Stage name -> (CPU s, wall s); the older raw files name them ``rows``."""
    rows = run.get("stages", run.get("rows", []))
    return {r["work"]: (float(r["cpu_s"]), float(r["wall_s"])) for r in rows}


def _load(run: dict[str, Any]) -> str:
    """``"load 1.2 -> 3.4"`` from a raw run (older files give only the machine line)."""
    if "load_before" in run:
        return f"load {run['load_before']:.1f} before, {run['load_after']:.1f} after"
    return run["machine"].split(", ")[-1]


def summary(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The ``demo_stages`` result: headline rows (table.py's schema) and every stage's seconds.

    ``runs`` maps ``first`` and ``warm`` to raw run files. ``rows`` give the
    totals of both, wall and CPU seconds, and the five largest stages of the
    first run with their warm-cache CPU seconds; ``stages`` holds each
    stage's CPU and wall seconds in every run.
    """
    secs = {label: _seconds(run) for label, run in runs.items()}
    first, warm = runs["first"], runs["warm"]
    rows = [
        _row(
            "whole demo, first run (fresh caches)",
            first,
            f"one run; {_load(first)} on {os.cpu_count()} CPUs",
        ),
        _row(
            "whole demo, rerun with a warm embedding cache",
            warm,
            f"one run; {_load(warm)} on {os.cpu_count()} CPUs; "
            + (warm.get("compared") or "tables not compared"),
        ),
    ]
    largest = sorted(secs["first"].items(), key=lambda kv: -kv[1][0])[:5]
    for name, (cpu, wall) in largest:
        warm_cpu, warm_wall = secs["warm"].get(name, (float("nan"), float("nan")))
        rows.append(
            {
                "work": f"demo stage: {name}, first run",
                "realitycheck": f"{wall:.1f} s (CPU {cpu:.1f} s)",
                "alternative": "",
                "ratio": "",
                "note": f"warm cache: {warm_wall:.1f} s (CPU {warm_cpu:.1f} s)",
            }
        )
    names = list(dict.fromkeys([n for label in runs for n in secs[label]]))
    stages = [
        {
            "work": name,
            **{
                f"{label}_{kind}_s": (secs[label][name][k] if name in secs[label] else None)
                for label in runs
                for k, kind in enumerate(("cpu", "wall"))
            },
        }
        for name in names
    ]
    return {
        "benchmark": "demo_stages",
        "date": first["date"],
        "machine": first["machine"],
        "command": first["command"],
        "rows": rows,
        "runs": {
            label: {k: v for k, v in run.items() if k not in ("stages", "rows")}
            for label, run in runs.items()
        },
        "stages": stages,
    }


def _row(work: str, run: dict[str, Any], note: str) -> dict[str, str]:
    """A table.py row for a whole run: wall and CPU seconds."""
    return {
        "work": work,
        "realitycheck": f"{run['total_wall_s']:.0f} s (CPU {run['total_cpu_s']:.0f} s)",
        "alternative": "",
        "ratio": "",
        "note": note,
    }


def markdown(result: dict[str, Any]) -> str:
    """The summary as Markdown: the runs, then every stage's CPU/wall before and now."""
    lines = [f"# {result['benchmark']}", ""]
    for label, run in result["runs"].items():
        lines.append(
            f"- **{label}**: {run['date']}; {run['machine']}; `{run['command']}`; "
            f"total wall {run['total_wall_s']:.1f} s, CPU {run['total_cpu_s']:.1f} s"
        )
    labels = list(result["runs"])
    head = [f"{label} CPU s" for label in labels] + [f"{label} wall s" for label in labels]
    lines += ["", "| stage | " + " | ".join(head) + " |", "|---" * (1 + len(head)) + "|"]

    def fmt(value: float | None) -> str:
        return "" if value is None else f"{value:.2f}"

    order = sorted(result["stages"], key=lambda r: -(r.get("first_cpu_s") or 0.0))
    for r in order:
        cells = [fmt(r[f"{label}_cpu_s"]) for label in labels]
        cells += [fmt(r[f"{label}_wall_s"]) for label in labels]
        lines.append(f"| {r['work']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def compare(out: Path, other: Path, atol: float = 1e-9) -> str:
    """Compare every CSV table under ``out`` with ``other``'s; one clause saying how many differ."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from compare_demo_runs import table_difference

    paths = sorted(out.rglob("*.csv"))
    off, largest = 0, 0.0
    for path in paths:
        twin = other / path.relative_to(out)
        diff, why = table_difference(path, twin) if twin.exists() else (float("inf"), "missing")
        off += bool(why) or diff > atol
        largest = max(largest, diff)
    if off:
        return f"CSV tables DIFFER from the first run's: {off} of {len(paths)} beyond {atol:g}"
    return (
        f"CSV tables equal to the first run's ({len(paths)} of {len(paths)} within {atol:g}, "
        f"max diff {largest:.1e})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="a fresh folder to run the demo in")
    parser.add_argument("--data-dir", help="the datasets' folder (default: ../shared/data)")
    parser.add_argument("--embed-cache", type=Path, help="embedding cache (default: OUT/embed)")
    parser.add_argument(
        "--name", default="first", help="raw result stem (under results/demo_stages/)"
    )
    parser.add_argument(
        "--study-workers",
        type=int,
        default=None,
        help="processes computing studies side by side (default: one per core, as the demo; "
        "1 = one after another, each study timed alone)",
    )
    parser.add_argument(
        "--compare-with",
        type=Path,
        help="another run's OUT: compare every CSV table of the two runs after this one",
    )
    parser.add_argument(
        "--summarise",
        nargs=2,
        metavar=("FIRST", "WARM"),
        help="write demo_stages.{json,md} from two raw run stems; runs nothing",
    )
    args = parser.parse_args()
    if args.summarise:
        runs = {
            label: json.loads((RAW / f"{stem}.json").read_text())
            for label, stem in zip(("first", "warm"), args.summarise, strict=True)
        }
        result = summary(runs)
        (RESULTS / "demo_stages.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "demo_stages.md").write_text(markdown(result))
        print(f"wrote {RESULTS / 'demo_stages'}.{{json,md}}")
        return
    if args.out is None:
        parser.error("--out is required unless --summarise is given")
    if (args.out / "run").exists():
        parser.error(f"{args.out}/run exists; the benchmark needs a fresh folder")
    os.environ["REALITYCHECK_EMBED_CACHE"] = str(args.embed_cache or args.out / "embed")
    timer = Timer()
    load_before = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), cpu_seconds()
    with timer.stage("import realitycheck"):
        import realitycheck  # noqa: F401
    run(args.out, args.data_dir, timer, args.study_workers)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    loads = (load_before, os.getloadavg()[0])
    compared = "" if args.compare_with is None else compare(args.out, args.compare_with)
    RAW.mkdir(parents=True, exist_ok=True)
    (RAW / f"{args.name}.json").write_text(
        json.dumps(stage_record(timer, wall, cpu, loads, compared), indent=2) + "\n"
    )
    print(f"total: wall {wall:.1f} s, CPU {cpu:.1f} s -> {RAW / args.name}.json")


if __name__ == "__main__":
    main()
