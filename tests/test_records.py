import pytest

from realitycheck import Example, InvalidInputError, Label, Response, Score
from realitycheck.records import records_from_rows, records_to_rows


def test_example_rejects_unknown_task():
    with pytest.raises(InvalidInputError, match="task of example 'e1' must be one of"):
        Example(example_id="e1", dataset="d", task="poetry")


@pytest.mark.parametrize("bad", ["", None, 3])
def test_ids_must_be_non_empty_strings(bad):
    with pytest.raises(InvalidInputError, match="response_id must be a non-empty string"):
        Score(response_id=bad, detector="x", value=1.0)


def test_nan_is_refused_in_favour_of_none_with_error():
    with pytest.raises(InvalidInputError, match="must not be NaN"):
        Score(response_id="r", detector="x", value=float("nan"))
    assert Score(response_id="r", detector="x", value=None, error="boom").value is None


def test_label_hallucinated_must_be_bool_or_none():
    with pytest.raises(InvalidInputError, match="hallucinated must be a bool or None"):
        Label(response_id="r", labeler="h", hallucinated=1)  # type: ignore[arg-type]


def test_rows_round_trip_keeps_tuples_mappings_and_none():
    records = [
        Example(example_id="e", dataset="d", task="qa", references=("a", "b"), meta={"k": [1]}),
    ]
    assert records_from_rows(Example, records_to_rows(records)) == records
    resp = [Response(response_id="r", example_id="e", model="m", text="t", samples=("x",))]
    assert records_from_rows(Response, records_to_rows(resp)) == resp
    labels = [Label(response_id="r", labeler="h", hallucinated=None, error="no answer")]
    assert records_from_rows(Label, records_to_rows(labels)) == labels


@pytest.mark.parametrize("cls", [Label, Score])
def test_a_retryable_record_is_a_failed_one(cls):
    label = {"labeler": "j", "hallucinated": None}
    key = label if cls is Label else {"detector": "d", "value": None}
    # Code written before ``failed`` existed builds retryable records this way.
    old = cls(response_id="r", error="HTTP 503", retryable=True, **key)
    assert old.failed is True and old.unreadable == 0
    fatal = cls(response_id="r", error="HTTP 400", failed=True, **key)
    assert fatal.failed is True and fatal.retryable is False
    missing = cls(response_id="r", error="no reference", **key)
    assert missing.failed is False


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"failed": 1, "error": "e"}, "failed must be a bool. Got 1 instead"),
        ({"failed": True}, "A failed score of 'r' by 'd' must say its error"),
        ({"unreadable": -1}, "unreadable of the score of 'r' by 'd' must be an int >= 0. Got -1"),
        ({"unreadable": True}, "must be an int >= 0. Got True instead"),
        ({"unreadable": 1.5}, "must be an int >= 0. Got 1.5 instead"),
    ],
)
def test_failed_and_unreadable_are_checked(bad, match):
    with pytest.raises(InvalidInputError, match=match):
        Score(response_id="r", detector="d", value=None, **bad)


def test_unreadable_read_from_a_table_becomes_a_python_int():
    np = pytest.importorskip("numpy")
    score = Score(response_id="r", detector="d", value=0.5, unreadable=np.int64(3))
    assert type(score.unreadable) is int and score.unreadable == 3
