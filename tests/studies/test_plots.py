"""Figure text: no maths parsing, control characters shown."""

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
