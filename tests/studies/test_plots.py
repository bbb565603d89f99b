"""Figure text: no maths parsing, control characters shown."""

import pytest

from realitycheck.studies.plots import new_figure, png_bytes, visible

PNG = b"\x89PNG\r\n\x1a\n"


def test_visible_marks_control_and_bidi_characters():
    assert visible("abc\u202egnp.exe") == "abc[U+202E]gnp.exe"
    assert visible("a\x00b\x1bc\u2066d\u200f") == "a[U+0000]b[U+001B]c[U+2066]d[U+200F]"
    assert visible("two\nlines\tand é ü 漢") == "two\nlines\tand é ü 漢"


def test_png_bytes_shows_bidi_overrides_in_tick_labels_titles_and_legends():
    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1], label="judge\u202e")
    ax.set_yticks([0, 1])
    ax.set_yticklabels(["abc\u202egnp.exe", "$x^$"])
    ax.set_title("title\u202e")
    ax.legend()
    assert png_bytes(fig).startswith(PNG)
    # The tick labels are made again at every draw: they come out marked, not reordered.
    assert [t.get_text() for t in ax.get_yticklabels()] == ["abc[U+202E]gnp.exe", "$x^$"]
    assert ax.get_title() == "title[U+202E]"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["judge[U+202E]"]
    # A second render wraps nothing twice and gives the same labels.
    assert png_bytes(fig).startswith(PNG)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["abc[U+202E]gnp.exe", "$x^$"]


def test_png_bytes_draws_maths_as_written_in_ticks_made_while_drawing():
    from matplotlib.ticker import FuncFormatter

    fig, ax = new_figure()
    ax.plot(range(50), range(50))
    # Tick labels made by a formatter during the draw itself: unbalanced maths.
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, pos: "$x^$"))
    ax.set_xlabel("$\\frac{")
    assert png_bytes(fig).startswith(PNG)
    assert {t.get_text() for t in ax.get_xticklabels()} == {"$x^$"}


def test_png_bytes_keeps_numeric_tick_offsets():
    fig, ax = new_figure()
    ax.plot([0, 1], [1e9, 1e9 + 1])
    assert png_bytes(fig).startswith(PNG)
    assert ax.yaxis.get_offset_text().get_text() != ""


def _picture(png):
    import io

    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)


def _tight(fig):
    """The figure as ``savefig(bbox_inches="tight")`` writes it, at png_bytes' resolution."""
    import io

    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"text.parse_math": False}):
        fig.savefig(buffer, format="png", bbox_inches="tight", dpi=fig.dpi * 2)
    return buffer.getvalue()


def _drawn_box(picture):
    """Rows and columns of the picture that hold anything but the white ground."""
    import numpy as np

    rows, cols = np.nonzero(picture < 250)
    return rows.min(), rows.max(), cols.min(), cols.max()


def test_png_bytes_draws_once_and_cuts_the_picture_as_a_tight_savefig_does():
    from realitycheck.studies.plots import shown_size

    def figure():
        fig, ax = new_figure(5.6, 3.0)
        ax.plot([0, 1], [0, 1], label="a line")
        ax.set_xlabel("false positive rate")
        fig.suptitle("a title")
        ax.legend()
        return fig

    ours, theirs = _picture(png_bytes(figure())), _picture(_tight(figure()))
    assert ours.shape == theirs.shape  # the same cut: the drawing and 0.1 in around it
    top, bottom, left, right = _drawn_box(ours)
    assert max(abs(a - b) for a, b in zip(_drawn_box(ours), _drawn_box(theirs), strict=True)) <= 1
    # matplotlib's margin (savefig.pad_inches, 0.1 in = 20 px here) is white on every side
    assert top >= 18 and left >= 18 and ours.shape[0] - bottom >= 18 and ours.shape[1] - right >= 18
    import numpy as np

    # The same drawing, to a pixel's shift (savefig draws at a fraction of a pixel off)
    shifted = [np.roll(ours, (dy, dx), (0, 1)) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    nearest = np.min([abs(s - theirs) for s in shifted], axis=0)
    assert (nearest > 64).mean() < 0.001
    assert shown_size(png_bytes(figure())) == shown_size(_tight(figure()))


def test_png_bytes_widens_the_picture_for_what_a_figure_draws_outside_itself():
    fig, ax = new_figure(3.0, 2.0)
    ax.plot([0, 1], [0, 1])
    fig.text(1.3, 0.5, "out on the right")  # past the figure's right edge
    picture = _picture(png_bytes(fig))
    assert picture.shape[1] > 3.0 * 1.3 * 200
    assert (picture[:, int(3.2 * 200) :] < 128).sum() > 100  # the text is drawn there, not cut off
    assert picture.shape == _picture(_tight(fig)).shape


def test_png_bytes_of_a_see_through_figure_goes_through_savefig(monkeypatch):
    from realitycheck.studies import plots

    fig, ax = new_figure(3.0, 2.0)
    ax.plot([0, 1], [0, 1])
    fig.set_facecolor((1, 1, 1, 0))
    saved = []
    monkeypatch.setattr(plots, "_saved_png", lambda f, dpi: saved.append(dpi) or PNG)
    monkeypatch.setattr(type(fig.canvas), "draw", lambda self: pytest.fail("drawn for nothing"))
    assert png_bytes(fig) == PNG and saved == [200]
