"""The public verdict parser: the rules of realitycheck.verdicts, one case each.

The corpus of replies in the styles real models write is in
tests/labelers/verdict_corpus.jsonl (tests/labelers/test_verdict_corpus.py).
"""

from __future__ import annotations

import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.verdicts import REASONS, Reading, parse_verdict, read_verdict

QA = ("incorrect", "refuse", "correct")
LETTERS = ("D", "B", "A", "C", "E")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("The proposed answer is not correct.", "negated"),
        ("This is not correct; the reference says 1972.", "negated"),
        ("I cannot say whether it is correct.", "negated"),
        ("The answer is neither correct nor incorrect.", "negated"),
        ("It is probably correct.", "hedged"),
        ("xq zz correct? fo bar", "no conclusion"),
        ("Verdict: correct\nVerdict: incorrect", "two verdicts"),
        ('{"verdict": "mostly right"}', "not a choice"),
        ("   ", "empty"),
    ],
)
def test_no_verdict_and_why(text: str, reason: str) -> None:
    assert read_verdict(text, choices=QA) == Reading(None, reason)
    assert reason in REASONS


@pytest.mark.parametrize(
    ("text", "verdict", "reason"),
    [
        ('{"reason": "x", "verdict": "incorrect"}', "incorrect", "json"),
        ('Sure.\n```json\n{"reason": "x", "verdict": "Correct"}\n```', "correct", "json"),
        ('Here it is: {"verdict": "correct"} as asked.', "correct", "json"),
        ("<verdict>refuse</verdict>", "refuse", "tag"),
        ("It mentions correct once.\nFinal classification: Incorrect", "incorrect", "verdict line"),
        ("Reasoning.\nFinal answer — correct", "correct", "verdict line"),
        ("Reasoning.\nTherefore, incorrect.", "incorrect", "final line"),
        ("Reasoning.\n**Correct.**", "correct", "final line"),
        ("Incorrect. The reference says 1972.", "incorrect", "first line"),
        ("  `Correct`  ", "correct", "bare"),
        ("結論：Incorrect。", "incorrect", "final line"),
    ],
)
def test_verdict_and_how(text: str, verdict: str, reason: str) -> None:
    assert read_verdict(text, choices=QA) == Reading(verdict, reason)
    assert parse_verdict(text, choices=QA) == verdict


def test_letters_only_from_fields_lines_and_a_bare_reply() -> None:
    assert parse_verdict("(B).", choices=LETTERS, letters=True) == "B"
    assert parse_verdict("Reasoning.\n**Answer:** c", choices=LETTERS, letters=True) == "C"
    assert parse_verdict("We pick plan A.", choices=LETTERS, letters=True) is None
    assert parse_verdict('{"choice": "(D)"}', choices=LETTERS, field="choice", letters=True) == "D"


def test_truncated_reads_only_a_closed_field_or_a_line_the_cut_did_not_reach() -> None:
    cut = "The summary is consistent with the source in that the"
    assert read_verdict(cut, choices=("inconsistent", "consistent"), truncated=True) == Reading(
        None, "truncated"
    )
    assert parse_verdict("Correct", choices=QA, truncated=True) is None
    assert parse_verdict('{"verdict": "incorrect", "reason": "the', choices=QA, truncated=True) == (
        "incorrect"
    )
    assert parse_verdict("Verdict: incorrect\nReason: the ref", choices=QA, truncated=True) == (
        "incorrect"
    )


def test_multi_word_choices_are_whole() -> None:
    choices = ("partially correct", "correct", "incorrect")
    assert parse_verdict("Verdict: Partially  Correct", choices=choices) == "partially correct"
    assert parse_verdict("Verdict: correct", choices=choices) == "correct"


@pytest.mark.parametrize("choices", [(), ("yes", ""), "yes"])
def test_bad_choices_are_refused(choices: object) -> None:
    with pytest.raises(InvalidInputError, match="The 'choices' parameter of parse_verdict"):
        parse_verdict("yes", choices=choices)  # type: ignore[arg-type]
