import pytest

from realitycheck.detectors import RunContext, detectors
from realitycheck.errors import InvalidInputError
from realitycheck.records import Example, Response

CONTEXT = (
    "The Zephyr Bridge opened in 1932 and is 1,250 metres long. "
    "It carried 40.0 thousand cars a day in 2019, according to the city council."
)


def _needs(context=CONTEXT):
    return RunContext(
        examples={
            "e": Example(example_id="e", dataset="t", task="summary", context=context),
            "bare": Example(example_id="bare", dataset="t", task="summary"),
        }
    )


def _response(text, example_id="e", rid="r"):
    return Response(response_id=rid, example_id=example_id, model="m", text=text)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_source_overlap_is_zero_for_a_copy_and_high_for_invented_words(n):
    detector = detectors.create("source_overlap", n=n)
    copied = _response("The Zephyr Bridge opened in 1932 and is 1,250 metres long.", rid="copy")
    partial = _response("The Zephyr Bridge opened in 1932 and was painted purple.", rid="partial")
    invented = _response("Purple dragons guard Atlantis beneath frozen volcanoes.", rid="new")
    values = [s.value for s in detector.score([copied, partial, invented], _needs())]
    assert values[0] == 0.0
    assert 0.0 < values[1] < values[2]
    assert values[2] == 1.0


def test_source_overlap_counts_content_word_occurrences():
    # Content words: zephyr, bridge, purple, purple -> 2 of 4 absent.
    score = detectors.create("source_overlap").score(
        [_response("The Zephyr bridge: purple, purple!")], _needs()
    )
    assert score[0].value == pytest.approx(0.5)


def test_source_overlap_errors_without_context_or_content_words():
    detector = detectors.create("source_overlap")
    responses = [
        _response("Zephyr", example_id="bare", rid="a"),
        _response("it is the", rid="b"),
        _response("Zephyr", example_id="gone", rid="c"),
    ]
    scores = detector.score(responses, _needs())
    assert [s.value for s in scores] == [None, None, None]
    assert "no context" in scores[0].error
    assert "no content word" in scores[1].error
    assert "'gone' was not given" in scores[2].error


@pytest.mark.parametrize("n", [0, -1, 1.5, True])
def test_source_overlap_rejects_bad_n(n):
    with pytest.raises(
        InvalidInputError, match="'n' parameter of source_overlap must be an int >= 1"
    ):
        detectors.create("source_overlap", n=n)


def test_novel_numbers_counts_numbers_absent_from_the_context():
    responses = [
        _response("Opened in 1932, it is 1250 metres long and carried 40 thousand cars.", rid="a"),
        _response("Opened in 1931, it is 2,500 metres long.", rid="b"),
        _response("A long bridge.", rid="c"),
        _response("In 1932 and 1933.", rid="d"),
    ]
    count = [s.value for s in detectors.create("novel_numbers").score(responses, _needs())]
    share = [
        s.value
        for s in detectors.create("novel_numbers", measure="share").score(responses, _needs())
    ]
    assert count == [0.0, 2.0, 0.0, 1.0]
    assert share == [0.0, 1.0, 0.0, 0.5]


def test_novel_numbers_errors_without_context():
    scores = detectors.create("novel_numbers").score(
        [_response("In 1932.", example_id="bare")], _needs()
    )
    assert scores[0].value is None and "no context" in scores[0].error


def test_novel_numbers_rejects_bad_measure():
    with pytest.raises(
        InvalidInputError, match="'measure' parameter of novel_numbers must be one of"
    ):
        detectors.create("novel_numbers", measure="ratio")
