"""Leaderboards show rank ranges where intervals overlap: HTML pages, Markdown, CSV."""

import csv
import re

import pandas as pd
import pytest

from realitycheck.report import write_report
from realitycheck.report._data import load
from realitycheck.report._leaderboard import leaderboard_frame
from realitycheck.report._numbers import fmt_rank_range
from realitycheck.store import StudyResult, StudyTable, save_result
from realitycheck.studies.leaderboard import rank_ranges

MODELS = ("m1", "m2", "m3")


@pytest.fixture(scope="module")
def files(make_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("ranges")
    store = make_run(root / "run", models=MODELS, seed=3)
    board = pd.DataFrame(
        {
            "dataset": ["alpha"] * 3,
            "slice": ["all"] * 3,
            "judge": ["human"] * 3,
            "generator": ["clear", "tie-a", "tie-b"],
            "ranked_rate": [0.05, 0.40, 0.45],
            "rank": [1.0, 2.0, 3.0],
            "tied": [False, False, False],
            "rank_low": [1.0, 2.0, 2.0],
            "rank_high": [1.0, 3.0, 3.0],
            "human_rate": [0.05, 0.40, 0.45],
            "human_rank": [1.0, 2.0, 3.0],
        }
    )
    save_result(
        store,
        StudyResult(
            study="leaderboard",
            spec={"name": "leaderboard", "params": {}, "version": "1"},
            finding="Ranked.",
            tables=(StudyTable("leaderboard", board, "Board."),),
        ),
    )
    return store, write_report(store, root / "out")


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [(1, 3, "1\u20133"), (2.0, 2.0, "2"), (1.5, 2, "1.5\u20132"), (None, 2, "n/a")],
)
def test_fmt_rank_range(low, high, text):
    assert fmt_rank_range(low, high) == text


def test_the_leaderboard_frame_ranks_within_its_wilson_intervals(files):
    store, _ = files
    frame = leaderboard_frame(load(store), "human")
    for _, part in frame.groupby(["dataset", "subset"]):
        low, high = rank_ranges(part["ci_low"], part["ci_high"])
        assert part["rank_low"].tolist() == low.tolist()
        assert part["rank_high"].tolist() == high.tolist()
        assert ((part["rank_low"] <= part["rank"]) & (part["rank"] <= part["rank_high"])).all()
    # 16 responses per generator: wide intervals, so at least one range spans several ranks
    assert (frame["rank_low"] < frame["rank_high"]).any()


def test_the_leaderboard_page_shows_ranges_not_strict_ranks(files):
    store, out = files
    page = out.leaderboard.read_text("utf-8")
    assert '<th scope="col">rank range</th>' in page
    frame = leaderboard_frame(load(store), "human")
    beta = frame[(frame["dataset"] == "beta") & (frame["subset"] == "all")].sort_values("rank")
    cells = [fmt_rank_range(a, b) for a, b in zip(beta["rank_low"], beta["rank_high"], strict=True)]
    body = page[page.index("<h2>beta</h2>") :]
    for cell, name in zip(cells, beta["generator"], strict=True):
        row = (
            rf'<td class="r" data-label="rank range">{cell}</td><td data-label="generator">{name}<'
        )
        assert re.search(row, body)
    assert "do not overlap" in page


def test_a_study_board_shows_its_range_in_place_of_rank_and_tied(files):
    _, out = files
    html = out.html.read_text("utf-8")
    table = html[html.index('<p class="caption">Board.</p>') :]
    table = table[: table.index("</table>")]
    assert '<th scope="col">rank range</th>' in table and ">tied<" not in table
    assert ">human rank<" not in table and ">human rate<" in table
    assert '<td class="r">1</td>' in table and table.count('<td class="r">2\u20133</td>') == 2
    markdown = out.markdown.read_text("utf-8")
    assert "| rank range |" in markdown and "| 2\u20133 |" in markdown
    assert "Rank range: the ranks a row could take" in markdown
    with (out.html.parent / "studies" / "leaderboard" / "leaderboard.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {"rank", "tied", "rank_low", "rank_high", "human_rank"} <= set(rows[0])
