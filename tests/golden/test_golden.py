"""A small real run's tables equal those of the code before the layering refactor.

``expected.json`` holds, per table, the shape, columns and SHA-256 of its CSV
text (floats to 6 significant digits) as written by ``recipe.py`` (see its
docstring: first on commit 10fb4db, rewritten from b656ceb's code when the
floats were rounded). A
change here means a number in a report changed: intended fixes update
``expected.json`` in the same commit and say why.
"""

import json
from pathlib import Path

import pytest
from recipe import build

EXPECTED = json.loads((Path(__file__).parent / "expected.json").read_text())


@pytest.mark.slow
def test_tables_of_a_small_real_run_are_unchanged(tmp_path, data_dir):
    tables = build(tmp_path / "run", str(data_dir))
    assert sorted(tables) == sorted(EXPECTED)
    changed = {
        name: (EXPECTED[name]["rows"], tables[name]["rows"])
        for name in EXPECTED
        if tables[name] != EXPECTED[name]
    }
    assert changed == {}, f"tables that changed (rows before, after): {changed}"
