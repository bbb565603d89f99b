"""The ``files`` dataset says what it cannot read well: id-like text, NaN scores, odd cells."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from realitycheck.datasets.files import Files
from realitycheck.errors import InvalidInputError


def _jsonl(tmp_path: Path, rows: list[dict], name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _warnings(bundle) -> list[str]:
    return [n for n in bundle.notes if n.startswith("Warning")]


# Text fields that hold numbers or ids.


@pytest.mark.parametrize(
    ("field", "values", "shown"),
    [
        ("context", ["[101, 2023, 1996]", "[101, 7592, 102]"], "[101, 2023, 1996]"),
        ("question", ["1234", "5678"], "1234"),
        ("text", ["[7, 8, 9]", "[1, 2]"], "[7, 8, 9]"),
        ("references", ["3 4 5", "6 7"], "3 4 5"),
    ],
)
def test_a_text_field_of_numbers_or_ids_warns(tmp_path, caplog, field, values, shown):
    rows = [{"text": f"answer {i}", "question": f"q{i}?"} for i in range(2)]
    for row, value in zip(rows, values, strict=True):
        row["col"] = value
    path = _jsonl(tmp_path, rows)
    params = {"text": "col"} if field == "text" else {"columns": f"{field}:col"}
    with caplog.at_level(logging.WARNING):
        bundle = Files(path=str(path), **params).load()
    (warning,) = _warnings(bundle)
    assert f"the {field} field (column 'col') of d.jsonl" in warning
    assert f"such as {shown!r}" in warning and "2 of 2 values" in warning
    assert any("looks like numbers or ids" in r.getMessage() for r in caplog.records)


def test_numeric_answers_and_prose_with_numbers_do_not_warn(tmp_path, caplog):
    rows = [
        {
            "text": "1969",
            "question": "When was the landing in 1969?",
            "references": "1969",
            "context": "Apollo 11 landed on 20 July 1969.",
        },
        {"text": "3.5", "question": "How many?", "references": "42", "context": "In 1969, 3."},
    ]
    with caplog.at_level(logging.WARNING):
        bundle = Files(path=str(_jsonl(tmp_path, rows))).load()
    assert not _warnings(bundle)
    assert not caplog.records


# NaN scores and response texts that are not text.


def _nan_scores(bundle) -> list[tuple[float | None, str]]:
    return [(s.value, s.error) for s in bundle.scores]


def test_a_json_nan_and_a_csv_nan_score_are_both_missing_with_a_warning(tmp_path, caplog):
    (tmp_path / "d.json").write_text(
        '[{"text": "a", "s": NaN}, {"text": "b", "s": 0.25}, {"text": "c", "s": null}]',
        encoding="utf-8",
    )
    (tmp_path / "d.csv").write_text("text,s\na,nan\nb,0.25\nc,\n", encoding="utf-8")
    expected = [(None, "NaN score cell"), (0.25, ""), (None, "empty score cell")]
    for name in ("d.json", "d.csv"):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            bundle = Files(path=str(tmp_path / name), scores="s").load()
        assert _nan_scores(bundle) == expected
        (warning,) = _warnings(bundle)
        assert f"1 cells of the score column 's' of {name} are NaN" in warning
        assert any("NaN" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("bad", ["inf", "high", True])
def test_a_score_that_is_not_a_number_is_still_refused(tmp_path, bad):
    path = _jsonl(tmp_path, [{"text": "a", "s": bad}])
    with pytest.raises(InvalidInputError, match=r"d.jsonl, line 1, field 's'.*finite number"):
        Files(path=str(path), scores="s").load()


@pytest.mark.parametrize("value", [123, True, 1.5])
def test_a_response_text_that_is_not_a_string_is_refused(tmp_path, value):
    path = _jsonl(tmp_path, [{"text": "fine"}, {"text": value}])
    with pytest.raises(InvalidInputError, match=r"d.jsonl, line 2, field 'text'.*must be a string"):
        Files(path=str(path)).load()


def test_an_answer_column_that_is_not_a_string_is_refused(tmp_path):
    path = _jsonl(tmp_path, [{"good": "Paris", "bad": 42}])
    with pytest.raises(InvalidInputError, match=r"line 1, field 'bad'.*must be a string"):
        Files(path=str(path), answers=("good:faithful", "bad:hallucinated")).load()


def test_a_numeric_text_in_a_csv_is_text(tmp_path):
    (tmp_path / "d.csv").write_text("text\n123\n", encoding="utf-8")
    assert [r.text for r in Files(path=str(tmp_path / "d.csv")).load().responses] == ["123"]


# JSON nested too deeply for Python's parser.

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("d.json", f'[{{"text": "a", "m": {DEEP}}}]', r"d\.json: "),
        ("d.jsonl", f'{{"text": "a"}}\n{{"text": "b", "m": {DEEP}}}\n', r"d\.jsonl, line 2: "),
    ],
)
def test_deeply_nested_json_is_a_clear_error(tmp_path, name, text, where):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=where + "The JSON is nested too deeply"):
        Files(path=str(tmp_path / name)).load()


@pytest.mark.parametrize("param", ["label", "samples"])
def test_a_deeply_nested_list_cell_is_a_clear_error(tmp_path, param):
    path = _jsonl(tmp_path, [{"text": "a", "cell": DEEP}])
    with pytest.raises(InvalidInputError, match=r"line 1, field 'cell'.*nested too deeply"):
        Files(path=str(path), **{param: "cell"}).load()


def test_deeply_nested_json_in_the_cli_is_an_error_not_an_internal_one(tmp_path, capsys):
    from realitycheck.cli import main

    (tmp_path / "d.jsonl").write_text(f'{{"text": "b", "m": {DEEP}}}\n', encoding="utf-8")
    code = main(
        ["ingest", "-d", f"files[path={tmp_path / 'd.jsonl'}]", "--out", str(tmp_path / "r")]
    )
    err = capsys.readouterr().err
    assert code != 0 and "internal error" not in err and "nested too deeply" in err
