"""Names cut to a width, titles wrapped, PNGs drawn at twice their layout's resolution.

Widths are checked against what matplotlib really draws: the window extent of
the text at the figures' 100 px per inch.
"""

import io

import numpy as np
import pytest
from PIL import Image

from realitycheck.studies.plots import (
    ELLIPSIS,
    PAGE_WIDTH,
    SCALE,
    fit,
    fit_labels,
    fit_pairs,
    heatmap,
    height_of,
    legend_below,
    new_figure,
    png_bytes,
    shown_size,
    text_width,
    wrap,
)

ALPHABET = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:/[],.=_-<>()$^ W")


def _drawn_width(text: str, size: float) -> float:
    """Points wide that matplotlib draws ``text`` (maths off) at 100 dpi."""
    fig, _ = new_figure()
    t = fig.text(0, 0, text, fontsize=size, parse_math=False)
    return t.get_window_extent(fig.canvas.get_renderer()).width * 72 / fig.dpi


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("size", [8.0, 9.0, 10.5])
def test_text_width_is_never_less_than_what_is_drawn(seed, size):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        text = "".join(rng.choice(ALPHABET, rng.integers(3, 70)))
        assert text_width(text, size) >= _drawn_width(text, size)


@pytest.mark.parametrize("points", [40.0, 120.0, 300.0])
def test_fit_cuts_in_the_middle_to_the_width(points):
    name = "selfcheck[variant=nli,model=microsoft/deberta-v3-large-mnli-fever-anli-ling-wanli]"
    cut = fit(name, points, 9.0)
    assert _drawn_width(cut, 9.0) <= points
    head, _, tail = cut.partition(ELLIPSIS)
    assert name.startswith(head) and name.endswith(tail) and len(head) >= len(tail)
    assert fit("short", points, 9.0) == "short"


def test_fit_shows_controls_before_measuring_and_keeps_one_line():
    assert fit("a\u202eb\x00c", 500, 9.0) == "a[U+202E]b[U+0000]c"
    assert fit("two\nlines", 500, 9.0) == "two lines"
    assert "\u202e" not in fit("x" * 50 + "\u202e" + "y" * 50, 60, 9.0)


@pytest.mark.parametrize("seed", range(4))
def test_fit_labels_keep_distinct_names_distinct_and_within_the_width(seed):
    rng = np.random.default_rng(seed)
    stem = "recorded:hhem-2.1-english-with-a-long-common-part-"
    names = {stem + "".join(rng.choice(ALPHABET[:4], rng.integers(0, 4))) for _ in range(30)}
    names |= {"x" * 80 + "a", "x" * 80 + "b", "x" * 40 + "a" + "x" * 40}
    labels = fit_labels(names, 90.0, 9.0)
    assert set(labels) == names
    assert len(set(labels.values())) == len(names)
    assert all(_drawn_width(label, 9.0) <= 90.0 for label in labels.values())


def test_wrap_breaks_at_spaces_and_break_characters_within_the_width():
    title = "ragtruth (all): generators by human[protocol=worst] rate, lowest first"
    lines = wrap(title, 260.0, 10.0).split("\n")
    assert len(lines) == 2 and " ".join(lines) == title
    assert all(_drawn_width(line, 10.0) <= 260.0 for line in lines)
    assert wrap("recorded:hhem-2.1-english", 90.0, 9.0, breaks=":") == "recorded:\nhhem-2.1-english"
    assert wrap("plain", 80.0, 9.0) == "plain"


def test_wrap_cuts_what_does_not_fit_and_never_splits_a_control_mark():
    text = "\x1b]0;PWNED\x07 " + "word " * 60
    lines = wrap(text, 120.0, 9.0, lines=3, breaks=":/[,").split("\n")
    assert len(lines) == 3 and ELLIPSIS in lines[-1]
    assert all(_drawn_width(line, 9.0) <= 120.0 for line in lines)
    joined = "".join(lines)
    assert "\x1b" not in joined and "\x07" not in joined
    # A mark is one piece: it is never left with "[" at the end of a line.
    assert not any(line.endswith("[") for line in lines)


def test_png_bytes_draws_at_twice_the_layout_and_says_so():
    fig, ax = new_figure(4.0, 3.0)
    ax.plot([0, 1], [0, 1])
    png = png_bytes(fig)
    pixels = Image.open(io.BytesIO(png)).size
    width, height = shown_size(png)
    assert all(abs(p - SCALE * s) <= 1 for p, s in zip(pixels, (width, height), strict=True))
    # 4 x 3 inches, tight-cropped: at most the figure and the 0.1-inch pad around it
    assert 300 <= width <= 420 and 200 <= height <= 320
    once = png_bytes(fig, scale=1)
    assert shown_size(once) == Image.open(io.BytesIO(once)).size


def test_shown_size_refuses_what_is_not_a_png():
    with pytest.raises(ValueError, match="Not a PNG"):
        shown_size(b"GIF89a" + b"\x00" * 30)


def test_a_legend_beneath_grows_the_figure_by_its_height_and_keeps_to_its_width():
    fig, ax = new_figure(PAGE_WIDTH, 3.0)
    lines = [ax.plot([0, 1], [k, k])[0] for k in range(6)]
    names = [f"detector-{k}[" + "x" * 200 + f"]-{k}" for k in range(6)]
    legend = legend_below(fig, lines, names)
    assert fig.get_figheight() == pytest.approx(3.0 + height_of(fig, legend) + 4 / 72)
    fig.canvas.draw()
    box = legend.get_window_extent(fig.canvas.get_renderer())
    assert 0 <= box.x0 and box.x1 <= fig.bbox.x1
    shown = [t.get_text() for t in legend.get_texts()]
    assert len(set(shown)) == 6 and all(ELLIPSIS in t for t in shown)


def test_fit_pairs_keeps_the_second_part_in_view():
    long = "halueval_general/" + "d" * 80
    first, short = fit_pairs([(long, "qa_judge[strict]"), ("halueval_qa", "rouge_l")], 2.4)
    assert first.endswith(" / qa_judge[strict]") and ELLIPSIS in first
    assert short == "halueval_qa / rouge_l"


@pytest.mark.parametrize(("n", "upright"), [(5, True), (60, False)])
def test_a_heatmap_numbers_its_columns_when_their_names_do_not_fit(n, upright):
    names = [f"signal-{k}" for k in range(n)]
    fig = heatmap(np.eye(n), names, names, heading="grid", cmap="RdBu_r", vmin=-1, vmax=1)
    (ax,) = fig.axes
    fig.canvas.draw()
    columns = [t.get_text() for t in ax.get_xticklabels()]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    if upright:
        assert columns == names and rows == names
    else:  # numbered, every few columns; the rows say which number is which
        assert columns[0] == "1" and int(columns[1]) > 2 and len(columns) < n
        assert rows[0] == "1 signal-0" and rows[-1] == f"{n} signal-{n - 1}"
    assert fig.get_figwidth() == PAGE_WIDTH
