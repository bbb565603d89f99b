"""What the curve figures draw: the best few by AUROC and the length baseline; the rest listed.

A figure with eleven curves in pastel pairs cannot be read. The ROC and
precision-recall figures draw the ``SHOWN`` detectors with the highest AUROC
and the best response-length baseline, each in its own colour-blind safe
colour (the baseline black, dash-dot); the caption names every detector left
out with its value, so a reader still knows what is missing. The figures are
PNGs at twice their layout's resolution.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from realitycheck import metrics as M
from realitycheck.report._figures import SHOWN, Curve, pick, render_pr, render_roc, styles
from realitycheck.report._results import drawn_summary
from realitycheck.studies.plots import BASELINE_COLOUR, PALETTE, SCALE, shown_size


def _curve(rng, name: str, strength: float) -> Curve:
    y = rng.random(200) < 0.4
    s = strength * y + rng.normal(size=200)
    fpr, tpr, _ = M.roc_curve(y, s)
    precision, recall, _ = M.precision_recall_curve(y, s)
    return Curve(
        detector=name,
        fpr=fpr,
        tpr=tpr,
        precision=precision,
        recall=recall,
        auroc=float(M.auroc(y, s)),
        pr_auc=float(M.pr_auc(y, s)),
        n=200,
        n_positive=int(y.sum()),
    )


NAMES = [f"detector-{k}" for k in range(9)] + ["length", "length[unit=tokens]"]


@pytest.fixture(scope="module")
def many():
    rng = np.random.default_rng(11)
    return [_curve(rng, name, 1.5 - 0.1 * k) for k, name in enumerate(NAMES)]


@pytest.mark.parametrize(
    ("detectors", "aurocs", "drawn", "left"),
    [
        # The baseline ranks below the top five: drawn after them.
        (list("abcdefg") + ["length"], [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2], 6, [5, 6]),
        # The baseline ranks among them: it takes no detector's place.
        (["a", "length[unit=chars]", "b", "c", "d", "e"], [0.6, 0.9, 0.5, 0.4, 0.3, 0.2], 6, []),
        # Two length variants: the better one is the baseline, the other is left out.
        (
            ["length", "a", "b", "c", "d", "e", "length[unit=tokens]"],
            [0.3, 0.9, 0.8, 0.7, 0.6, 0.5, 0.2],
            6,
            [6],
        ),
        (["length[unit=tokens]", "length", "a", "b"], [0.9, 0.8, 0.5, 0.4], 3, [1]),
        # No baseline, fewer detectors than SHOWN.
        (["a", "b"], [0.4, 0.6], 2, []),
        # NaN ranks last.
        (["a", "b", "c", "d", "e", "f"], [math.nan, 0.5, 0.6, 0.7, 0.8, 0.9], 5, [0]),
    ],
)
def test_pick_draws_the_best_by_auroc_and_the_best_baseline(detectors, aurocs, drawn, left):
    shown, rest = pick(detectors, aurocs)
    assert len(shown) == drawn and rest == left
    assert sorted(shown + rest) == list(range(len(detectors)))

    def key(i):
        return (math.isnan(aurocs[i]), 0.0 if math.isnan(aurocs[i]) else -aurocs[i])

    def is_baseline(i):
        return detectors[i].split("[")[0] == "length"

    ranked = sorted(range(len(detectors)), key=key)
    assert set(shown) == {
        *[i for i in ranked if not is_baseline(i)][:SHOWN],
        *[i for i in ranked if is_baseline(i)][:1],
    }
    # Both lists come best first, NaN last.
    assert [key(i) for i in shown] == sorted(key(i) for i in shown)
    assert [key(i) for i in rest] == sorted(key(i) for i in rest)


def test_styles_give_each_detector_its_own_colour_and_the_baseline_black_dash_dot():
    dets = ["a", "b", "length[unit=chars]", "c", "length", "d", "e"]
    found = styles(dets)
    colours = [s["color"] for s in found]
    assert found[2] == {"color": BASELINE_COLOUR, "linestyle": "-.", "linewidth": 1.6}
    others = [c for i, c in enumerate(colours) if i != 2]
    assert others == list(PALETTE[: len(others)])
    assert len(set(colours)) == len(colours)
    assert BASELINE_COLOUR not in PALETTE


def _legend(monkeypatch, render):
    import realitycheck.studies.plots as plots

    caught = []
    original = plots.png_bytes

    def catch(fig, *args, **kwargs):
        caught.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(plots, "png_bytes", catch)
    figure = render()
    (legend,) = caught[0].legends
    return figure, [t.get_text() for t in legend.get_texts()], legend


@pytest.mark.parametrize("kind", ["roc", "pr"])
def test_a_curve_figure_draws_the_top_five_and_the_baseline_and_lists_the_rest(
    many, monkeypatch, kind
):
    if kind == "roc":
        figure, texts, legend = _legend(monkeypatch, lambda: render_roc(many, "ds", "human"))
    else:
        figure, texts, legend = _legend(monkeypatch, lambda: render_pr(many, "ds", "human", 0.4))
    ranked = sorted(many, key=lambda c: -c.auroc)
    top = [c for c in ranked if c.detector.split("[")[0] != "length"][:SHOWN]
    baseline = max((c for c in many if c.detector.split("[")[0] == "length"), key=lambda c: c.auroc)
    drawn = [c for c in ranked if c in top or c is baseline]
    value = (lambda c: c.auroc) if kind == "roc" else (lambda c: c.pr_auc)
    expected = [
        f"{c.detector} ({value(c):.3f}, baseline)"
        if c is baseline
        else f"{c.detector} ({value(c):.3f})"
        for c in drawn
    ]
    assert texts[: len(drawn)] == expected
    assert len(texts) == len(drawn) + 1  # and the chance line
    # Each drawn line has its own colour.
    colours = [h.get_color() for h in legend.legend_handles[: len(drawn)]]
    assert len(set(colours)) == len(colours)
    # Every detector left out is named in the caption with its value, best AUROC first.
    rest = [c for c in ranked if c not in drawn]
    assert rest
    listed = "; ".join(f"{c.detector} {value(c):.3f}" for c in rest)
    assert listed in figure.caption
    assert f"{len(rest)} more detectors" not in figure.caption  # that line is in the figure


def test_a_figure_is_drawn_at_twice_its_layout_resolution(many):
    import io

    from PIL import Image

    figure = render_roc(many, "ds", "human")
    pixels = Image.open(io.BytesIO(figure.png)).size
    shown = shown_size(figure.png)
    assert pixels == (shown[0] * SCALE, shown[1] * SCALE) or all(
        abs(p - s * SCALE) <= 1 for p, s in zip(pixels, shown, strict=True)
    )
    assert 420 <= shown[0] <= 560  # fits the report's column at its own size


def test_legend_labels_that_would_be_cut_alike_are_cut_apart():
    from realitycheck.report._figures import legend_labels

    names = ["x" * 40 + "a" + "x" * 40, "x" * 40 + "b" + "x" * 40, "length"]
    labels = legend_labels(names, names, [0.9, 0.8, 0.7])
    assert len(set(labels)) == 3
    assert labels[2] == "length (0.700, baseline)"
    assert all(label.endswith(("(0.900)", "(0.800)", "baseline)")) for label in labels)


def test_the_caption_says_what_is_drawn_when_only_length_variants_are_left_out():
    rng = np.random.default_rng(5)
    few = [_curve(rng, n, s) for n, s in (("a", 1.5), ("length", 1.2), ("length[unit=x]", 0.1))]
    caption = render_roc(few, "ds", "human").caption
    assert "Drawn: every detector, and the best of the response-length baselines." in caption
    assert "Black, dash-dot: the response-length baseline (length)." in caption
    assert "length[unit=x] " in caption.split("Not drawn")[1]


@pytest.mark.parametrize(
    ("names", "summary"),
    [
        (
            NAMES,
            "6 of 11 detectors drawn (the 5 with the highest AUROC and the best length "
            "baseline); the other 5 are listed in the captions",
        ),
        (
            NAMES[:7],
            "5 of 7 detectors drawn (the 5 with the highest AUROC); "
            "the other 2 are listed in the captions",
        ),
        (
            ["a", "length", "length[unit=x]"],
            "2 of 3 detectors drawn (every detector but the other length variants); "
            "the other one is listed in the captions",
        ),
        (["a", "length"], "2 detectors"),
    ],
)
def test_the_fold_of_the_curves_says_how_many_are_drawn_and_where_the_rest_are(names, summary):
    rng = np.random.default_rng(7)
    found = [_curve(rng, name, 1.5 - 0.1 * k) for k, name in enumerate(names)]
    assert drawn_summary(found) == summary
