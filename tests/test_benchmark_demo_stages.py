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
        "load_before": 1.5,
        "load_after": 2.5,
        "total_wall_s": 2 * total_cpu,
        "total_cpu_s": total_cpu,
        ("rows" if old_style else "stages"): rows,
    }


RUNS = {
    # older raw files name their stages "rows"; newer runs name them "stages"
    "first": _run(50.0, {"evaluate": (30.0, 31.0), "detect x": (20.0, 22.0), "report": (1.0, 2.0)}),
    "warm": _run(10.0, {"evaluate": (8.0, 9.0), "report": (1.0, 1.0)}, old_style=True)
    | {"compared": "CSV tables equal to the first run's (3 of 3 within 1e-09, max diff 0.0e+00)"},
}


def test_summary_fits_the_table_schema_with_wall_cpu_and_the_load(tmp_path):
    result = stages.summary(RUNS)
    path = tmp_path / "demo_stages.json"
    path.write_text(json.dumps(result))
    loaded = table.load(path)  # raises on any field off the schema
    rows = {r["work"]: r for r in loaded["rows"]}
    first = rows["whole demo, first run (fresh caches)"]
    assert (first["realitycheck"], first["alternative"], first["ratio"]) == (
        "100 s (CPU 50 s)",
        "",
        "",
    )
    assert first["note"].startswith("one run; load 1.5 before, 2.5 after")
    warm = rows["whole demo, rerun with a warm embedding cache"]
    assert warm["note"].endswith(
        "CSV tables equal to the first run's (3 of 3 within 1e-09, max diff 0.0e+00)"
    )
    assert rows["demo stage: detect x, first run"]["realitycheck"] == "22.0 s (CPU 20.0 s)"
    # a stage the warm run lacks says so rather than making a figure up
    assert rows["demo stage: detect x, first run"]["note"] == "warm cache: nan s (CPU nan s)"


def test_every_stage_keeps_its_seconds_in_every_run_and_the_markdown_shows_them():
    result = stages.summary(RUNS)
    by_stage = {s["work"]: s for s in result["stages"]}
    assert by_stage["evaluate"]["first_cpu_s"] == pytest.approx(30.0)
    assert by_stage["evaluate"]["warm_wall_s"] == pytest.approx(9.0)
    assert by_stage["detect x"]["warm_cpu_s"] is None
    text = stages.markdown(result)
    assert "| evaluate | 30.00 | 8.00 | 31.00 | 9.00 |" in text
    assert "| detect x | 20.00 |  | 22.00 |  |" in text
    # largest first-run CPU first
    assert text.index("| evaluate |") < text.index("| detect x |") < text.index("| report |")


def test_compare_counts_the_tables_that_differ(tmp_path):
    for name, value in (("a", 0.5), ("b", 0.5)):
        (tmp_path / name / "studies").mkdir(parents=True)
        (tmp_path / name / "metrics.csv").write_text(f"metric,value\nauroc,{value}\n")
        (tmp_path / name / "studies" / "x.csv").write_text("k,v\n1,2\n")
    assert stages.compare(tmp_path / "a", tmp_path / "b").startswith("CSV tables equal")
    (tmp_path / "b" / "metrics.csv").write_text("metric,value\nauroc,0.6\n")
    assert stages.compare(tmp_path / "a", tmp_path / "b") == (
        "CSV tables DIFFER from the first run's: 1 of 2 beyond 1e-09"
    )
