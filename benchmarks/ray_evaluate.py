"""``evaluate`` on a local Ray cluster against the same command in one process.

``realitycheck evaluate -d truthfulqa -l rouge_l -D length --no-report`` runs
as a whole process, once with ``--executor local`` and once with ``--executor
ray`` against a Ray cluster started here (one node, ``--cpus`` worker CPUs,
on 127.0.0.1), in interleaved rounds (``--rounds``, default 3) after one
warm-up round, which also computes the labels and scores, so the timed
rounds only evaluate (``benchmarks/_results.py``: medians of wall and CPU
seconds, the ratio the median of the rounds' ratios, the load stated). The
Ray side's CPU seconds are the driver's plus what the cluster's processes
(its daemons and what they started, read with psutil before and after the
run) spent meanwhile; a worker that ends within the run is missed, so the
figure is a floor and no CPU ratio is given; the local side's are the
driver's alone. The ``metrics.csv`` and
``agreement.csv`` of both are compared byte for byte.

Evaluate's unit of work is one dataset against one ground truth: here three
units (the detector against the human and the ROUGE-L labels, ROUGE-L
against the humans), so at most three workers are busy at once. The cluster
shares this machine's cores with the driver; the figure says what the Ray
path costs, not what a real multi-node cluster gains. Run from the
repository root:

    .venv/bin/python benchmarks/ray_evaluate.py

The result goes to ``benchmarks/results/ray_evaluate.json``. The data
folder is ``$REALITYCHECK_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _results import (
    CLI,
    SRC,
    Timing,
    compare_exact,
    interleave,
    process,
    report,
    write_result,
)

RAY = str(Path(sys.executable).with_name("ray"))
# A cluster of one machine needs no token (Ray 2.60 asks for one by default).
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def data_dir() -> Path:
    env = os.environ.get("REALITYCHECK_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def start_cluster(temp: Path, cpus: int) -> tuple[str, int]:
    """Start a one-node cluster on 127.0.0.1; return its address and process group."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {**os.environ, **RAY_ENV, "PYTHONPATH": str(SRC)}
    env.pop("RAY_ADDRESS", None)
    argv = [RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}"]
    argv += [f"--num-cpus={cpus}", f"--temp-dir={temp}", "--include-dashboard=false"]
    argv += ["--disable-usage-stats"]
    log = (temp / "start.log").open("w")
    proc = subprocess.Popen(
        argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    if proc.wait(timeout=180) != 0:
        raise SystemExit(f"ray start failed: {(temp / 'start.log').read_text()[-2000:]}")
    return f"127.0.0.1:{port}", proc.pid


def cluster_processes(group: int, temp: Path) -> list:
    """The cluster's processes: daemons (process group ``group``) and all they started.

    Workers are found as the daemons' descendants: they may leave the group,
    and they rename themselves (``ray::IDLE``), so their command line need
    not name ``temp``.
    """
    import psutil  # a dependency of ray

    found: dict[int, Any] = {}
    for p in psutil.process_iter(["cmdline"]):
        try:
            if os.getpgid(p.pid) == group or any(
                str(temp) in part for part in p.info["cmdline"] or ()
            ):
                found[p.pid] = p
                found.update({c.pid: c for c in p.children(recursive=True)})
        except (ProcessLookupError, psutil.Error):
            pass
    return list(found.values())


def cluster_cpu(group: int, temp: Path) -> float:
    """CPU seconds the cluster's processes have spent so far (their own and their children's)."""
    import psutil

    total = 0.0
    for p in cluster_processes(group, temp):
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def stop_cluster(group: int, temp: Path) -> None:
    """Stop the cluster's daemons (its process group) and workers (which name ``temp``)."""
    import psutil  # a dependency of ray

    workers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(str(temp) in part for part in p.info["cmdline"] or ())
    ]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            break
        time.sleep(2.0 if sig == signal.SIGTERM else 0.0)
    for proc in workers:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=2, help="Worker CPUs of the cluster.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ray-evaluate-bench-"))
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    address, group = start_cluster(temp, args.cpus)
    try:
        row = evaluate_row(work, address, args, lambda: cluster_cpu(group, temp))
    finally:
        stop_cluster(group, temp)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(temp, ignore_errors=True)
    flags = "" if args.cpus == 2 else f" --cpus {args.cpus}"
    flags += "" if args.rounds == 3 else f" --rounds {args.rounds}"
    write_result("ray_evaluate", [row], f"python benchmarks/ray_evaluate.py{flags}")


def evaluate_row(
    work: Path, address: str, args: argparse.Namespace, cluster: Callable[[], float]
) -> dict[str, str]:
    """Time evaluate in one process and on the cluster, interleaved; compare the outputs."""
    command = [CLI, "evaluate", "-d", "truthfulqa", "-l", "rouge_l", "-D", "length"]
    command += ["--data-dir", str(data_dir()), "--no-cache", "--no-report"]
    runs = {"local": work / "local", "ray": work / "ray"}
    env = {"PYTHONPATH": str(SRC), **RAY_ENV, "RAY_ADDRESS": address}
    local = process([*command, "--run", str(runs["local"])], env=env)
    driver = process([*command, "--run", str(runs["ray"]), "--executor", "ray"], env=env)

    def on_ray() -> Timing:
        before = cluster()
        timing, _ = driver()
        return Timing(timing.wall, timing.cpu + cluster() - before, timing.peak_mib)

    timed = interleave({"local": local, "ray": on_ray}, args.rounds)
    checked = report(
        compare_exact(
            [(runs["ray"] / t).read_bytes() for t in ("metrics.csv", "agreement.csv")],
            [(runs["local"] / t).read_bytes() for t in ("metrics.csv", "agreement.csv")],
            what="metrics.csv and agreement.csv",
        )
    )
    print(f"evaluate: in one process {timed.seconds_text('local')}")
    print(f"evaluate: on Ray {timed.seconds_text('ray')}")
    return {
        "work": "`realitycheck evaluate -d truthfulqa -l rouge_l -D length --executor ray` "
        f"on a local one-node Ray cluster ({args.cpus} worker CPUs), 3 units of work",
        "realitycheck": timed.seconds_text("ray"),
        "alternative": f"the same with --executor local {timed.seconds_text('local')}",
        "ratio": f"{timed.ratio('local', 'ray'):.2f}x wall",
        "note": f"whole process, {timed.note('local', 'ray')}; no CPU ratio: the CPU on "
        "Ray counts the driver and the cluster's processes alive before and after the run, "
        "and misses a worker that ended within it (a floor); driver peak RSS "
        f"{timed.peak('ray')} MiB vs "
        f"{timed.peak('local')} MiB; {checked} (byte for byte); the cluster shares the "
        "machine's cores with the driver",
    }


if __name__ == "__main__":
    main()
