"""benchmarks/demo_stages.py --summarise: fits table.py, keeps every stage's seconds."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", ROOT / "benchmarks" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


stages = _load("demo_stages")
table = _load("table")


def _run(total_cpu, stage_seconds, *, old_style=False):
    rows = [{"work": k, "cpu_s": c, "wall_s": w} for k, (c, w) in stage_seconds.items()]
    return {
        "date": "2026-11-23T12:00:00+00:00",
        "machine": "x86_64, 2 cores",
        "command": "python benchmarks/demo_stages.py --out /tmp/x",
        "total_wall_s": 2 * total_cpu,
        "total_cpu_s": total_cpu,
        ("rows" if old_style else "stages"): rows,
    }


RUNS = {
    # the committed "before" file names its stages "rows"; newer runs name them "stages"
    "before": _run(100.0, {"evaluate": (40.0, 50.0), "detect x": (60.0, 70.0)}, old_style=True),
    "first": _run(50.0, {"evaluate": (30.0, 31.0), "detect x": (20.0, 22.0), "report": (1.0, 2.0)}),
    "warm": _run(10.0, {"evaluate": (8.0, 9.0), "detect x": (1.0, 1.5), "report": (1.0, 1.0)}),
}


def test_summary_fits_the_table_schema_with_ratios_old_over_new(tmp_path):
    result = stages.summary(RUNS)
    path = tmp_path / "demo_stages.json"
    path.write_text(json.dumps(result))
    loaded = table.load(path)  # raises on any field off the schema
    rows = {r["work"]: r for r in loaded["rows"]}
    first = rows["whole demo, first run (fresh caches), CPU s"]
    assert (first["realitycheck"], first["alternative"], first["ratio"]) == (
        "50.0 s",
        "before: 100.0 s",
        "2.00x",
    )
    assert rows["whole demo, rerun with a warm embedding cache, CPU s"]["ratio"] == "10.00x"
    assert rows["demo stage: detect x, CPU s"]["ratio"] == "3.00x"
    # a stage the before run lacks has no ratio rather than a made-up one
    assert rows["demo stage: report, CPU s"]["alternative"] == ""
    assert rows["demo stage: report, CPU s"]["ratio"] == ""


def test_every_stage_keeps_its_seconds_in_every_run_and_the_markdown_shows_them():
    result = stages.summary(RUNS)
    by_stage = {s["work"]: s for s in result["stages"]}
    assert by_stage["evaluate"]["before_cpu_s"] == pytest.approx(40.0)
    assert by_stage["evaluate"]["warm_wall_s"] == pytest.approx(9.0)
    assert by_stage["report"]["before_cpu_s"] is None
    text = stages.markdown(result)
    assert "| evaluate | 40.00 | 30.00 | 8.00 | 50.00 | 31.00 | 9.00 |" in text
    assert "| report |  | 1.00 | 1.00 |  | 2.00 | 1.00 |" in text
    # largest first-run CPU first
    assert text.index("| evaluate |") < text.index("| detect x |") < text.index("| report |")
