"""A detector scored through a proxy model is named as that model's view in the report.

A run whose ``perplexity`` and ``erank`` scores were computed on a proxy
model's reading of a dataset's answers (their manifest specs carry
``proxy``, as the detect stage writes them) is reported with
``perplexity (proxy: MODEL)`` wherever a key is shown: the coverage and
metric tables, the figure legends, the findings, the notes; the Components
table gets a ``proxy`` column, the findings one line saying what the scores
measure. The CSV tables keep the raw key. The model's name is untrusted: a
hostile one (markup, a Markdown link, bidi and control characters, maths)
stays text in HTML, Markdown and the figures.
"""

from __future__ import annotations

import csv
import re
import shutil

import numpy as np
import pytest
from markdown_it import MarkdownIt

from realitycheck import EvaluationConfig, Example, Label, Response, RunStore, Score, evaluate
from realitycheck.analysis import Bootstrap
from realitycheck.report import write_report
from realitycheck.report._data import load, proxy_model, proxy_models, shown_key
from realitycheck.report._figures import curves, figure_name, render_pr, render_roc
from realitycheck.report._html import escape_html
from realitycheck.report._markdown import escape_md

MODEL = "/models/tiny-llama"
HOSTILE = "/m/[x](javascript:alert(1))<script>alert(1)</script>/\u202egnp\x00$x^$"
PROMPT = "generation plan[decoding=greedy,n_samples=0], the response's variant or zero_shot"
PROXIED = ("erank", "perplexity")
N = 60
FAILED = 3


def _proxy(model: str) -> dict:
    backend = {"name": "hf", "params": {"model": model, "device": "cpu"}, "version": "1"}
    return {"model": model, "backend": backend, "prompt": PROMPT}


def build(path, model: str) -> RunStore:
    """A run of ``N`` answers with human labels, scored by length and by two proxied detectors.

    ``perplexity`` rises with the label (its first ``FAILED`` scores failed,
    as the proxy's failures do), ``erank`` falls with it (ranked the wrong way).
    """
    rng = np.random.default_rng(3)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for i in range(N):
        eid, rid = f"toy/{i}", f"toy/{i}/answer"
        bad = bool(i % 2)
        examples.append(Example(example_id=eid, dataset="toy", task="qa", question="q?"))
        responses.append(Response(response_id=rid, example_id=eid, model="human", text="a"))
        labels.append(Label(response_id=rid, labeler="human", hallucinated=bad))
        scores.append(Score(response_id=rid, detector="length", value=float(rng.integers(1, 9))))
        failed = i < FAILED
        scores.append(
            Score(
                response_id=rid,
                detector="perplexity",
                value=None if failed else 2.0 * bad + float(rng.normal()),
                error="the proxy could not measure the response: too long" if failed else "",
                failed=failed,
            )
        )
        scores.append(
            Score(response_id=rid, detector="erank", value=-3.0 * bad + 0.3 * rng.normal())
        )
    for records in (examples, responses, labels, scores):
        store.append(records)
    components = {
        key: {"name": key, "params": {}, "version": "1", "proxy": _proxy(model)} for key in PROXIED
    }
    components["length"] = {"name": "length", "params": {}, "version": "1"}
    store.update_manifest(components=components)
    evaluate(store, EvaluationConfig(bootstrap=Bootstrap(n_resamples=50)))
    return store


@pytest.fixture(scope="module", params=[MODEL, HOSTILE], ids=["plain", "hostile"])
def reported(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy")
    store = build(root / "run", request.param)
    return request.param, store, write_report(store, root / "out")


def _shown(model: str, key: str = "perplexity") -> str:
    return f"{key} (proxy: {model})"


def _line(model: str) -> str:
    return (
        f"erank, perplexity were computed on a proxy model's reading of answers it did not "
        f"generate ({model}): they measure how that model sees the answers, not the "
        "generator's own uncertainty."
    )


def test_shown_key_reads_the_manifest(reported):
    model, store, _ = reported
    data = load(store)
    assert proxy_model(data, "perplexity") == model
    assert proxy_model(data, "length") is None and proxy_model(data, "absent") is None
    assert shown_key(data, "perplexity") == _shown(model)
    assert shown_key(data, "length") == "length"
    assert proxy_models(data) == {"erank": model, "perplexity": model}


def test_a_manifest_without_a_proxy_or_with_odd_entries_shows_the_key(tmp_path):
    store = build(tmp_path / "run", MODEL)
    store.update_manifest(
        components={
            "erank": {"name": "erank", "proxy": "not a table"},
            "perplexity": {"name": "perplexity", "proxy": {"model": ""}},
        }
    )
    data = load(store)
    assert shown_key(data, "perplexity") == "perplexity" and shown_key(data, "erank") == "erank"
    assert proxy_models(data) == {}
    page = write_report(store, tmp_path / "out").html.read_text("utf-8")
    assert "(proxy:" not in page and "Read through a proxy model" not in page


def _has_cell(html: str, text: str) -> bool:
    """Whether a table cell holds exactly ``text`` (whatever its class or label attributes)."""
    return re.search(rf"<td[^>]*>{re.escape(text)}</td>", html) is not None


def test_html_names_the_proxy_wherever_a_key_is_shown(reported):
    model, _, files = reported
    page = files.html.read_text("utf-8")
    shown = escape_html(_shown(model))
    findings = page[page.index('id="key-findings"') : page.index('id="data-overview"')]
    assert escape_html(_line(model)) in findings
    # best detector, wrong-way finding, failed calls: each names the proxy
    assert _has_cell(findings, shown)
    assert escape_html(f"Detector {_shown(model, 'erank')} on toy") in findings
    assert escape_html(f"detector {_shown(model)} on toy: {FAILED} of {N} records") in findings
    overview = page[page.index('id="data-overview"') : page.index('id="detector-metrics"')]
    assert _has_cell(overview, shown)  # the coverage table
    metrics = page[page.index('id="detector-metrics"') : page.index('id="notes"')]
    assert _has_cell(metrics, shown) and not _has_cell(metrics, "perplexity")
    notes = page[page.index('id="notes"') : page.index('id="run-information"')]
    assert escape_html(f"detector {_shown(model)} on toy: {FAILED} of {N} values missing") in notes
    assert "<td>length</td>" in metrics  # a detector without a proxy keeps its key


def test_the_components_table_has_a_proxy_column(reported):
    model, _, files = reported
    page = files.html.read_text("utf-8")
    info = page[page.index('id="run-information"') :]
    assert '<th scope="col">proxy</th>' in info
    row = ("perplexity", "perplexity", "{}", "1", escape_html(model))
    assert re.search("".join(rf"<td[^>]*>{re.escape(c)}</td>" for c in row), info)
    assert "<td>length</td><td>length</td><td>{}</td><td>1</td><td></td>" in info
    assert escape_html(f"Proxy {model}: backend ") in info
    assert escape_html(f"prompt: {PROMPT}.") in info


def test_markdown_names_the_proxy(reported):
    model, _, files = reported
    text = files.markdown.read_text("utf-8")
    assert escape_md(_line(model)) in text
    assert f"| {escape_md(_shown(model))} |" in text
    assert f"| {escape_md(_shown(model, 'erank'))} |" in text


def test_csv_tables_keep_the_raw_key(reported):
    _, _, files = reported
    folder = files.html.parent
    for name, column in (("metrics.csv", "detector"), ("coverage.csv", "key")):
        with (folder / name).open(encoding="utf-8") as f:
            keys = {row[column] for row in csv.DictReader(f)}
        assert {"perplexity", "erank", "length"} <= keys
        assert "(proxy:" not in (folder / name).read_text("utf-8")


def test_a_hostile_model_name_stays_text(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    files = write_report(build(root / "run", HOSTILE), root / "out")
    page = files.html.read_text("utf-8")
    assert "<script>alert" not in page and "\u202e" not in page and "\x00" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "[U+202E]gnp[U+0000]$x^$" in page
    rendered = MarkdownIt("commonmark").enable("table").render(files.markdown.read_text("utf-8"))
    assert 'href="javascript' not in rendered and "<script>" not in rendered
    assert "\u202e" not in rendered and "\x00" not in rendered
    assert escape_md(_shown(HOSTILE)) in files.markdown.read_text("utf-8")
    assert {p.name for p in files.figures} >= {"roc_toy.png", "pr_toy.png"}


@pytest.mark.parametrize("model", [MODEL, HOSTILE])
def test_figure_legends_name_the_proxy_by_its_last_segment(tmp_path, model):
    data = load(build(tmp_path / "run", model))
    found, notes = curves(data, "toy", "human", ["perplexity", "erank", "length"])
    by = {c.detector: c for c in found}
    tail = model.rsplit("/", 1)[-1]
    assert (
        by["perplexity"].label == f"perplexity (proxy: {tail})" == figure_name(data, "perplexity")
    )
    assert by["perplexity"].proxy == model and by["length"].proxy is None
    assert by["length"].label == "length"
    assert notes == []
    for figure in (render_roc(found, "toy", "human"), render_pr(found, "toy", "human", 0.5)):
        assert figure.png.startswith(b"\x89PNG")  # maths off: "$x^$" would not parse
        assert f"perplexity by {model}" in figure.caption
        assert "not the generator's own uncertainty" in figure.caption


@pytest.mark.parametrize(
    ("key", "model", "expected"),
    [
        (
            "perplexity",
            "meta-llama/Llama-3.1-8B-Instruct",
            "perplexity (proxy: Llama-3.1-8B-Instru…)",
        ),
        ("perplexity", "C:\\models\\tiny\\", "perplexity (proxy: tiny)"),
        ("mean_token_entropy", "/m/" + "x" * 60, "mean_token_entropy (proxy: xxxxxxxxxxx…)"),
        ("erank[layer=12,alpha=0.001]", "/m/model-7b", "erank[layer=12,alph… (proxy: model-7b)"),
    ],
)
def test_a_figure_name_keeps_the_proxy_mark_within_forty_characters(tmp_path, key, model, expected):
    store = RunStore(tmp_path / "run")
    store.update_manifest(components={key: {"name": key, "proxy": {"model": model}}})
    name = figure_name(load(store), key)
    assert name == expected and len(name) <= 40


def test_legend_text_is_drawn_as_written(tmp_path, monkeypatch):
    """The legend holds the proxied name, its maths and controls inert (plots.png_bytes)."""
    from matplotlib.legend import Legend

    data = load(build(tmp_path / "run", HOSTILE))
    found, _ = curves(data, "toy", "human", ["perplexity"])
    drawn: list[tuple[str, bool]] = []
    original = Legend.draw

    def spy(self, renderer):
        drawn.extend((t.get_text(), t.get_parse_math()) for t in self.get_texts())
        return original(self, renderer)

    monkeypatch.setattr(Legend, "draw", spy)
    render_roc(found, "toy", "human")
    perplexity = [(t, math) for t, math in drawn if t.startswith("perplexity")]
    assert perplexity and not any(math for _, math in perplexity)
    text = perplexity[0][0]
    assert text.startswith("perplexity (proxy: [U+202E]gnp[U+0000]$x^$) (")
    assert "\u202e" not in text and "\x00" not in text


sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: apt-get install chromium")
@pytest.mark.parametrize("width", [1400, 390])
def test_the_page_shows_the_proxy_in_a_browser(reported, width):
    model, _, files = reported
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            errors: list[str] = []
            dialogs: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(files.html.resolve().as_uri())
            page.wait_for_load_state("load")
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            shown = model.replace("\u202e", "[U+202E]").replace("\x00", "[U+0000]")
            text = page.locator("main").inner_text()
            assert f"perplexity (proxy: {shown})" in text
            assert "not the generator's own uncertainty" in text
            assert errors == [] and dialogs == []
            assert page.locator("script").count() == 1  # the report's own
            assert page.evaluate("document.documentElement.scrollWidth") <= width
        finally:
            browser.close()
