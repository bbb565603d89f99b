import numpy as np
import pandas as pd
import pytest

from realitycheck.report._document import Link
from realitycheck.report._numbers import (
    fmt_ci,
    fmt_p,
    fmt_rank,
    fmt_rate,
    fmt_rate_ci,
    header,
)
from realitycheck.report._studies import _table, by_rank
from realitycheck.text import csv_cell, csv_safe_frame


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ((0.5, 0.5, 0.5), "0.500 [0.500, 0.500]"),
        ((0.71234, 0.6801, 0.7449), "0.712 [0.680, 0.745]"),
        ((0.7, float("nan"), 0.8), "0.700"),
        ((float("nan"), 0.1, 0.2), "n/a"),
    ],
)
def test_a_ci_has_the_precision_of_its_value(args, text):
    assert fmt_ci(*args) == text


def test_rates_are_percentages():
    assert fmt_rate(0.119) == "11.9%"
    assert fmt_rate_ci(0.119, 0.098, 0.142) == "11.9% [9.8%, 14.2%]"
    assert fmt_rate(None) == "n/a"


@pytest.mark.parametrize(
    ("value", "tied", "text"),
    [(41.0, False, "41"), (2.0, True, "2="), (2.5, False, "2.5="), (np.float64(3), False, "3")],
)
def test_ranks_are_whole_numbers_with_ties_marked(value, tied, text):
    assert fmt_rank(value, tied=tied) == text


@pytest.mark.parametrize(
    ("p", "text"),
    [(0.0, "< 1e-16"), (1e-20, "< 1e-16"), (1.234e-5, "1.2e-05"), (0.04321, "0.043"), (1, "1.000")],
)
def test_p_values_never_print_as_zero(p, text):
    assert fmt_p(p) == text


@pytest.mark.parametrize(
    ("column", "words"),
    [
        ("n_judged", "n judged"),
        ("p_value", "p-value"),
        ("kendall_tau_b", "Kendall tau-b"),
        ("bias_ci_low", "bias CI low"),
        ("hallucination_rate", "hallucination rate"),
    ],
)
def test_headers_are_words(column, words):
    assert header(column) == words


def test_tables_with_a_rank_are_sorted_by_rank_within_their_groups():
    frame = pd.DataFrame(
        {
            "dataset": ["b", "b", "a", "a", "a"],
            "generator": ["x", "y", "x", "y", "z"],
            "rank": [2.0, 1.0, 3.0, 1.0, 2.0],
        }
    )
    out = by_rank(frame)
    assert list(zip(out["dataset"], out["generator"], strict=True)) == [
        ("b", "y"),
        ("b", "x"),
        ("a", "y"),
        ("a", "z"),
        ("a", "x"),
    ]
    plain = frame.drop(columns="rank")
    assert by_rank(plain) is plain


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+cmd", "'+cmd"),
        ("-cmd", "'-cmd"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-0.5", "-0.5"),
        ("+3", "+3"),
        ("plain", "plain"),
        (-2.0, -2.0),
        (None, None),
    ],
)
def test_csv_cells_that_start_like_formulas_are_prefixed(cell, safe):
    assert csv_cell(cell) == safe


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        ("gpt\x00-4o", "gpt[U+0000]-4o"),  # NUL
        ("org/\u202emodel", "org/[U+202E]model"),  # right-to-left override
        ("\x1b]0;PWNED\x07name", "[U+001B]]0;PWNED[U+0007]name"),  # OSC: set the title
        ("\x1b[31mred", "[U+001B][31mred"),  # CSI: colour
        ("a\x85b\u2066c", "a[U+0085]b[U+2066]c"),  # C1, bidi isolate
        ("two\nlines\tand a tab", "two\nlines\tand a tab"),  # kept: a CSV cell may hold them
        ("\x1b=1+1", "[U+001B]=1+1"),  # escaped first, so no formula start is left behind
    ],
)
def test_csv_cells_show_control_escape_and_bidi_characters(cell, safe):
    assert csv_cell(cell) == safe


def test_csv_safe_frame_leaves_numbers_and_the_input_alone():
    frame = pd.DataFrame({"name": ["=1+1", "ok"], "value": [-1.5, 2.0], "=col": ["a", "b"]})
    out = csv_safe_frame(frame)
    assert out["name"].tolist() == ["'=1+1", "ok"]
    assert out["value"].tolist() == [-1.5, 2.0]
    assert list(out.columns) == ["name", "value", "'=col"]
    assert frame["name"].tolist() == ["=1+1", "ok"]  # a copy, not the caller's frame
    clean = pd.DataFrame({"a": ["x"]})
    assert csv_safe_frame(clean) is clean


def test_study_tables_format_each_column_by_what_it_holds():
    frame = pd.DataFrame(
        {
            "generator": ["a", "b", "c"],
            "hallucination_rate": [0.119, 0.5, 0.25],
            "ci_low": [0.098, 0.4, 0.2],
            "ci_high": [0.142, 0.6, 0.3],
            "rank": [1.0, 2.5, 2.5],
            "judge_rank_self": [3.0, 1.0, 2.0],
            "p_value": [0.0, 2e-5, 0.5],
            "kendall_tau_b": [0.5, 0.5, 0.5],
            "swapped_pairs": ["; ".join(f"g{i} < g{i + 1}" for i in range(30)), "x < y", ""],
        }
    )
    table = _table(frame, "caption", "studies/s/t.csv")
    assert table.columns == (
        "generator",
        "hallucination rate [CI]",
        "rank",
        "judge rank self",
        "p-value",
        "Kendall tau-b",
        "swapped pairs",
    )
    first, second = table.rows[0], table.rows[1]
    assert first[1:6] == ("11.9% [9.8%, 14.2%]", "1", "3", "< 1e-16", "0.500")
    assert second[2] == "2.5=" and second[4] == "2.0e-05"
    label, _, link, _ = first[6]
    assert label == "30 items" and link == Link("all in the CSV", "studies/s/t.csv")
    assert second[6] == "x < y"
    assert table.csv == "studies/s/t.csv"


def test_study_csvs_in_the_run_and_the_report_are_prefixed(tmp_path):
    from realitycheck import RunStore
    from realitycheck.report import write_report
    from realitycheck.store import StudyResult, StudyTable, result_dir, save_result

    store = RunStore(tmp_path / "run")
    frame = pd.DataFrame({"generator": ['=HYPERLINK("x")', "@cmd", "ok"], "delta": [-1.0, 0, 1]})
    spec = {"name": "toy", "params": {}, "version": "1"}
    table = StudyTable("t", frame, "T.")
    save_result(store, StudyResult(study="toy", spec=spec, finding="Found.", tables=(table,)))
    stored = pd.read_csv(result_dir(store, "toy") / "t.csv")
    assert stored["generator"].tolist() == ['\'=HYPERLINK("x")', "'@cmd", "ok"]
    assert stored["delta"].tolist() == [-1.0, 0.0, 1.0]
    files = write_report(store, tmp_path / "out")
    written = pd.read_csv(next(p for p in files.tables if p.name == "t.csv"))
    assert written["generator"].tolist() == stored["generator"].tolist()  # prefixed once
