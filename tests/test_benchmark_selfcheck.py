"""benchmarks/selfcheck_vs_package.py: its inputs split alike, and each of its checks can fail."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the benchmark imports _results from there
_spec = importlib.util.spec_from_file_location(
    "bench_selfcheck", ROOT / "benchmarks" / "selfcheck_vs_package.py"
)
selfcheck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(selfcheck)


def test_no_sentence_ends_in_a_unless_asked():
    inputs = selfcheck.make_inputs(30, 4, seed=0)
    texts = [t for x in inputs for t in [x["text"], *x["samples"]]]
    assert not any(" a." in t for t in texts)
    probe = selfcheck.make_inputs(30, 4, seed=0, final_a=True)
    assert any(" a." in t for x in probe for t in [x["text"], *x["samples"]])


def _run(inputs, values, *, splits):
    n = len(inputs)
    run = {
        name: {"values": values, "seconds": 1.0, "cpu": 1.0, "errors": [], "unreadable": 0}
        for name in selfcheck.VARIANTS
    }
    run["prompt"]["readings"] = {"yes": 2 * n, "no": 2 * n, "neither": 2 * n}
    run["splits"] = run["probe_splits"] = splits
    return run


def _notes(ours_values, theirs_values, *, theirs_splits=None):
    inputs = selfcheck.make_inputs(2, 2, seed=0)
    splits = selfcheck.our_splits(inputs)
    ours = _run(inputs, ours_values, splits=splits)
    theirs = _run(inputs, theirs_values, splits=theirs_splits or splits)
    rows = selfcheck.rows_of([ours], [theirs], [1.0, 2.0], inputs, inputs, 2)
    return {row["work"].split(",")[0].split()[-1]: row["note"] for row in rows}


def test_equal_values_and_splits_read_as_equal():
    notes = _notes([0.25, 0.5], [0.25, 0.5])
    assert "values of responses equal (2 of 2" in notes["prompt"]
    assert (
        "n-gram tokens (response and samples) of responses identical (2 of 2)" in notes["ngram_avg"]
    )
    assert "spaCy's tokens differ on 0 of 2 responses" in notes["ngram_max"]


def test_a_differing_value_or_token_is_counted():
    notes = _notes([0.25, 0.5], [0.25, 0.75])
    for variant in selfcheck.VARIANTS:
        assert "values of responses DIFFER: 1 of 2" in notes[variant]
    inputs = selfcheck.make_inputs(2, 2, seed=0)
    splits = selfcheck.our_splits(inputs)
    kept_whole = [dict(s) for s in splits]
    kept_whole[1] = {**splits[1], "tokens": [*splits[1]["tokens"][:-2], "x."]}
    notes = _notes([0.25, 0.5], [0.25, 0.5], theirs_splits=kept_whole)
    assert "n-gram tokens (response and samples) of responses DIFFER: 1 of 2" in notes["ngram_avg"]
    assert "spaCy's tokens differ on 1 of 2 responses" in notes["ngram_avg"]
