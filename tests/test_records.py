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
