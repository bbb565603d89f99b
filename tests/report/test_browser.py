"""The report and leaderboard pages in a real browser: headless Chromium driven by playwright.

One browser and one small run (hostile generator names, a study with a long
list cell and a rank column) per module. Skipped, with the install command,
where Chromium or playwright is missing.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from realitycheck.report import write_report
from realitycheck.report._document import Figure, Table
from realitycheck.report._html import render_html
from realitycheck.store import StudyResult, StudyTable, save_result
from realitycheck.studies.plots import new_figure, png_bytes, shown_size

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed: pip install playwright"
)
CHROMIUM = shutil.which("chromium")
if CHROMIUM is None:
    pytest.skip("Chromium is not installed: apt-get install chromium", allow_module_level=True)

IMG = "<img src=x onerror=alert(1)>"
LINK = "[x](javascript:alert(1))"
MATHS = "$x^$"
RLO = "abc\u202egnp.exe"
FORMULA = '=HYPERLINK("http://example.invalid","x")'
MODELS = (IMG, LINK, MATHS, RLO, FORMULA)
HEIGHT_BOUND = 7_000
"""Page height of the small run's report, CSS px (about 3,800 at 1400 px, 6,500 at 390 px,
where the key tables are cards: about 500 px of it)."""
DOMAIN = "the dialogue corpus it came from: WoW (Wikipedia topics), CMU-DoG (movies), TopicalChat"


def _study(store) -> None:
    names = list(MODELS)
    frame = pd.DataFrame(
        {
            "dataset": ["alpha"] * len(names),
            "slice": ["all"] * len(names),
            "generator": names,
            "hallucination_rate": [0.30, 0.10, 0.20, 0.50, 0.40],
            "ci_low": [0.20, 0.05, 0.10, 0.40, 0.30],
            "ci_high": [0.40, 0.15, 0.30, 0.60, 0.50],
            "rank": [3.0, 1.0, 2.0, 5.0, 4.0],
            "p_value": [0.0, 1e-5, 0.2, 0.5, 1.0],
            "swapped_pairs": ["; ".join(f"gen-{i} < gen-{i + 1}" for i in range(80))] * 5,
            "domain": [DOMAIN] * 5,
        }
    )
    result = StudyResult(
        study="leaderboard",
        spec={"name": "leaderboard", "params": {}, "version": "1"},
        finding=f"Hostile finding {IMG} {LINK} nul\x00 end. Second sentence.",
        tables=(StudyTable("leaderboard", frame.sample(frac=1.0, random_state=0), "Board."),),
    )
    save_result(store, result)


@pytest.fixture(scope="module")
def files(make_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    store = make_run(root / "run", models=MODELS, note=f"note {IMG} nul\x00 {RLO}")
    _study(store)
    return write_report(store, root / "out", title=f"Report {IMG}")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Visit:
    """A page opened on a file, with what it logged, asked for and popped up."""

    def __init__(self, browser, path, width: int = 1400):
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def height(self) -> int:
        return int(self.page.evaluate("document.documentElement.scrollHeight"))

    def close(self) -> None:
        self.page.close()


@pytest.fixture(scope="module")
def report_page(browser, files):
    visit = Visit(browser, files.html)
    yield visit
    visit.close()


def test_report_loads_offline_without_errors(report_page):
    assert report_page.errors == []
    assert report_page.requests == [report_page.url]  # the page itself, nothing else
    assert report_page.dialogs == []


def test_hostile_names_stay_text(report_page):
    page = report_page.page
    text = page.locator("main").text_content()  # folded parts included
    for name in (IMG, LINK, MATHS, "abc[U+202E]gnp.exe", FORMULA):
        assert name in text
    assert "\u202e" not in page.content() and "\x00" not in page.content()
    assert page.locator("img:not([src^='data:image/png;base64,'])").count() == 0
    hrefs = page.eval_on_selector_all("a", "els => els.map(e => e.getAttribute('href'))")
    assert hrefs and all(not h.lower().startswith(("javascript", "http")) for h in hrefs)
    assert page.locator("[onerror], [onclick], [onload]").count() == 0


def test_findings_come_first(report_page):
    page = report_page.page
    first = page.locator("main h2").first
    assert first.inner_text().endswith("Key findings")
    assert first.locator("a.top").get_attribute("href") == "#top"
    assert first.bounding_box()["y"] < 300
    assert page.locator("main h2").last.inner_text().endswith("Run information")
    # Every study and dataset is in the table of contents.
    toc = page.inner_text("nav.toc")
    assert "alpha" in toc and "beta" in toc and "leaderboard" in toc.lower()


def test_clicking_a_header_sorts_the_rows(report_page):
    page = report_page.page
    header = page.locator("th", has_text="hallucination rate")
    table = page.locator("table.data", has=header)
    fold = table.locator("xpath=ancestor::details[1]")
    assert fold.get_attribute("open") is None  # the study's tables start folded
    fold.locator("xpath=./summary").click()
    assert fold.get_attribute("open") is not None
    column = {"rate": "tbody td:nth-child(4)", "rank": "tbody td:nth-child(5)"}
    assert table.locator(column["rank"]).all_inner_texts() == ["1", "2", "3", "4", "5"]
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert table.locator(column["rate"]).first.inner_text() == "50.0% [40.0%, 60.0%]"
    assert table.locator(column["rank"]).all_inner_texts() == ["5", "4", "3", "2", "1"]


def test_long_list_cells_fold_into_a_count(report_page):
    cell = report_page.page.locator("td", has_text="80 items").first
    assert cell.locator("a").get_attribute("href").endswith("/leaderboard.csv")
    assert "gen-40" not in cell.text_content()


@pytest.mark.parametrize("width", [1400, 390])
def test_page_height_stays_under_its_bound(browser, files, width):
    visit = Visit(browser, files.html, width)
    try:
        assert visit.errors == []
        assert visit.height() < HEIGHT_BOUND
    finally:
        visit.close()


def test_a_long_unbroken_note_does_not_widen_the_page_at_390_px(
    browser, make_run, tmp_path_factory
):
    root = tmp_path_factory.mktemp("long")
    key = "files[path=/data/" + "x" * 300 + ".jsonl,text=answer]"  # one word, no break point
    files = write_report(make_run(root / "run", note=key), root / "out")
    visit = Visit(browser, files.html, 390)
    try:
        visit.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert visit.page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        visit.close()


def _percent(cell: str) -> float:
    return float(cell.split("%", 1)[0])


def test_leaderboard_page_sorts_and_keeps_names_inert(browser, files):
    visit = Visit(browser, files.leaderboard)
    try:
        page = visit.page
        assert visit.errors == [] and visit.dialogs == []
        assert visit.requests == [visit.url]
        assert "Reference labels: human" in page.inner_text("main")
        assert page.locator("main").bounding_box()["width"] > 1000  # the page's whole width
        table = page.locator("table.data").first
        ranks = table.locator("tbody td:nth-child(1)").all_inner_texts()
        # 16 responses each: the intervals overlap, so the ranks are ranges (1–5), never 1..5
        ends = [tuple(int(x) for x in r.split("\u2013")) for r in ranks]
        assert ends[0][0] == 1 and all(len(e) in (1, 2) and e[0] <= e[-1] <= 5 for e in ends)
        assert any(len(e) == 2 for e in ends)
        names = table.locator("tbody td:nth-child(2)").all_inner_texts()
        assert sorted(names) == sorted(n.replace("\u202e", "[U+202E]") for n in MODELS)
        rates = [_percent(c) for c in table.locator("tbody td:nth-child(3)").all_inner_texts()]
        assert rates == sorted(rates)
        header = table.locator("th", has_text="hallucinated")
        header.click()
        header.click()
        rates = [_percent(c) for c in table.locator("tbody td:nth-child(3)").all_inner_texts()]
        assert rates == sorted(rates, reverse=True)
    finally:
        visit.close()


def test_markdown_renders_without_links_or_html_from_the_run(files):
    html = MarkdownIt("commonmark").enable("table").render(files.markdown.read_text("utf-8"))
    assert "javascript:" not in html.replace("(javascript:alert(1))", "")
    assert 'href="javascript' not in html and "<img src=x" not in html
    assert "&amp;lt;" not in html  # no entity written into the Markdown


def test_csv_cells_that_look_like_formulas_are_prefixed(files):
    path = files.html.parent / "overview.csv"
    with path.open(encoding="utf-8") as f:
        models = {row["model"] for row in csv.DictReader(f)}
    assert "'" + FORMULA in models and FORMULA not in models


def _boxes(page, selector: str) -> list[dict]:
    return page.eval_on_selector_all(
        selector,
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return {left: r.left, right: r.right, width: r.width, height: r.height,"
        " text: e.textContent}; })",
    )


def test_the_key_tables_are_cards_at_390_px_and_tables_at_1400(browser, files):
    for width in (390, 1400):
        visit = Visit(browser, files.html, width)
        try:
            page = visit.page
            cells = _boxes(page, "table.cards td")
            assert cells and page.locator("table.cards").count() == 2
            head = page.locator("table.cards thead").first.bounding_box()
            if width == 390:  # every cell, difference and interval included, in view
                assert all(0 <= c["left"] and c["right"] <= 390 for c in cells)
                assert head["height"] <= 1  # the headers are the cells' own labels
                label = page.eval_on_selector(
                    "table.cards td:nth-child(6)",
                    "e => getComputedStyle(e, '::before').content",
                )
                assert label == '"difference [paired CI]"'
            else:
                assert head["height"] > 10
                rows = {round(c["left"]) for c in cells}
                assert len(rows) > 4  # side by side: one row per dataset
        finally:
            visit.close()


def test_long_text_columns_keep_a_readable_width(browser, files):
    visit = Visit(browser, files.html, 1400)
    try:
        page = visit.page
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        cells = [c for c in _boxes(page, "td.long") if c["text"] == DOMAIN]
        assert len(cells) == 5
        assert all(c["width"] >= 220 and c["height"] < 90 for c in cells)  # not 40 x 200 px
        names = [c for c in _boxes(page, "td") if c["text"] in {IMG, LINK, MATHS, FORMULA}]
        assert names and all(c["width"] > 48 for c in names)
    finally:
        visit.close()


def test_the_leaderboard_page_is_cards_at_390_px(browser, files):
    visit = Visit(browser, files.leaderboard, 390)
    try:
        cells = _boxes(visit.page, "table.cards td")
        assert len(cells) >= 4 * len(MODELS)  # every generator's row, rates included
        assert all(0 <= c["left"] and c["right"] <= 390 for c in cells)
        assert visit.page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        visit.close()


def _figure_page(tmp_path) -> tuple[Path, bytes]:
    """Two curve-sized figures with long captions and a table whose CSV path is one long word."""
    fig, ax = new_figure(4.8, 5.0)
    ax.plot([0, 1], [0, 1], label="a detector")
    ax.legend()
    png = png_bytes(fig)
    caption = "A caption longer than its figure is wide, " * 8
    blocks = [
        Figure("roc_x", png, "ROC. " + caption),
        Figure("pr_x", png, "PR. " + caption),
        Table(("a",), (("1",),), csv="studies/" + "train_noise_" * 20 + "/table.csv"),
    ]
    path = tmp_path / "figures.html"
    path.write_text(render_html(blocks, "Figures"), encoding="utf-8")
    return path, png


def test_figures_show_at_their_own_size_side_by_side_and_fit_390_px(browser, tmp_path):
    path, png = _figure_page(tmp_path)
    shown = shown_size(png)
    for width in (1400, 390):
        visit = Visit(browser, path, width)
        try:
            page = visit.page
            figures = _boxes(page, "figure")
            images = _boxes(page, "figure img")
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            assert all(f["right"] <= width for f in figures)
            if width == 1400:  # at the layout's size, the caption wrapping under the image
                assert [round(i["width"]) for i in images] == [shown[0]] * 2
                assert all(round(f["width"]) == shown[0] for f in figures)
                tops = page.eval_on_selector_all(
                    "figure", "els => els.map(e => e.getBoundingClientRect().top)"
                )
                assert tops[0] == tops[1]  # side by side
            else:
                assert all(i["width"] < shown[0] for i in images)
        finally:
            visit.close()
