"""How long the command line takes to start, against a bare ``python -c pass``.

Each command runs as a fresh process, ``--repeats`` times in turn with the
others (so a busy machine slows all of them alike); the median wall time is
shown, with its ratio to ``python -c pass`` and the target of issue 7
(``--help`` under 0.5 s, ``components`` under 1.5 s). With ``--before PATH``
(a checkout of an older commit), the same commands also run on that code,
through ``PYTHONPATH=PATH/src``, in the same rounds. Run from the repository
root:

    .venv/bin/python benchmarks/startup.py
    git worktree add /tmp/before 10fb4db
    .venv/bin/python benchmarks/startup.py --before /tmp/before
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PYTHON = sys.executable
CLI = [str(Path(PYTHON).with_name("realitycheck"))]  # the installed console script
COMMANDS: dict[str, tuple[list[str], float | None]] = {
    "python -c pass": ([PYTHON, "-c", "pass"], None),
    "import realitycheck": ([PYTHON, "-c", "import realitycheck"], None),
    "realitycheck --help": ([*CLI, "--help"], 0.5),
    "realitycheck components": ([*CLI, "components"], 1.5),
}


def run_once(command: list[str], src: Path | None) -> float:
    """Wall time of one run of ``command`` (the code from ``src`` if given)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode caches, as an installed package has
    if src is not None:
        env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a checkout of older code to compare with")
    args = parser.parse_args()
    variants: dict[str, Path | None] = {"now": None}
    if args.before is not None:
        variants["before"] = args.before.resolve() / "src"
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for name, (command, _target) in COMMANDS.items():
            for variant, src in variants.items():
                times.setdefault((name, variant), []).append(run_once(command, src))
    base = statistics.median(times[("python -c pass", "now")])
    print(f"median of {args.repeats} runs; machine load {os.getloadavg()[0]:.1f}")
    header = f"{'command':26s} {'now':>8s} {'x pass':>7s} {'target':>7s}"
    if "before" in variants:
        header += f" {'before':>8s} {'speed-up':>9s}"
    print(header)
    for name, (_command, target) in COMMANDS.items():
        now = statistics.median(times[(name, "now")])
        met = "" if target is None else f"{target:.1f}{'ok' if now < target else '!!':>3s}"
        line = f"{name:26s} {now:7.3f}s {now / base:6.1f}x {met:>7s}"
        if "before" in variants:
            before = statistics.median(times[(name, "before")])
            line += f" {before:7.3f}s {before / now:8.1f}x"
        print(line)


if __name__ == "__main__":
    main()
