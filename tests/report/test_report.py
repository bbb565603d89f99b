import base64
import re
from pathlib import Path

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from realitycheck import Example, InvalidInputError, Label, Response, RunStore
from realitycheck.analysis import Bootstrap
from realitycheck.report import ReportFiles, write_report
from realitycheck.report._assets import SCRIPT
from realitycheck.report._figures import slug
from realitycheck.report._markdown import escape_md

SECTIONS = (
    "Key findings",
    "Data overview",
    "Detector metrics",
    "ROC, precision-recall, rejection and reliability curves",
    "Labeler agreement with humans",
    "Studies",
    "Notes",
    "Run information",
)


@pytest.fixture(scope="module")
def report(run, tmp_path_factory) -> ReportFiles:
    return write_report(run, tmp_path_factory.mktemp("report") / "out", title="Tiny run")


def test_writes_every_file(report):
    out = report.html.parent
    assert report.markdown == out / "report.md"
    names = {p.name for p in report.tables}
    assert names == {
        "metrics.csv",
        "agreement.csv",
        "overview.csv",
        "thresholds.csv",
        "coverage.csv",
    }
    assert {p.name for p in report.figures} == {
        f"{kind}_{ds}.png"
        for kind in ("roc", "pr", "rejection", "reliability")
        for ds in ("alpha", "beta")
    }
    for path in (report.html, report.markdown, *report.tables, *report.figures):
        assert path.is_file() and path.stat().st_size > 0, path
    for fig in report.figures:
        assert fig.read_bytes().startswith(b"\x89PNG")


def test_html_has_every_section_in_order(report):
    page = report.html.read_text(encoding="utf-8")
    assert "<title>Tiny run</title>" in page
    positions = [page.index(f">{name}</h2>") for name in SECTIONS]
    assert positions == sorted(positions)


def test_html_shows_metric_with_its_confidence_interval(run, report):
    m = run.frame("metrics").set_index(["dataset", "slice", "detector", "labeler", "metric"])
    row = m.loc[("alpha", "all", "noisy", "human", "auroc")]
    cell = f"{row['value']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    page = report.html.read_text(encoding="utf-8")
    assert f'<td class="r">{cell}</td>' in page
    assert f"| {escape_md(cell)} |" in report.markdown.read_text(encoding="utf-8")


def test_html_mentions_how_intervals_and_thresholds_were_made(report):
    page = report.html.read_text(encoding="utf-8")
    assert "percentile bootstrap over responses, 50 resamples, 95% level" in page
    assert "calibration split to maximise f1_macro" in page


def test_html_is_self_contained_and_embeds_figures(report):
    page = report.html.read_text(encoding="utf-8")
    for bad in ('src="http', "src='http", 'href="http', "href='http", "url(", "@import", "<link"):
        assert bad not in page.lower()
    assert page.lower().count("<script") == 1  # the page's own inline script, no src
    assert f"<script>{SCRIPT}</script>" in page
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 8
    for fig in report.figures:  # each embedded figure links to its file beside the report
        assert f'<a href="figures/{fig.name}"><img' in page
    for name in ("metrics.csv", "agreement.csv", "overview.csv", "coverage.csv"):
        assert f'<a href="{name}">' in page
    assert all(base64.b64decode(img).startswith(b"\x89PNG") for img in images)


def test_response_texts_are_not_copied(report, response_text):
    for path in (report.html, report.markdown, *report.tables):
        assert response_text not in path.read_text(encoding="utf-8"), path


def test_markdown_links_figures_beside_it(report):
    text = report.markdown.read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert sorted(links) == sorted(f"figures/{p.name}" for p in report.figures)
    for link in links:
        assert (report.markdown.parent / link).is_file()


def _hand_overview(store, labeler):
    datasets = {e.example_id: (e.dataset, e.task) for e in store.read(Example)}
    verdict = {
        lab.response_id: lab.hallucinated for lab in store.read(Label) if lab.labeler == labeler
    }
    counts = {}
    for r in store.read(Response):
        ds, task = datasets[r.example_id]
        for key in ((ds, "all", "all"), (ds, task, "all"), (ds, task, r.model)):
            labelled, positive = counts.get(key, (0, 0))
            v = verdict.get(r.response_id)
            counts[key] = (labelled + (v is not None), positive + bool(v))
    return counts


def test_overview_rates_equal_a_hand_count(tmp_path, make_run):
    store = make_run(tmp_path / "run", seed=3)
    # A second human protocol that disagrees on every third response, one unknown verdict.
    humans = [lab for lab in store.read(Label) if lab.labeler == "human"]
    store.append(
        [
            Label(
                response_id=lab.response_id,
                labeler="human[protocol=strict]",
                hallucinated=None if i == 0 else lab.hallucinated != (i % 3 == 0),
            )
            for i, lab in enumerate(humans)
        ]
    )
    files = write_report(store, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "overview.csv", keep_default_na=False)
    table = table.set_index(["dataset", "task", "model"])
    for labeler in ("human", "human[protocol=strict]"):
        expected = _hand_overview(store, labeler)
        # Per-task totals appear only for a dataset with several tasks (alpha, not beta).
        assert set(table.index) == set(expected) - {("beta", "dialogue", "all")}
        for key in table.index:
            labelled, positive = expected[key]
            row = table.loc[key]
            assert row[f"labelled:{labeler}"] == labelled
            assert row[f"hallucinated:{labeler}"] == positive
            assert row[f"rate:{labeler}"] == pytest.approx(positive / labelled)
    assert table.loc[("alpha", "all", "all"), "examples"] == 17  # 16 answered + 1 unanswered
    assert "hallucinated (human[protocol=strict])" in files.html.read_text(encoding="utf-8")


def test_model_names_and_notes_are_escaped(tmp_path, make_run):
    evil = "<script>alert(1)</script>"
    store = make_run(tmp_path / "run", models=(evil, "pipe|model"), note=f"note {evil}")
    files = write_report(store, tmp_path / "out", title=f"title {evil}")
    page = files.html.read_text(encoding="utf-8")
    assert page.lower().count("<script") == 1  # the page's own
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f"model={escaped}" in page  # slice column header
    assert f"note {escaped}" in page
    assert f"<title>title {escaped}</title>" in page
    text = files.markdown.read_text(encoding="utf-8")
    assert "\\<script\\>alert(1)\\</script\\>" in text
    assert "<script" not in MarkdownIt("commonmark").enable("table").render(text).lower()
    assert "pipe\\|model" in text


def test_empty_run_reports_every_section_as_not_available(tmp_path):
    files = write_report(RunStore(tmp_path / "run"), tmp_path / "out")
    page = files.html.read_text(encoding="utf-8")
    for name in SECTIONS:
        assert f">{name}</h2>" in page
    assert page.count("Not available") >= 5
    assert files.figures == ()
    text = files.markdown.read_text(encoding="utf-8")
    assert "Not available: the run has no metrics table" in text


def test_run_without_scores_or_metrics_still_has_an_overview(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append([Example(example_id="d/1", dataset="d", task="qa")])
    store.append(
        [Response(response_id=f"r{i}", example_id="d/1", model="m", text="t") for i in range(4)]
    )
    store.append(
        [Label(response_id=f"r{i}", labeler="human", hallucinated=i < 1) for i in range(4)]
    )
    files = write_report(store, tmp_path / "out")
    page = files.html.read_text(encoding="utf-8")
    assert '<td class="r">1 (25.0%)</td>' in page
    assert "Not available: the run holds no detector scores." in page
    assert "Not available: the run has no metrics table" in page
    assert (tmp_path / "out" / "metrics.csv").read_text().startswith("dataset,")


def test_reference_chooses_the_labeler_behind_the_curves(run, tmp_path):
    files = write_report(run, tmp_path / "out", reference="rouge_l")
    page = files.html.read_text(encoding="utf-8")
    assert "ROC curves on alpha against rouge_l labels" in page
    assert "Thresholded metrics against rouge_l labels" in page


def test_notes_list_manifest_notes_and_failures(report):
    page = report.html.read_text(encoding="utf-8")
    notes = page[page.index(">Notes</h2>") :]
    assert "bertscore skipped: the embed extra is not installed" in notes
    assert re.search(
        r"detector noisy on alpha: \d+ of 32 values missing; most common error: timeout", notes
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"store": "runs/x"}, "'store' parameter of write_report must be a RunStore"),
        ({"title": ""}, "'title' parameter of write_report must be a non-empty str. Got ''"),
        ({"reference": 3}, "'reference' parameter of write_report must be a non-empty str"),
        ({"out_dir": ""}, "'out_dir' parameter of write_report must be a non-empty path"),
        ({"out_dir": 5}, "'out_dir' parameter of write_report must be a non-empty path"),
    ],
)
def test_bad_arguments_fail_before_any_work(tmp_path, kwargs, match):
    args = {"store": RunStore(tmp_path / "run"), "out_dir": tmp_path / "out", **kwargs}
    store, out_dir = args.pop("store"), args.pop("out_dir")
    with pytest.raises(InvalidInputError, match=match):
        write_report(store, out_dir, **args)
    assert not (tmp_path / "out").exists()


def test_out_dir_that_is_a_file_is_refused(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("x")
    with pytest.raises(InvalidInputError, match="must be a folder"):
        write_report(RunStore(tmp_path / "run"), target)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ragtruth", "ragtruth"),
        ("../../etc/passwd", "etc_passwd"),
        ("a b[c=1]", "a_b_c_1"),
        ("..", "dataset"),
    ],
)
def test_figure_names_are_safe_file_names(name, expected):
    assert slug(name) == expected
    assert Path(slug(name)).name == slug(name)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a|b", "a\\|b"),
        ("<b>x</b>", "\\<b\\>x\\</b\\>"),
        ("label &lt;- hallucinated", "label \\&lt;- hallucinated"),
        ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))"),
        ("see https://evil.example", "see https\\://evil.example"),
        ("- item", "\\- item"),
        ("1. item", "1\\. item"),
        ("-0.5 [x]", "-0.5 \\[x\\]"),
        ("$x^$", "\\$x\\^\\$"),
        ("nul\x00", "nul\\[U+0000\\]"),
        ("two\nlines", "two lines"),
        ("*x*", "\\*x\\*"),
    ],
)
def test_markdown_cells_are_escaped(text, expected):
    assert escape_md(text) == expected


def test_single_annotators_are_pooled_in_the_coverage_table(tmp_path, make_run):
    store = make_run(tmp_path / "run")
    ids = [r.response_id for r in store.read(Response)]
    store.append(
        [
            Label(response_id=rid, labeler=f"human:{name}", hallucinated=i % 2 == 0)
            for name in ("ann1", "ann2")
            for i, rid in enumerate(ids)
        ]
    )
    files = write_report(store, tmp_path / "out")
    cov = pd.read_csv(tmp_path / "out" / "coverage.csv", keep_default_na=False)
    row = cov[(cov["dataset"] == "alpha") & (cov["key"] == "human:*")].iloc[0]
    assert (row["components"], row["records"], row["missing"]) == (2, 64, 0)
    assert float(row["positive_rate"]) == pytest.approx(0.5)
    assert "human:&lt;annotator&gt; (2 annotators)" in files.html.read_text(encoding="utf-8")


def _index_row(n, value):
    from realitycheck.report._cells import MetricRow

    return MetricRow(value, value - 0.1, value + 0.1, n, n // 2, 0, float("nan"), "")


@pytest.mark.parametrize(
    ("slices", "names", "first_column"),
    [
        (["model=a", "model=b", "model=c"], ["det"], "slice"),
        (["task=qa"], ["det1", "det2"], "detector"),
    ],
)
def test_slice_tables_put_the_longer_list_down_the_rows(slices, names, first_column):
    from realitycheck.report._results import _slice_table

    index = {(s, n, "human", "auroc"): _index_row(10, 0.7) for s in slices for n in names}
    table = _slice_table(index, names, slices, "human", "auroc", "detector")
    assert table.columns[0] == first_column
    assert len(table.rows) == max(len(slices), len(names)) + (first_column != "slice")
    assert table.rows[-1][-1] == "0.700 [0.600, 0.800]"
    sizes = [row[1] for row in table.rows] if first_column == "slice" else table.rows[0][1:]
    assert list(sizes) == ["10 (5)"] * len(slices)


def test_every_human_protocol_gets_its_thresholded_table(make_run, tmp_path):
    from realitycheck import EvaluationConfig, evaluate

    store = make_run(tmp_path / "run")
    human = store.frame("labels").query("labeler == 'human'")
    flipped = [
        Label(response_id=r, labeler="human[protocol=strict]", hallucinated=bool(h) or i % 4 == 0)
        for i, (r, h) in enumerate(zip(human["response_id"], human["hallucinated"], strict=True))
    ]
    store.append(flipped)
    evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=20)))
    html = write_report(store, tmp_path / "out").html.read_text()
    assert "Thresholded metrics against human labels" in html
    assert "Thresholded metrics against human[protocol=strict] labels" in html


def test_invisible_controls_in_untrusted_text_are_shown_not_obeyed():
    from realitycheck.report._document import Paragraph
    from realitycheck.report._html import render_html

    page = render_html([Paragraph("model abc\u202egnp.exe\x00 and <b>x</b>")], "t")
    assert "abc[U+202E]gnp.exe[U+0000]" in page
    assert "\u202e" not in page and "\x00" not in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page


def test_right_to_left_words_are_isolated():
    from realitycheck.report._html import escape_html

    assert escape_html("model \u05d0\u05d1-7b: 12%") == "model <bdi>\u05d0\u05d1-7b:</bdi> 12%"
    assert escape_html("<\u0627>") == "<bdi>&lt;\u0627&gt;</bdi>"
    assert "<bdi>" not in escape_html("plain latin text")


def test_figures_draw_maths_markup_in_names_as_text():
    from realitycheck.studies.plots import new_figure, png_bytes

    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1], label="model $x^$")
    ax.set_title("$x^$ generator")
    ax.legend()
    assert png_bytes(fig).startswith(b"\x89PNG")


def test_a_named_files_dataset_keeps_its_mapping_notes_in_its_own_section(tmp_path):
    from realitycheck import datasets, ingest
    from realitycheck.report._data import load
    from realitycheck.report._sections import dataset_entries

    path = tmp_path / "mine.csv"
    path.write_text("qid,answer,label\nq1,Paris,no\nq2,Lyon,yes\n")
    store = RunStore(tmp_path / "run")
    key = f"files[path={path},text=answer,columns=example_id:qid,positive=yes,negative=no]"
    ingest(store, datasets.create_from_key(key))
    entries = dataset_entries(load(store))
    (name,) = [n for n in entries if n]
    assert name.startswith("files:") and "" not in entries  # matched by its run name


@pytest.mark.parametrize(
    ("metrics", "where"),
    [
        (("balanced_accuracy", "f1_macro", "cohen_kappa"), "beside the detectors"),
        (
            ("precision", "recall", "f1", "accuracy", "cohen_kappa", "balanced_accuracy")
            + ("f1_macro", "auroc", "pr_auc"),
            "the agreement section",
        ),
    ],
)
def test_a_labelers_row_shows_its_stored_intervals_and_items(run, report, metrics, where):
    markdown = report.markdown.read_text(encoding="utf-8")
    stored = run.frame("agreement").query("slice == 'all' and reference == 'human'")
    for _, rows in stored.groupby("dataset"):
        by = rows[rows["labeler"] == "rouge_l"].set_index("metric")
        cells = []
        for m in metrics:
            r = by.loc[m]
            cells.append(f"{r['value']:.3f} \\[{r['ci_low']:.3f}, {r['ci_high']:.3f}\\]")
            if m == "pr_auc":  # followed by its base rate
                cells.append(f"{r['n_positive'] / r['n']:.3f}")
        base = by.loc["accuracy"]
        counts = [f"{int(base[c]):,}" for c in ("n", "n_positive", "n_excluded")]
        assert "| rouge\\_l | " + " | ".join(cells + counts) + " |" in markdown, where
