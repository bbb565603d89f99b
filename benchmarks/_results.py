"""Shared by the benchmarks: timing whole processes and writing result files.

A result file is ``benchmarks/results/<benchmark>.json``; ``benchmarks/table.py``
turns every such file into the README's performance table. Its schema::

    {
      "benchmark": "rouge_l",                  # the script's name, also the file's
      "date": "2026-11-23T12:00:00+00:00",     # when it ran (UTC, ISO 8601)
      "machine": "Linux x86_64, 2 CPUs, ...",  # where it ran (CPU model, cores, load)
      "command": "python benchmarks/rouge_l.py",  # how to reproduce it
      "rows": [
        {
          "work": "what was timed, on what data",
          "realitycheck": "0.92 s",            # realitycheck's figure, with its unit
          "alternative": "rouge-score script 4.7 s",  # the other tool's figure ("" if none)
          "ratio": "5.1x",                     # how many times better realitycheck is
          "note": "median of 3 runs; values equal"     # anything a reader must know
        }
      ]
    }

Every field is a string, so a figure keeps the unit and precision its
benchmark chose. A row whose ``alternative`` is empty has an empty ``ratio``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROW_FIELDS = ("work", "realitycheck", "alternative", "ratio", "note")
CLI = str(Path(sys.executable).with_name("realitycheck"))  # the installed console script


def machine() -> str:
    """Return a one-line description of this machine: OS, CPU model, cores and load."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{platform.system()} {platform.machine()}, {model}, {os.cpu_count()} CPUs{load}"


# Linux folds the high-water RSS of the memory a process had before ``exec`` into
# its peak, and a child forked from this (large) benchmark process starts from
# ours; so each command is started by a small launcher, whose own memory is
# all that can fold into the command's figure (a floor of about 10 MiB).
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_process(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> tuple[float, int]:
    """Run ``argv`` as a fresh process; return its wall seconds and peak RSS in MiB.

    Python may write bytecode caches (as an installed package has them), so a
    first run warms them up. The peak is the command's own (see ``_LAUNCHER``).
    A failing command stops the benchmark with its output.
    """
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "maxrss"
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-S", "-c", _LAUNCHER, str(peak_file), *argv],
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{shlex.join(argv)} failed:\n{proc.stdout.decode(errors='replace')}")
        return seconds, int(peak_file.read_text()) // 1024


def median_process(
    argv: Sequence[str], repeats: int, *, env: Mapping[str, str] | None = None, setup: Any = None
) -> tuple[float, int]:
    """Median wall seconds and largest peak RSS (MiB) of ``repeats`` runs after one warm-up.

    ``setup`` (no arguments) runs before each run, untimed (e.g. removing outputs).
    """
    times, peaks = [], []
    for k in range(repeats + 1):
        if setup is not None:
            setup()
        seconds, peak = run_process(argv, env=env)
        if k:
            times.append(seconds)
            peaks.append(peak)
    return statistics.median(times), max(peaks)


def write_result(benchmark: str, rows: Sequence[Mapping[str, str]], command: str) -> Path:
    """Write ``benchmarks/results/<benchmark>.json`` and return its path."""
    for row in rows:
        if set(row) != set(ROW_FIELDS) or not all(isinstance(v, str) for v in row.values()):
            raise ValueError(f"A result row needs exactly the string fields {ROW_FIELDS}: {row}")
    result = {
        "benchmark": benchmark,
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "machine": machine(),
        "command": command,
        "rows": [{k: row[k] for k in ROW_FIELDS} for row in rows],
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{benchmark}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return path


def ratio(theirs: float, ours: float) -> str:
    """``theirs / ours`` as ``"5.1x"`` (how many times faster realitycheck is)."""
    return f"{theirs / ours:.1f}x"
