"""No two texts of a figure overlap and none leaves it, however many and long the names.

Each kind of figure the report draws (ROC, precision-recall, rejection,
reliability grid, the leaderboard's dot plot) is rendered through its public
function from a run of fourteen detectors with long, near-identical and
hostile names (markup, maths, terminal escapes, bidi overrides). The
matplotlib figure is caught on its way to :func:`realitycheck.plots.png_bytes`
and drawn again; every text drawn is measured by its window extent
(``Text.get_window_extent(renderer)``, the renderer the draw used). Two texts
whose boxes come closer than two pixels collide; a text outside the
figure's own box would be cut, or would make the saved image wider than the
page column it was sized for.
"""

from __future__ import annotations

import itertools
import unicodedata
from contextlib import contextmanager

import numpy as np
import pytest

from realitycheck import Example, Label, Response, RunStore, Score
from realitycheck.report._calibration import selective_figures
from realitycheck.report._data import dataset_scores, load
from realitycheck.report._figures import curves, render_pr, render_roc
from realitycheck.studies.leaderboard import dot_plot

DATASET = "halueval_general/$x^$ <b>a dataset with a very long name</b> \u202egnp.exe"
REFERENCE = "human[protocol=worst,annotators=three-of-five]"
LONG = "selfcheck[variant=nli,model=microsoft/deberta-v3-large-mnli-fever-anli-ling-wanli"
DETECTORS = (
    # Strongest first: the long and hostile names are the ones drawn.
    LONG + "]",
    LONG + ",temperature=1.0]",
    "<script>alert(1)</script>",
    "$x^$ \\frac{a}{b} $\\alpha$",
    "\x1b]0;PWNED\x07 osc-title",
    "abc\u202egnp.exe\x00",
    "recorded:hhem-2.1-english",
    "recorded:hhem-2.1",
    "length[unit=chars]",
    "length[unit=tokens]",
    "length",
    "recorded:trueteacher",
    "embedding_grounding",
    "recorded:true_nli",
)
N = 240
MIN_POINTS = 8.0
"""Smallest font, in points: 11 CSS px when the figure is shown at its own size."""
GAP = 2.0
"""Least room between two texts, in px at 100 per inch."""
PAGE_INCHES = 5.6
"""Widest figure, in inches at 100 px each: the report shows figures at most 560 px wide."""


def _build(path) -> RunStore:
    rng = np.random.default_rng(7)
    store = RunStore(path)
    examples, responses, labels, scores = [], [], [], []
    for i in range(N):
        eid, rid = f"{DATASET}/{i}", f"{DATASET}/{i}/answer"
        bad = bool(rng.random() < 0.4)
        examples.append(Example(example_id=eid, dataset=DATASET, task="qa", question="q?"))
        responses.append(Response(response_id=rid, example_id=eid, model="m", text="a"))
        labels.append(Label(response_id=rid, labeler=REFERENCE, hallucinated=bad))
        for k, det in enumerate(DETECTORS):
            strength = 2.0 - 0.14 * k
            value = strength * float(bad) + float(rng.normal())
            scores.append(Score(response_id=rid, detector=det, value=value))
    for records in (examples, responses, labels, scores):
        store.append(records)
    return store


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return load(_build(tmp_path_factory.mktemp("layout") / "run"))


@pytest.fixture
def caught(monkeypatch):
    """Every matplotlib figure handed to ``png_bytes``, in order."""
    import realitycheck.plots as plots
    import realitycheck.studies.leaderboard._plot as plot_module

    original = plots.png_bytes
    figures = []

    def catch(fig, *args, **kwargs):
        figures.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(plots, "png_bytes", catch)
    monkeypatch.setattr(plot_module, "png_bytes", catch, raising=False)
    return figures


@contextmanager
def _drawn():
    """Collect ``(text, extent)`` for every non-empty text drawn meanwhile."""
    from matplotlib.text import Text

    found = []
    original = Text.draw

    def spy(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text():
            found.append((self, self.get_window_extent(renderer)))

    Text.draw = spy
    try:
        yield found
    finally:
        Text.draw = original


def _layout(fig):
    """Draw ``fig`` again as ``png_bytes`` did (maths off); return the texts drawn and its box."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    with matplotlib.rc_context({"text.parse_math": False}), _drawn() as found:
        fig.canvas.draw()
    return found, fig.bbox


def _overlap(a, b) -> bool:
    """Whether the boxes overlap or come closer than ``GAP`` px (``1.000.00`` reads as one)."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width > -GAP and height > -GAP


def _problems(fig) -> list[str]:
    found, box = _layout(fig)
    out = []
    if fig.get_figwidth() > PAGE_INCHES + 1e-9:
        out.append(f"wider than the page column: {fig.get_figwidth()} inches")
    for text, ext in found:
        shown = repr(text.get_text())
        if ext.x0 < box.x0 - 1 or ext.y0 < box.y0 - 1 or ext.x1 > box.x1 + 1 or ext.y1 > box.y1 + 1:
            out.append(f"outside the figure: {shown} at {ext.extents}, figure {box.extents}")
        if text.get_fontsize() < MIN_POINTS:
            out.append(f"smaller than {MIN_POINTS} pt: {shown} ({text.get_fontsize()} pt)")
    for (t1, e1), (t2, e2) in itertools.combinations(found, 2):
        if _overlap(e1, e2):
            out.append(f"overlap: {t1.get_text()!r} and {t2.get_text()!r}")
    return out


def _inert(fig) -> None:
    """Every text drawn is drawn as written: maths off, no control or bidi character raw."""
    found, _ = _layout(fig)
    assert found
    for text, _ext in found:
        assert not text.get_parse_math(), text.get_text()
        raw = [c for c in text.get_text() if unicodedata.category(c) in ("Cc", "Cf") and c != "\n"]
        assert raw == [], text.get_text()


def _check(fig) -> None:
    problems = _problems(fig)
    assert problems == [], "\n".join(problems)
    _inert(fig)


@pytest.fixture(scope="module")
def found(data):
    drawn, _ = curves(data, DATASET, REFERENCE, list(DETECTORS))
    assert len(drawn) == len(DETECTORS)
    return drawn


def test_roc_figure_text_neither_overlaps_nor_leaves_the_figure(found, caught):
    render_roc(found, DATASET, REFERENCE)
    _check(caught[-1])


def test_pr_figure_text_neither_overlaps_nor_leaves_the_figure(found, caught):
    render_pr(found, DATASET, REFERENCE, 0.4)
    _check(caught[-1])


@pytest.mark.parametrize("kind", ["rejection", "reliability"])
def test_calibration_figure_text_neither_overlaps_nor_leaves_the_figure(data, caught, kind):
    pivot = dataset_scores(data, DATASET, REFERENCE, list(DETECTORS))
    figures = selective_figures(data, DATASET, REFERENCE, list(DETECTORS), scored=pivot)
    assert [f.stem.split("_", 1)[0] for f in figures] == ["rejection", "reliability"]
    _check(caught[["rejection", "reliability"].index(kind)])


@pytest.mark.parametrize("rows", [3, 14])
def test_leaderboard_figure_text_neither_overlaps_nor_leaves_the_figure(caught, rows):
    names = [f"{d} generator-{i}" for i, d in enumerate(DETECTORS[:rows])]
    rng = np.random.default_rng(rows)
    series = {}
    for judge in ("human", "recorded:gpt-4o-2024-08-06-judge", LONG, "$x^$ <i>judge</i>"):
        rates = rng.random(rows)
        series[judge] = (rates, rates - 0.05, rates + 0.05)
    dot_plot(
        names,
        series,
        xlabel=f"hallucination rate (answered judged responses; Wilson CI) under {LONG}",
        title=f"{DATASET} (all): generators by {REFERENCE} rate, lowest first",
    )
    _check(caught[-1])


def test_the_same_detectors_keep_the_same_colours_in_every_curve_figure(data, found, caught):
    """ROC, rejection and reliability figures draw the same detectors in the same colours."""
    from matplotlib.colors import to_hex

    render_roc(found, DATASET, REFERENCE)
    selective_figures(data, DATASET, REFERENCE, list(DETECTORS))
    roc, rejection, reliability = caught
    kept = ("chance (0.5)", "oracle (1)", "random (0)")

    def legend(fig):
        (box,) = fig.legends
        pairs = zip(box.get_texts(), box.legend_handles, strict=True)
        return [to_hex(h.get_color()) for t, h in pairs if t.get_text() not in kept]

    panels = [to_hex(ax.lines[1].get_color()) for ax in reliability.axes]
    assert legend(roc) == legend(rejection) == panels
    assert len(set(panels)) == len(panels) == 6
