"""benchmarks/_results.py: interleaved rounds, CPU time, load, and equality checks that can fail."""

import importlib.util
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_results", ROOT / "benchmarks" / "_results.py")
results = importlib.util.module_from_spec(_spec)
sys.modules["bench_results"] = results  # dataclasses look their module up by name
_spec.loader.exec_module(results)


@pytest.mark.parametrize(
    ("ours", "theirs", "n_differ"),
    [
        ([0.1, 0.2, 0.3], [0.1, 0.2, 0.3], 0),
        ([0.1, 0.2, 0.3], [0.1, 0.2 + 1e-6, 0.3], 1),  # beyond the tolerance
        ([0.1, None, 0.3], [0.1, 0.5, 0.3], 1),  # a value on one side only
        ([0.1, math.nan, 0.3], [0.1, None, 0.3], 0),  # missing on both sides
        ([0.1, 0.2], [0.1, 0.2, 0.3], 1),  # one more value on one side
        ([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], 2),  # same values, another order
    ],
)
def test_compare_values_counts_each_value_that_differs(ours, theirs, n_differ):
    agreement = results.compare_values(ours, theirs, tol=1e-9, what="CIs")
    assert agreement.n_differ == n_differ
    assert agreement.equal is (n_differ == 0)
    assert agreement.text().startswith("CIs equal" if n_differ == 0 else "CIs DIFFER")


def test_a_difference_within_the_tolerance_is_equal_and_its_size_is_reported():
    agreement = results.compare_values([1.0, 2.0], [1.0 + 2e-10, 2.0], tol=1e-9, what="F1")
    assert agreement.equal
    assert agreement.max_diff == pytest.approx(2e-10)
    assert agreement.text() == "F1 equal (2 of 2 within 1e-09, max diff 2.0e-10)"


@pytest.mark.parametrize(
    ("ours", "theirs", "n_differ"),
    [
        ([1, 0, 3], [1, 0, 3], 0),
        ([1, 0, 3], [1, 2, 3], 1),
        ([b"a,b\n1,2\n"], [b"a,b\n1,3\n"], 1),
        (["x"], [], 1),
    ],
)
def test_compare_exact_fails_on_any_unequal_item(ours, theirs, n_differ):
    agreement = results.compare_exact(ours, theirs, what="choices")
    assert agreement.n_differ == n_differ
    expected = "choices identical" if n_differ == 0 else "choices DIFFER"
    assert agreement.text().startswith(expected)


def test_compare_tables_fails_on_a_number_a_text_cell_or_the_shape():
    left = pd.DataFrame({"metric": ["auroc", "prauc"], "value": [0.7, 0.6]})
    assert results.compare_tables(left, left.copy(), tol=1e-12).equal
    number = left.assign(value=[0.7, 0.61])
    text = left.assign(metric=["auroc", "auprc"])
    shape = left.iloc[:1]
    for other, n_differ in ((number, 1), (text, 1), (shape, 4)):
        agreement = results.compare_tables(left, other, tol=1e-12)
        assert not agreement.equal
        assert agreement.n_differ == n_differ


def test_interleave_alternates_the_order_drops_the_warm_up_and_takes_medians():
    calls = []
    walls = {"ours": iter([9.0, 1.0, 2.0, 1.0]), "theirs": iter([9.0, 10.0, 30.0, 12.0])}

    def side(name):
        def run():
            calls.append(name)
            wall = next(walls[name])
            return results.Timing(wall, wall / 2), f"{name} value"

        return run

    rounds = results.interleave({"ours": side("ours"), "theirs": side("theirs")}, 3)
    assert calls == ["ours", "theirs", "theirs", "ours", "ours", "theirs", "theirs", "ours"]
    assert rounds.n == 3
    assert rounds.wall("ours") == 1.0
    assert rounds.cpu("theirs") == 6.0
    assert rounds.ratios("theirs", "ours") == [10.0, 15.0, 12.0]
    assert rounds.ratio("theirs", "ours") == 12.0  # the median ratio, not 12 / 1
    assert rounds.ratio_text("theirs", "ours") == "12.00x wall, 12.00x CPU"
    assert rounds.values["theirs"] == "theirs value"
    assert len(rounds.loads) == 4
    assert "median of 3 interleaved rounds" in rounds.note("theirs", "ours")
    assert "load " in rounds.note()


def test_interleave_refuses_zero_rounds():
    with pytest.raises(ValueError, match="rounds must be an int >= 1. Got 0 instead."):
        results.interleave({"a": lambda: results.Timing(1.0, 1.0)}, 0)


def test_a_process_is_timed_with_the_cpu_of_the_children_it_waited_for():
    burn = "import time; end = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    parent = (
        f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}]); print('ok')"
    )
    timing, out = results.run_command([sys.executable, "-c", parent])
    assert out.strip() == "ok"
    assert timing.cpu >= 0.3  # the grandchild's CPU seconds are counted
    assert timing.peak_mib > 0


def test_a_failing_process_stops_the_benchmark_with_its_output():
    with pytest.raises(SystemExit, match="boom"):
        results.run_command([sys.executable, "-c", "import sys; sys.exit('boom')"])
