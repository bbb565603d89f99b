"""The README's "your own detector or labeler" examples run as written.

Each block after a ``<!-- readme-example: NAME -->`` marker is run as a script
in its own process (it registers a component, which must not leak into the
other tests), in an empty folder, with the shared data as the data folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
MARKER = re.compile(
    r"<!-- readme-example: (?P<name>[\w-]+) -->\n```python\n(?P<code>.*?)\n```", re.S
)


def _examples() -> dict[str, str]:
    return {m["name"]: m["code"] for m in MARKER.finditer(README.read_text(encoding="utf-8"))}


def test_the_readme_has_both_examples():
    assert set(_examples()) == {"own-detector", "own-labeler"}


def _run(code: str, tmp_path: Path, data_dir: Path) -> str:
    env = {**os.environ, "REALITYCHECK_DATA_DIR": str(data_dir), "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_your_own_detector_is_measured_beside_length(tmp_path, data_dir):
    printed = _run(_examples()["own-detector"], tmp_path, data_dir)
    rows = {line.split()[1]: line.split() for line in printed.splitlines()[1:]}
    assert set(rows) == {"hedges", "length"}
    # TruthfulQA's 22,434 judged answers, each with an AUROC and its interval.
    for row in rows.values():
        value, low, high, n = float(row[2]), float(row[3]), float(row[4]), int(row[5])
        assert low <= value <= high and n == 22434
    assert (tmp_path / "runs" / "own" / "manifest.json").exists()


def test_your_own_labeler_is_measured_against_the_humans(tmp_path, data_dir):
    printed = _run(_examples()["own-labeler"], tmp_path, data_dir)
    assert "mentions_reference" in printed and "cohen_kappa" in printed
    assert (tmp_path / "runs" / "own_labeler" / "manifest.json").exists()


@pytest.mark.parametrize("name", ["own-detector", "own-labeler"])
def test_a_broken_example_would_fail(name, tmp_path, data_dir):
    # The check above can fail: the same code with a typo in a component name does.
    code = _examples()[name].replace(
        'rc.datasets.create("truthfulqa")', 'rc.datasets.create("truthfulq")'
    )
    env = {**os.environ, "REALITYCHECK_DATA_DIR": str(data_dir)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0 and "truthfulq" in done.stderr
