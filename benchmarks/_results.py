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

Every comparison follows the same rules, and the helpers here carry them out:

* the two sides run in **interleaved rounds** (:func:`interleave`: A B, then
  B A, ...), after a warm-up round, and each figure is the **median** of the
  rounds; a ratio is the median of the per-round ratios, so that a change in
  a shared machine's load during one round reaches both sides of that round;
* **CPU time** (user + system, of every thread and of finished child
  processes) is recorded beside wall time (:class:`Timing`), since a busy
  machine stretches wall time far more than CPU time;
* the **load** (1-minute load average) is read before and after every round
  and stated with the figures (:meth:`Rounds.load`);
* the two sides' **values are compared** (:func:`compare_values`,
  :func:`compare_exact`, :func:`compare_tables`), and the note says how many
  differ, so a check that could not fail shows up as such.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import math
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROW_FIELDS = ("work", "realitycheck", "alternative", "ratio", "note")
CLI = str(Path(sys.executable).with_name("realitycheck"))  # the installed console script


def _source_folder() -> Path:
    spec = importlib.util.find_spec("realitycheck")
    if spec is None or spec.origin is None:
        raise SystemExit("realitycheck cannot be imported: run from the repository's .venv")
    return Path(spec.origin).parents[1]


SRC = _source_folder()
"""The folder this process imports realitycheck from (``PYTHONPATH`` first, as Python looks).

Child processes get it as their ``PYTHONPATH``, so that every timed process
runs the same code as the benchmark, e.g. a snapshot of a commit
(``git archive HEAD src | tar -x -C /tmp/now``, then ``PYTHONPATH=/tmp/now/src``)
while the working tree changes.
"""


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


# ---------------------------------------------------------------- timing


@dataclass(frozen=True)
class Timing:
    """One timed run: wall seconds, CPU seconds and (for a whole process) peak RSS in MiB.

    ``cpu`` is user + system time of every thread, plus that of the child
    processes that finished (and were waited for) within the run.
    """

    wall: float
    cpu: float
    peak_mib: int = 0


def cpu_seconds() -> float:
    """User + system CPU seconds of this process's threads and of its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], Any]) -> tuple[Timing, Any]:
    """Call ``fn()`` in this process; return its :class:`Timing` and what it returned."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    value = fn()
    return Timing(time.perf_counter() - wall, cpu_seconds() - cpu), value


# Linux folds the high-water RSS of the memory a process had before ``exec`` into
# its peak, and a child forked from this (large) benchmark process starts from
# ours; so each command is started by a small launcher, whose own memory is
# all that can fold into the command's figure (a floor of about 10 MiB). The
# launcher also reports the command's CPU time, which ``wait4`` gives for the
# command and every descendant it waited for.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_command(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> tuple[Timing, str]:
    """Run ``argv`` as a fresh process; return its :class:`Timing` and its standard output.

    Python may write bytecode caches (as an installed package has them), so a
    first run warms them up. The peak and the CPU time are the command's own
    (see ``_LAUNCHER``). A failing command stops the benchmark with its output.
    """
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        usage_file = Path(tmp) / "usage"
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-S", "-c", _LAUNCHER, str(usage_file), *argv],
            env=full_env,
            capture_output=True,
            check=False,
        )
        seconds = time.perf_counter() - start
        out = proc.stdout.decode(errors="replace")
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace")
            raise SystemExit(f"{shlex.join(argv)} failed:\n{out[-3000:]}\n{err[-3000:]}")
        peak, cpu = usage_file.read_text().split()
        return Timing(seconds, float(cpu), int(peak) // 1024), out


def run_process(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> tuple[float, int]:
    """Run ``argv`` as a fresh process; return its wall seconds and peak RSS in MiB."""
    timing, _ = run_command(argv, env=env)
    return timing.wall, timing.peak_mib


# ---------------------------------------------------------------- rounds

Side = Callable[[], "Timing | tuple[Timing, Any]"]
"""One side of a comparison: runs the work once and returns its timing (and optionally a value)."""


def in_process(fn: Callable[[], Any]) -> Side:
    """A side that calls ``fn()`` in this process (its value is kept)."""
    return lambda: timed(fn)


def process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    setup: Callable[[], None] | None = None,
) -> Side:
    """A side that runs ``argv`` as a whole process (``setup`` first, untimed); keeps stdout."""

    def side() -> tuple[Timing, str]:
        if setup is not None:
            setup()
        return run_command(argv, env=env)

    return side


def load_average() -> float:
    """The 1-minute load average (NaN where the OS gives none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan


@dataclass
class Rounds:
    """Timings of several sides run in interleaved rounds, and the load around each round."""

    timings: dict[str, list[Timing]]
    loads: list[float]
    values: dict[str, Any] = field(default_factory=dict)
    """The value each side returned in its last round (its stdout, for a process)."""

    @property
    def n(self) -> int:
        """The number of timed rounds."""
        return len(next(iter(self.timings.values())))

    def wall(self, side: str) -> float:
        """Median wall seconds of ``side``."""
        return statistics.median(t.wall for t in self.timings[side])

    def cpu(self, side: str) -> float:
        """Median CPU seconds of ``side``."""
        return statistics.median(t.cpu for t in self.timings[side])

    def peak(self, side: str) -> int:
        """Largest peak RSS (MiB) of ``side`` over the rounds."""
        return max(t.peak_mib for t in self.timings[side])

    def ratios(self, theirs: str, ours: str, *, kind: str = "wall") -> list[float]:
        """``theirs / ours`` in each round (``kind`` ``wall`` or ``cpu``)."""
        return [
            getattr(t, kind) / getattr(o, kind)
            for t, o in zip(self.timings[theirs], self.timings[ours], strict=True)
        ]

    def ratio(self, theirs: str, ours: str, *, kind: str = "wall") -> float:
        """Median over the rounds of ``theirs / ours`` (higher = ``ours`` faster)."""
        return statistics.median(self.ratios(theirs, ours, kind=kind))

    def ratio_text(self, theirs: str, ours: str) -> str:
        """``"5.1x wall, 4.9x CPU"``: the median per-round ratios ``theirs / ours``."""
        return (
            f"{self.ratio(theirs, ours):.2f}x wall, {self.ratio(theirs, ours, kind='cpu'):.2f}x CPU"
        )

    def seconds_text(self, side: str, digits: int = 2) -> str:
        """``"1.03 s (CPU 0.98 s)"``: the median wall and CPU seconds of ``side``."""
        return f"{self.wall(side):.{digits}f} s (CPU {self.cpu(side):.{digits}f} s)"

    def load(self) -> str:
        """``"load 1.2-3.4"``: the range of the 1-minute load average around the rounds."""
        low, high = min(self.loads), max(self.loads)
        cores = os.cpu_count()
        span = f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"
        return f"load {span} on {cores} CPUs"

    def note(self, theirs: str | None = None, ours: str | None = None) -> str:
        """How the figures were taken: rounds, per-round ratios (when a pair is named), load."""
        text = f"median of {self.n} interleaved rounds after a warm-up"
        if theirs is not None and ours is not None:
            per_round = ", ".join(f"{r:.2f}" for r in self.ratios(theirs, ours))
            text += f" (wall ratios {per_round})"
        return f"{text}; {self.load()}"


def interleave(sides: Mapping[str, Side], rounds: int, *, warmup: int = 1) -> Rounds:
    """Run every side once per round, ``warmup`` untimed rounds first; return the timings.

    The order alternates (A B C, then C B A, ...), so that no side always
    runs first or right after another one's heavy work. The 1-minute load
    average is read before the first round and after every round.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be an int >= 1. Got {rounds} instead.")
    names = list(sides)
    timings: dict[str, list[Timing]] = {name: [] for name in names}
    values: dict[str, Any] = {}
    loads = [load_average()]
    for k in range(warmup + rounds):
        order = names if k % 2 == 0 else names[::-1]
        for name in order:
            got = sides[name]()
            timing, value = got if isinstance(got, tuple) else (got, None)
            values[name] = value
            if k >= warmup:
                timings[name].append(timing)
        if k >= warmup:
            loads.append(load_average())
        print(f"  round {k + 1 - warmup}/{rounds}" if k >= warmup else "  warm-up done", flush=True)
    return Rounds(timings, loads, values)


# ---------------------------------------------------------------- equality


@dataclass(frozen=True)
class Agreement:
    """How two sides' values for the same inputs compare.

    ``n`` values were compared; ``n_differ`` of them differ by more than
    ``tol`` (a value missing or NaN on one side only, or a length mismatch,
    counts as differing); ``max_diff`` is the largest difference among the
    values present on both sides.
    """

    what: str
    n: int
    n_differ: int
    max_diff: float
    tol: float
    exact: bool = False
    """Compared with ``==`` (choices, tokens, bytes): no difference to measure."""

    @property
    def equal(self) -> bool:
        """Whether every value agrees within ``tol``."""
        return self.n_differ == 0

    def text(self) -> str:
        """One clause for a note, e.g. ``"CIs equal (40 of 40 within 1e-12, max diff 1.1e-16)"``."""
        if self.exact:
            if self.equal:
                return f"{self.what} identical ({self.n} of {self.n})"
            return f"{self.what} DIFFER: {self.n_differ} of {self.n} not identical"
        if self.equal:
            return (
                f"{self.what} equal ({self.n} of {self.n} within {self.tol:g}, "
                f"max diff {self.max_diff:.1e})"
            )
        return (
            f"{self.what} DIFFER: {self.n_differ} of {self.n} not within {self.tol:g} "
            f"(max diff {self.max_diff:.1e})"
        )


def _number(x: Any) -> float:
    return math.nan if x is None else float(x)


def compare_values(
    ours: Sequence[Any], theirs: Sequence[Any], *, tol: float, what: str = "values"
) -> Agreement:
    """Compare two sequences of numbers (``None`` or NaN = no value) pairwise within ``tol``."""
    n = max(len(ours), len(theirs))
    differ, largest = abs(len(ours) - len(theirs)), 0.0
    for a, b in zip(map(_number, ours), map(_number, theirs), strict=False):
        if math.isnan(a) or math.isnan(b):
            differ += math.isnan(a) != math.isnan(b)
            continue
        diff = abs(a - b)
        largest = max(largest, diff)
        differ += diff > tol
    return Agreement(what, n, differ, largest, tol)


def compare_exact(ours: Sequence[Any], theirs: Sequence[Any], *, what: str) -> Agreement:
    """Compare two sequences of anything (choices, tokens, bytes) item by item with ``==``."""
    n = max(len(ours), len(theirs))
    differ = abs(len(ours) - len(theirs))
    differ += sum(a != b for a, b in zip(ours, theirs, strict=False))
    return Agreement(what, n, differ, 0.0 if differ == 0 else math.inf, 0.0, exact=True)


def compare_tables(ours: Any, theirs: Any, *, tol: float, what: str = "cells") -> Agreement:
    """Compare two pandas tables cell by cell: same columns and shape, text equal, numbers within.

    A table of another shape or with other columns differs in every cell.
    """
    import pandas as pd

    if list(ours.columns) != list(theirs.columns) or ours.shape != theirs.shape:
        n = max(ours.size, theirs.size, 1)
        return Agreement(what, n, n, math.inf, tol)
    parts = []
    for column in ours.columns:
        a, b = ours[column], theirs[column]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
            parts.append(compare_values(list(a), list(b), tol=tol))
        else:
            parts.append(compare_exact(list(a.astype(str)), list(b.astype(str)), what=what))
    numeric = [p.max_diff for p in parts if not p.exact]
    n, differ = sum(p.n for p in parts), sum(p.n_differ for p in parts)
    return Agreement(what, n, differ, max(numeric, default=0.0), tol)


def report(*agreements: Agreement) -> str:
    """Print each agreement (a loud line for one that differs); return their texts joined."""
    for agreement in agreements:
        mark = "" if agreement.equal else "  <-- the two sides disagree"
        print(f"  {agreement.text()}{mark}", flush=True)
    return "; ".join(a.text() for a in agreements)


# ---------------------------------------------------------------- result files


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
