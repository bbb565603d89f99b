"""benchmarks/table.py: the README's performance table is exactly what the result files say."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_table", ROOT / "benchmarks" / "table.py")
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)

ROW = {"work": "w", "realitycheck": "1 s", "alternative": "5 s", "ratio": "5.0x", "note": "n"}


def _result(name="demo", **rows):
    return {
        "benchmark": name,
        "date": "2026-11-23T12:00:00+00:00",
        "machine": "Linux x86_64, 2 CPUs",
        "command": f"python benchmarks/{name}.py",
        "rows": [ROW],
    } | rows


def test_readme_table_is_regenerated_from_the_committed_results():
    assert table.main(["--check"]) == 0


def test_rows_appear_in_order_with_pipes_and_newlines_made_safe(tmp_path):
    results = [
        _result("zeta"),
        _result("alpha", rows=[ROW | {"work": "a | b\nc", "note": "x|y"}]),
    ]
    text = table.render(results)
    lines = text.splitlines()
    body = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert body == [
        "| a \\| b c | 1 s | 5 s | 5.0x | x\\|y | `alpha` |",
        "| w | 1 s | 5 s | 5.0x | n | `zeta` |",
    ]
    assert "- `alpha`: `python benchmarks/alpha.py`, 2026-11-23T12:00:00+00:00, Linux" in text
    readme = f"intro\n{table.START}\nold | table\n{table.END}\nafter\n"
    assert table.regenerate(readme, text) == f"intro\n{text}\nafter\n"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"date": None}, "field 'date' is missing"),
        ({"machine": 2}, "field 'machine' must be a string"),
        ({"benchmark": "other"}, "must be the file's name, 'demo'"),
        ({"rows": []}, "'rows' must be a non-empty list"),
        ({"rows": [{"work": "w"}]}, r"rows\[0\] must have exactly the fields"),
        ({"rows": [ROW | {"ratio": 5.0}]}, r"rows\[0\].ratio must be a string"),
    ],
)
def test_a_result_file_off_the_schema_is_refused_naming_file_and_field(tmp_path, change, message):
    result = {k: v for k, v in (_result() | change).items() if v is not None}
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(result))
    with pytest.raises(table.ResultError, match=message) as info:
        table.load(path)
    assert str(path) in str(info.value)


def test_a_readme_without_both_markers_is_refused():
    with pytest.raises(table.ResultError, match="must hold the lines"):
        table.regenerate("## Benchmarks\nno markers\n", "x")
    with pytest.raises(table.ResultError, match="must hold the lines"):
        table.regenerate(f"{table.END}\n{table.START}\n", "x")
