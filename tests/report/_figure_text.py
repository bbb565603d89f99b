"""Checks that no two texts of a matplotlib figure overlap and none leaves it.

A figure is caught on its way to :func:`realitycheck.studies.plots.png_bytes` and drawn
again; every text drawn is measured by its window extent
(``Text.get_window_extent(renderer)``, the renderer the draw used). Two texts
whose boxes come closer than :data:`GAP` pixels collide; a text outside the
figure's own box would be cut, or would make the saved image wider than the
page column it was sized for.
"""

from __future__ import annotations

import itertools
import unicodedata
from contextlib import contextmanager

MIN_POINTS = 8.0
"""Smallest font, in points: 11 CSS px when the figure is shown at its own size."""
GAP = 2.0
"""Least room between two texts, in px at 100 per inch."""
PAGE_INCHES = 5.6
"""Widest figure, in inches at 100 px each: the report shows figures at most 560 px wide."""

SCRIPT = "<script>alert(1)</script>"
MATHS = "$x^$ \\frac{a}{b} $\\alpha$"
OSC = "\x1b]0;PWNED\x07 osc-title"
RLO = "abc\u202egnp.exe\x00"
LONG = "selfcheck[variant=nli,model=microsoft/deberta-v3-large-mnli-fever-anli-ling-wanli"
DATASET = "halueval_general/$x^$ <b>a dataset with a very long name</b> \u202egnp.exe"
REFERENCE = "human[protocol=worst,annotators=three-of-five]"


def catching(monkeypatch) -> list:
    """Every matplotlib figure handed to ``png_bytes``, in order, however it was imported.

    ``png_bytes`` makes its figure inert first (:func:`realitycheck.studies.plots.inert`),
    looked up in its module whatever name the caller imported it by.
    """
    import realitycheck.studies.plots as plots

    original = plots.inert
    figures: list = []

    def catch(fig):
        if not any(f is fig for f in figures):
            figures.append(fig)
        return original(fig)

    monkeypatch.setattr(plots, "inert", catch)
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


def layout(fig):
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


def problems(fig, found, box) -> list[str]:
    """What is wrong with ``fig``'s text (:func:`layout`): too wide, outside, small, overlapping."""
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


def inert(found) -> None:
    """Every text drawn is drawn as written: maths off, no control or bidi character raw."""
    assert found
    for text, _ext in found:
        assert not text.get_parse_math(), text.get_text()
        raw = [c for c in text.get_text() if unicodedata.category(c) in ("Cc", "Cf") and c != "\n"]
        assert raw == [], text.get_text()


def check(fig) -> None:
    """Draw ``fig`` once; assert :func:`problems` finds nothing and every text is :func:`inert`."""
    found, box = layout(fig)
    wrong = problems(fig, found, box)
    assert wrong == [], "\n".join(wrong)
    inert(found)
