"""No two texts of a figure overlap and none leaves it, however many and long the names.

Each kind of figure the report draws (ROC, precision-recall, rejection,
reliability grid, the leaderboard's dot plot) is rendered through its public
function from a run of fourteen detectors with long, near-identical and
hostile names (markup, maths, terminal escapes, bidi overrides), and checked
by :mod:`_figure_text` (text boxes measured as drawn). The studies' figures
are checked the same way in test_study_figure_layout.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from _figure_text import DATASET, LONG, REFERENCE, catching, check

from realitycheck import Example, Label, Response, RunStore, Score
from realitycheck.report._calibration import selective_figures
from realitycheck.report._data import dataset_scores, load
from realitycheck.report._figures import curves, render_pr, render_roc
from realitycheck.studies.leaderboard import dot_plot

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
    return catching(monkeypatch)


@pytest.fixture(scope="module")
def found(data):
    drawn, _ = curves(data, DATASET, REFERENCE, list(DETECTORS))
    assert len(drawn) == len(DETECTORS)
    return drawn


def test_roc_figure_text_neither_overlaps_nor_leaves_the_figure(found, caught):
    render_roc(found, DATASET, REFERENCE)
    check(caught[-1])


def test_pr_figure_text_neither_overlaps_nor_leaves_the_figure(found, caught):
    render_pr(found, DATASET, REFERENCE, 0.4)
    check(caught[-1])


@pytest.mark.parametrize("kind", ["rejection", "reliability"])
def test_calibration_figure_text_neither_overlaps_nor_leaves_the_figure(data, caught, kind):
    pivot = dataset_scores(data, DATASET, REFERENCE, list(DETECTORS))
    figures = selective_figures(data, DATASET, REFERENCE, list(DETECTORS), scored=pivot)
    assert [f.stem.split("_", 1)[0] for f in figures] == ["rejection", "reliability"]
    check(caught[["rejection", "reliability"].index(kind)])


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
    check(caught[-1])


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
