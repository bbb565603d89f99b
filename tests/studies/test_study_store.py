import hashlib

import numpy as np
import pandas as pd
import pytest

from realitycheck import RunStore, write_report
from realitycheck.report._studies import MAX_ROWS, format_cell
from realitycheck.store import (
    StudyFigure,
    StudyResult,
    StudyTable,
    folder_name,
    load_results,
    save_result,
)
from realitycheck.studies.plots import new_figure, png_bytes


def _result(n_rows=3, finding="Length predicts <b>hallucination</b>."):
    fig, ax = new_figure(2, 2)
    ax.plot([0, 1], [0, 1])
    frame = pd.DataFrame(
        {
            "detector": [f"d{i}" for i in range(n_rows)],
            "auroc": np.linspace(0.5, 0.9, n_rows),
            "n": np.arange(n_rows) + 1000,
        }
    )
    return StudyResult(
        study="toy[k=2]",
        spec={"name": "toy", "params": {"k": 2}, "version": "1"},
        finding=finding,
        tables=(StudyTable("by_detector", frame, "AUROC per detector"),),
        figures=(StudyFigure("curve", png_bytes(fig), "a line"),),
        skipped=("begin: no annotators",),
    )


def test_results_round_trip_and_replace_older_ones(tmp_path):
    store = RunStore(tmp_path)
    save_result(store, _result(finding="first"))
    save_result(store, _result(finding="second"))
    (loaded,) = load_results(store)
    assert loaded.finding == "second"
    assert loaded.study == "toy[k=2]" and loaded.skipped == ("begin: no annotators",)
    pd.testing.assert_frame_equal(loaded.table("by_detector"), _result().table("by_detector"))
    assert loaded.figures[0].png.startswith(b"\x89PNG")
    assert not [p for p in (tmp_path / "studies").iterdir() if p.name.startswith(".")]


def test_unsafe_table_and_figure_names_become_distinct_safe_file_names(tmp_path):
    store = RunStore(tmp_path)
    frame = pd.DataFrame({"x": [1]})
    png = _result().figures[0].png
    result = StudyResult(
        study="toy",
        spec={},
        finding="",
        tables=(StudyTable("../a/b", frame), StudyTable("../a:b", frame)),
        figures=(StudyFigure("lengths-files:/tmp/x.jsonl", png),),
    )
    folder = save_result(store, result)
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 4 and all("/" not in n and ":" not in n for n in names)
    assert not list(tmp_path.glob("studies/a*"))  # nothing written outside the folder
    (loaded,) = load_results(store)
    assert [t.name for t in loaded.tables] == [folder_name("../a/b"), folder_name("../a:b")]
    assert loaded.tables[0].name != loaded.tables[1].name
    assert loaded.figures[0].stem == folder_name("lengths-files:/tmp/x.jsonl")
    assert loaded.figures[0].png == png


def test_report_has_a_section_per_study_with_escaped_finding(tmp_path):
    store = RunStore(tmp_path / "run")
    save_result(store, _result(n_rows=MAX_ROWS + 5))
    files = write_report(store, tmp_path / "out")
    html = files.html.read_text()
    assert "Length predicts &lt;b&gt;hallucination&lt;/b&gt;." in html
    assert "<b>hallucination" not in html
    assert f"First {MAX_ROWS} of {MAX_ROWS + 5} rows" in html
    assert "begin: no annotators" in html
    folder = folder_name("toy[k=2]")
    assert folder == "toy_k=2-" + hashlib.sha1(b"toy[k=2]").hexdigest()[:8]
    csv = tmp_path / "out" / "studies" / folder / "by_detector.csv"
    assert len(pd.read_csv(csv)) == MAX_ROWS + 5
    assert (tmp_path / "out" / "figures" / f"study_{folder}_curve.png").exists()


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "yes"),
        (float("nan"), "n/a"),
        (12345, "12,345"),
        (0.12345, "0.123"),
        (0.0001234, "0.000123"),
        ("x", "x"),
        (np.int64(7), "7"),
        (2.0, "2.000"),
        (1597.25, "1,597.2"),
        (0.5, "0.500"),
    ],
)
def test_format_cell(value, text):
    assert format_cell(value) == text


def test_distinct_keys_get_distinct_folders():
    assert folder_name("length") == "length"
    long = "x" * 120
    assert folder_name(long) == "x" * 80 + "-" + hashlib.sha1(long.encode()).hexdigest()[:8]
    assert folder_name(long + "y") != folder_name(long)
    a, b = folder_name("x[s=recorded:*]"), folder_name("x[s=recorded:?]")
    assert a != b and a.startswith("x_s=recorded")


def test_whole_number_float_columns_show_as_counts(tmp_path):
    from realitycheck.report._studies import _table

    frame = pd.DataFrame({"n": [3.0, float("nan"), 1200.0], "auroc": [1.0, 0.5, 0.25]})
    table = _table(frame, "c", "x.csv")
    assert table.rows == (("3", "1.000"), ("n/a", "0.500"), ("1,200", "0.250"))
