"""Are two demo output folders the same numbers? Compare every CSV table cell by cell.

For each ``*.csv`` under folder ``A`` (``metrics.csv``, ``studies/*/*.csv``…)
the same file under ``B`` must exist with the same columns and rows; text
cells must be equal, numeric cells equal within ``--atol`` (NaN equals NaN).
Prints the largest absolute difference of each table that has one and exits
1 when a table differs beyond the tolerance or is missing. Run:

    .venv/bin/python benchmarks/compare_demo_runs.py /tmp/d1 /tmp/d2 --atol 1e-5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def table_difference(a: Path, b: Path) -> tuple[float, str]:
    """Largest absolute numeric difference between two CSV tables, and why they differ otherwise.

    The text is empty when columns, shape and every text cell agree.
    """
    left, right = pd.read_csv(a), pd.read_csv(b)
    if list(left.columns) != list(right.columns) or left.shape != right.shape:
        return float("inf"), f"columns/shape {left.shape} vs {right.shape}"
    largest = 0.0
    for column in left.columns:
        x, y = left[column], right[column]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            u, v = x.to_numpy(dtype=float), y.to_numpy(dtype=float)
            if not np.array_equal(np.isnan(u), np.isnan(v)):
                return float("inf"), f"column {column!r}: NaN in different rows"
            both = ~np.isnan(u)
            if both.any():
                largest = max(largest, float(np.abs(u[both] - v[both]).max()))
        elif not x.astype(str).equals(y.astype(str)):
            return float("inf"), f"column {column!r}: text differs"
    return largest, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--atol", type=float, default=1e-9)
    args = parser.parse_args()
    worst, failed = 0.0, 0
    for path in sorted(args.a.rglob("*.csv")):
        rel = path.relative_to(args.a)
        other = args.b / rel
        if not other.exists():
            print(f"{rel}: missing in {args.b}")
            failed += 1
            continue
        diff, why = table_difference(path, other)
        if why or diff > args.atol:
            failed += 1
        if why or diff > 0:
            print(f"{rel}: largest difference {diff:.3g} {why}".rstrip())
        worst = max(worst, diff)
    print(f"largest difference over all tables: {worst:.3g}; tables off: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
