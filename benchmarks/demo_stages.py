"""Each stage's share of the demo's time: wall and CPU seconds, on a fresh folder.

Runs what ``realitycheck demo --out OUT`` runs (the same datasets, labelers,
detectors, evaluate settings, every study and the report), stage by stage,
and times each one: ingest per dataset, each labeler and each detector per
dataset, evaluate, each study, the report. The machine may be shared, so the
CPU time of the process (all its threads, plus finished children, from
``resource.getrusage``) is recorded beside the wall time; judge changes by
CPU time. The first study also pays for loading the run's data.

The embedding cache (``REALITYCHECK_EMBED_CACHE``) is pointed at a fresh
folder inside ``OUT`` unless ``--embed-cache`` names one, so the default
measures a first run. ``--compare OLD.json`` puts an older result's CPU
seconds beside each stage (``alternative``) with the ratio old / new. Run
from the repository root:

    PYTHONPATH=src .venv/bin/python benchmarks/demo_stages.py --out /tmp/d-stages
    PYTHONPATH=src .venv/bin/python benchmarks/demo_stages.py --out /tmp/d2 \
        --compare benchmarks/results/demo_stages_before.json

Writes ``benchmarks/results/demo_stages.{json,md}`` (``--name`` changes the stem).
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

RESULTS = Path(__file__).resolve().parent / "results"


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


def run(out: Path, data_dir: str | None, timer: Timer) -> None:
    """Run the demo's stages into ``out`` (``out/run`` and the report), timing each."""
    from realitycheck.analysis import Bootstrap
    from realitycheck.datasets import datasets
    from realitycheck.detectors import detectors
    from realitycheck.labelers import labelers
    from realitycheck.pipeline import EvaluationConfig, detect, evaluate, ingest, label
    from realitycheck.report import write_report
    from realitycheck.runner import DEMO_PLAN, build_studies, demo_study_keys
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
    data = RunData(store)
    for component in build_studies(demo_study_keys()):
        with timer.stage(f"study {component.name}"):
            save_result(store, component.run(data, bootstrap=bootstrap))
    with timer.stage("report"):
        write_report(store, out)


def result_rows(timer: Timer, old: dict[str, float]) -> list[dict[str, object]]:
    """One row per stage: CPU seconds now, CPU seconds of ``old`` and old / new."""
    total_cpu = sum(cpu for _, _, cpu in timer.rows) or 1.0
    rows = []
    for name, wall, cpu in timer.rows:
        before = old.get(name)
        rows.append(
            {
                "work": name,
                "realitycheck": round(cpu, 2),
                "alternative": None if before is None else round(before, 2),
                "ratio": None if before is None or cpu <= 0 else round(before / cpu, 2),
                "note": f"CPU s now (old CPU s); wall {wall:.2f} s; "
                f"{100 * cpu / total_cpu:.1f}% of CPU",
                "wall_s": round(wall, 3),
                "cpu_s": round(cpu, 3),
            }
        )
    return rows


def markdown(result: dict[str, object]) -> str:
    """The result as a Markdown table, largest CPU share first."""
    rows = sorted(result["rows"], key=lambda r: -r["cpu_s"])  # type: ignore[index, arg-type]
    lines = [
        f"# {result['benchmark']}",
        "",
        f"{result['date']}; {result['machine']}",
        "",
        f"`{result['command']}`",
        "",
        f"total: wall {result['total_wall_s']:.1f} s, CPU {result['total_cpu_s']:.1f} s",
        "",
        "| stage | CPU s | wall s | CPU share | old CPU s | old / new |",
        "|---|---|---|---|---|---|",
    ]
    total = float(result["total_cpu_s"]) or 1.0  # type: ignore[arg-type]
    for r in rows:
        old = "" if r["alternative"] is None else f"{r['alternative']:.2f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        lines.append(
            f"| {r['work']} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | "
            f"{100 * r['cpu_s'] / total:.1f}% | {old} | {ratio} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="a fresh folder")
    parser.add_argument("--data-dir", help="the datasets' folder (default: ../shared/data)")
    parser.add_argument("--embed-cache", type=Path, help="embedding cache (default: OUT/embed)")
    parser.add_argument("--compare", type=Path, help="an older result JSON to compare with")
    parser.add_argument("--name", default="demo_stages", help="result file stem")
    args = parser.parse_args()
    if (args.out / "run").exists():
        parser.error(f"{args.out}/run exists; the benchmark needs a fresh folder")
    os.environ["REALITYCHECK_EMBED_CACHE"] = str(args.embed_cache or args.out / "embed")
    old = {}
    if args.compare is not None:
        old = {r["work"]: r["cpu_s"] for r in json.loads(args.compare.read_text())["rows"]}
    timer = Timer()
    wall, cpu = time.perf_counter(), cpu_seconds()
    with timer.stage("import realitycheck"):
        import realitycheck  # noqa: F401
    run(args.out, args.data_dir, timer)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    result = {
        "benchmark": "demo_stages",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.1f} at the end",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "total_wall_s": round(wall, 2),
        "total_cpu_s": round(cpu, 2),
        "rows": result_rows(timer, old),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(result))
    print(f"total: wall {wall:.1f} s, CPU {cpu:.1f} s -> {RESULTS / args.name}.json")


if __name__ == "__main__":
    main()
