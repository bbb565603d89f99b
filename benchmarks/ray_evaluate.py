"""``evaluate`` on a local Ray cluster against the same command in one process.

``realitycheck evaluate -d truthfulqa -l rouge_l -D length --no-report`` runs
as a whole process, once with ``--executor local`` and once with ``--executor
ray`` against a Ray cluster started here (one node, ``--cpus`` worker CPUs,
on 127.0.0.1), in alternating rounds after one warm-up round (which also
computes the labels and scores, so the timed rounds only evaluate). Both
must write byte-identical ``metrics.csv`` and ``agreement.csv``.

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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import CLI, ratio, run_process, write_result

SRC = Path(__file__).resolve().parents[1] / "src"
RAY = str(Path(sys.executable).with_name("ray"))
# A cluster of one machine needs no token (Ray 2.60 asks for one by default).
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def data_dir() -> Path:
    env = os.environ.get("REALITYCHECK_DATA_DIR")
    return Path(env) if env else SRC.parents[1] / "shared" / "data"


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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=2, help="Worker CPUs of the cluster.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ray-evaluate-bench-"))
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    address, group = start_cluster(temp, args.cpus)
    try:
        row = evaluate_row(work, address, args)
    finally:
        stop_cluster(group, temp)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(temp, ignore_errors=True)
    flags = "" if args.cpus == 2 else f" --cpus {args.cpus}"
    write_result("ray_evaluate", [row], f"python benchmarks/ray_evaluate.py{flags}")


def evaluate_row(work: Path, address: str, args: argparse.Namespace) -> dict[str, str]:
    """Time evaluate in one process and on the cluster, alternating; check equal outputs."""
    command = [CLI, "evaluate", "-d", "truthfulqa", "-l", "rouge_l", "-D", "length"]
    command += ["--data-dir", str(data_dir()), "--no-cache", "--no-report"]
    runs = {"local": work / "local", "ray": work / "ray"}
    argv = {
        "local": [*command, "--run", str(runs["local"])],
        "ray": [*command, "--run", str(runs["ray"]), "--executor", "ray"],
    }
    env = {"PYTHONPATH": str(SRC), **RAY_ENV, "RAY_ADDRESS": address}
    for name in runs:  # warm-up: loads the dataset, computes the labels and scores
        run_process(argv[name], env=env)
    seconds: dict[str, list[float]] = {"local": [], "ray": []}
    peaks: dict[str, int] = {"local": 0, "ray": 0}
    for _ in range(args.repeats):
        for name in runs:
            took, peak = run_process(argv[name], env=env)
            seconds[name].append(took)
            peaks[name] = max(peaks[name], peak)
    for table in ("metrics.csv", "agreement.csv"):
        if (runs["ray"] / table).read_bytes() != (runs["local"] / table).read_bytes():
            raise SystemExit(f"{table} differs between the local and the Ray run")
    local, on_ray = (statistics.median(seconds[n]) for n in ("local", "ray"))
    print(f"evaluate: in one process {local:.2f} s, on Ray {on_ray:.2f} s; outputs equal")
    return {
        "work": "`realitycheck evaluate -d truthfulqa -l rouge_l -D length --executor ray` "
        f"on a local one-node Ray cluster ({args.cpus} worker CPUs), 3 units of work",
        "realitycheck": f"{on_ray:.2f} s",
        "alternative": f"the same with --executor local {local:.2f} s",
        "ratio": ratio(local, on_ray),
        "note": f"whole process, median of {args.repeats}, alternating; driver peak RSS "
        f"{peaks['ray']} MiB vs {peaks['local']} MiB; metrics.csv and agreement.csv "
        "byte-identical; the cluster shares the machine's cores with the driver",
    }


if __name__ == "__main__":
    main()
