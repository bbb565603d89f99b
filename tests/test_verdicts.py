"""The public verdict parser: the rules of realitycheck.verdicts, one case each.

The corpus of replies in the styles real models write is in
tests/labelers/verdict_corpus.jsonl (tests/labelers/test_verdict_corpus.py).
"""

from __future__ import annotations

import ast

import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.verdicts import REASONS, Reading, parse_verdict, quote_reply, read_verdict

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
        ("Verdict: correct.\n\nActually no, on reflection the answer is incorrect.", "revised"),
        ("Correct. Wait, actually incorrect.", "revised"),
        ('{"verdict":"incorrect"}\nActually, correct.', "revised"),
        ("Correct! Or is it?", "revised"),
        ("Correct, but only the year.", "hedged"),
        ("I think the answer is correct.", "hedged"),
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


@pytest.mark.parametrize(
    "text",
    [
        "Correct: no",
        "Correct: false",
        "The reference answer is correct, but the proposed answer is wrong.",
        "Only 1972 would be correct.",
        "The proposed answer fails to be correct.",
        "The response claims to be correct.",
        "The answer needs to mention 1972 to be correct.",
        "The answer is incorrectly labeled as correct.",
        "The user says the answer is correct.",
        "The answer is correct if we ignore the month.",
        "If the year were 1972, the answer is correct.",
    ],
)
def test_a_verdict_said_of_something_else_or_not_concluded_is_none(text: str) -> None:
    assert parse_verdict(text, choices=QA) is None


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("It's correct.", "correct"),
        ("it’s incorrect", "incorrect"),
        ("I'd say it's correct.", "correct"),
        ("Since both name Canberra, the answer is correct.", "correct"),
        ("The response should be classified as incorrect.", "incorrect"),
        ("I would rate this response as incorrect.", "incorrect"),
        ("✅ Correct", "correct"),
        ("Verdict: Correct (the reference agrees)", "correct"),
    ],
)
def test_the_answer_judged_is_the_verdict(text: str, verdict: str) -> None:
    assert parse_verdict(text, choices=QA) == verdict


def test_yes_no_after_a_comma_and_at_the_start() -> None:
    yes_no = ("yes", "no")
    assert parse_verdict("Both name the same city, so the answer is no.", choices=yes_no) == "no"
    assert parse_verdict("No, the sample does not support it.\nDone.", choices=yes_no) == "no"
    assert parse_verdict("Yes, let me check.\nThe sample agrees.", choices=yes_no) is None
    assert parse_verdict("Yes, but only in part.", choices=yes_no) is None


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("Yes. The", "yes"),
        ("Yes. The sample says the same thing as the", "yes"),
        ("Yes, the sentence is supported by the", "yes"),
        ("Verdict: no. The sample says", "no"),
        ("Yes", None),
        ("Yes, but", None),
        ("Yes, the sentence is not supp", None),
        ("Yes. Wait", None),
        ("The answer is y", None),
    ],
)
def test_a_cut_reply_is_read_only_from_a_complete_opening(text: str, verdict: str | None) -> None:
    assert parse_verdict(text, choices=("yes", "no"), field="answer", truncated=True) == verdict


def test_the_article_a_is_not_choice_a() -> None:
    answer = "Answer: (C) The submitted answer is a superset of the expert answer."
    assert parse_verdict(answer, choices=LETTERS, field="choice", letters=True) == "C"
    assert parse_verdict("(B) It is a superset", choices=LETTERS, letters=True) == "B"
    listed = "(A) It is a subset.\n(B) It is a superset."
    assert parse_verdict(listed, choices=LETTERS, letters=True) is None


def test_quote_reply_collapses_spaces_elides_the_middle_and_escapes() -> None:
    assert quote_reply("a  b\n c") == "'a b c'"
    long = " ".join(f"w{i}" for i in range(100))
    quoted = quote_reply(long)
    assert len(ast.literal_eval(quoted)) == 80
    assert quoted.startswith("'w0 w1") and quoted.endswith("w98 w99'") and " … " in quoted
    assert len(ast.literal_eval(quote_reply(long, limit=60))) == 60
    assert "\\x1b" in quote_reply("\x1b[31mred") and "\\u202e" in quote_reply("\u202eevil")
    with pytest.raises(InvalidInputError, match="The 'limit' parameter of quote_reply"):
        quote_reply("x", limit=2)


def test_a_list_item_that_opens_with_a_verdict_is_not_the_reply_s_verdict() -> None:
    choices = ("unwanted", "benign", "consistent")
    per_item = "Each sentence:\n1. Unwanted: the date.\n2. Consistent: the name."
    assert read_verdict(per_item, choices=choices) == Reading(None, "no conclusion")
    concluded = per_item + "\n\nFinal classification: Unwanted"
    assert parse_verdict(concluded, choices=choices) == "unwanted"
    steps = "- The reference says 1972.\n- The response says 1972.\n- So the answer is correct."
    assert parse_verdict(steps, choices=QA) == "correct"
