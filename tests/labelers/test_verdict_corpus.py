"""The verdict parser against a corpus of judge replies in the styles real models write.

``verdict_corpus.jsonl`` holds replies written for this project, one JSON object a
line: ``text``, ``choices``, ``field``, ``letters``, ``truncated``, ``expected``
(the verdict, or ``null`` where the reply concludes with none) and ``style``.
Every reply must read as expected; the summary test counts the two errors
that poison a judge's numbers: an *invented* verdict (expected none, got one)
and a *flip* (expected one verdict, got another). A further set of replies is
built from templates, every choice of every judge in every style.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from realitycheck.verdicts import read_verdict

CORPUS = Path(__file__).with_name("verdict_corpus.jsonl")
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line
]
STYLES = {
    "json", "fenced_json", "json_in_prose", "json_truncated", "cot_line", "markdown",
    "negation", "hedge", "refusal", "two_verdicts", "truncated", "other_punct",
    "cot_other_verdict", "bare", "first_line", "random_tokens",
}  # fmt: skip


def _read(row: dict[str, Any]) -> str | None:
    return read_verdict(
        row["text"],
        choices=row["choices"],
        field=row["field"],
        letters=row["letters"],
        truncated=row["truncated"],
    ).verdict


def test_the_corpus_is_large_varied_and_well_formed() -> None:
    assert len(ROWS) >= 300
    assert {row["style"] for row in ROWS} == STYLES
    styles = Counter(row["style"] for row in ROWS)
    assert min(styles.values()) >= 3, styles
    texts = [(row["text"], tuple(row["choices"]), row["truncated"]) for row in ROWS]
    assert len(set(texts)) == len(texts), "a reply is listed twice"
    for row in ROWS:
        assert set(row) == {"text", "choices", "field", "letters", "truncated", "expected", "style"}
        assert row["expected"] is None or row["expected"] in row["choices"]
    # Both outcomes are well represented, and so are cut-off replies.
    assert sum(row["expected"] is None for row in ROWS) >= 100
    assert sum(row["expected"] is not None for row in ROWS) >= 150
    assert sum(row["truncated"] for row in ROWS) >= 25


def test_the_issue_replies_are_in_the_corpus() -> None:
    texts = {row["text"]: row for row in ROWS}
    for text in (
        "The proposed answer is not correct.",
        "This is not correct; the reference says 1972.",
        "I cannot say whether it is correct.",
    ):
        assert texts[text]["expected"] is None
    assert any("correct?" in row["text"] and row["style"] == "random_tokens" for row in ROWS)
    assert any(
        row["truncated"] and "consistent" in row["text"] and row["expected"] is None for row in ROWS
    )


def test_the_review_findings_are_in_the_corpus() -> None:
    """The replies a review found flipped or invented stay in the corpus with no verdict."""
    texts = {(row["text"], row["truncated"]): row for row in ROWS}
    for text in (
        "Correct: no",
        "Correct: false",
        "The reference answer is correct, but the proposed answer is wrong.",
        "Only 1972 would be correct.",
        "The proposed answer fails to be correct.",
        "The response claims to be correct.",
        "The answer needs to mention 1972 to be correct.",
        "The answer is incorrectly labeled as correct.",
        "The user says the answer is correct.",
        "Verdict: correct.\n\nActually no, on reflection the answer is incorrect.",
        "Correct\n\nWait, no — the proposed answer is not correct.",
        "No. Wait, actually yes.",
        '{"verdict":"incorrect"}\nActually, correct.',
    ):
        assert texts[(text, False)]["expected"] is None, text
    for text in ("Yes. The", "Yes. The sample says the same thing as the"):
        assert texts[(text, True)]["expected"] == "yes"


@pytest.mark.parametrize("row", ROWS, ids=[f"{i + 1}-{row['style']}" for i, row in enumerate(ROWS)])
def test_every_corpus_reply_reads_as_expected(row: dict[str, Any]) -> None:
    assert _read(row) == row["expected"], row["text"]


def _summary(rows: list[dict[str, Any]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for row in rows:
        got, expected = _read(row), row["expected"]
        if got == expected:
            counts["right"] += 1
        elif expected is None:
            counts["invented"] += 1
        elif got is None:
            counts["missed"] += 1
        else:
            counts["flipped"] += 1
    return counts


def test_the_corpus_has_no_invented_verdict_and_no_flip() -> None:
    counts = _summary(ROWS)
    assert counts["invented"] == 0
    assert counts["flipped"] == 0
    assert counts["right"] == len(ROWS)


# -- replies built from templates: every choice, every style ------------------

JUDGES = {
    "qa_judge": (("incorrect", "refuse", "correct"), "verdict"),
    "faithfulness": (("unsupported", "supported"), "verdict"),
    "faithjudge": (("unwanted", "benign", "consistent"), "verdict"),
    "summary": (("inconsistent", "consistent"), "verdict"),
    "yes_no": (("yes", "no"), "answer"),
    "graded": (("partially correct", "correct", "incorrect"), "verdict"),
}
CONCLUDES = [
    '{{"reason": "Checked against the source.", "{field}": "{x}"}}',
    'Reasoning first.\n```json\n{{"{field}": "{X}", "reason": "see above"}}\n```',
    'My evaluation is {{"reason": "short", "{field}": "{x}"}} as requested.',
    "Step one compares the facts. Step two weighs them.\nFinal classification: {X}",
    "The two agree on every detail.\n\n**Verdict:** {x}",
    "Comparing both texts line by line.\nTherefore, {x}.",
    "Comparing both texts line by line.\nFinal answer — {X}",
    "{X}. The rest of this reply explains why.",
    "Some thoughts about the case.\n\n{X}",
    "Reasoning.\nVerdict：「{x}」。",
    "Reasoning.\nVerdict : « {X} »",
    "`{x}`",
]
NOTHING = [
    "The reply is not {x}.",
    "It isn't {x}.",
    "I cannot say whether it is {x}.",
    "It is probably {x}.",
    "Verdict: not {x}",
    "Verdict: {x}?",
    "Whether it is {x} depends on the reading.",
    "Reasoning mentions {x} once in passing and then stops because",
]


def _template_rows() -> list[dict[str, Any]]:
    rows = []
    for judge, (choices, field) in JUDGES.items():
        for x in choices:
            for k, template in enumerate(CONCLUDES):
                text = template.format(x=x, X=x.upper(), field=field)
                rows.append(
                    {"id": f"{judge}-{x}-c{k}", "text": text, "choices": list(choices),
                     "field": field, "letters": False, "truncated": False, "expected": x}
                )  # fmt: skip
                # The other verdict named (negated) in the reasoning does not flip it.
                for other in choices:
                    if other == x:
                        continue
                    rows.append(
                        {"id": f"{judge}-{x}-c{k}-not-{other}",
                         "text": f"At first sight it is {other}, but no: it is not {other}.\n"
                                 + text,
                         "choices": list(choices), "field": field, "letters": False,
                         "truncated": False, "expected": x}
                    )  # fmt: skip
            for k, template in enumerate(NOTHING):
                rows.append(
                    {"id": f"{judge}-{x}-n{k}", "text": template.format(x=x),
                     "choices": list(choices), "field": field, "letters": False,
                     "truncated": k == len(NOTHING) - 1, "expected": None}
                )  # fmt: skip
            # Two different verdicts concluded: none.
            for other in choices:
                if other != x:
                    rows.append(
                        {"id": f"{judge}-{x}-and-{other}",
                         "text": f"Reasoning.\nVerdict: {x}\nVerdict: {other}",
                         "choices": list(choices), "field": field, "letters": False,
                         "truncated": False, "expected": None}
                    )  # fmt: skip
    letters = ["D", "B", "A", "C", "E"]
    for x in letters:
        for k, text in enumerate(
            [f"({x})", f"**{x}**", f"Reasoning.\nAnswer: {x}", f'{{"choice": "{x.lower()}"}}',
             f"Reasoning.\n**Choice:** ({x})", f"Reasoning.\nThe answer is ({x})."]
        ):  # fmt: skip
            rows.append(
                {"id": f"letters-{x}-{k}", "text": text, "choices": letters, "field": "choice",
                 "letters": True, "truncated": False, "expected": x}
            )  # fmt: skip
        rows.append(
            {"id": f"letters-{x}-prose", "text": f"We go with plan {x}.\nPlan {x}.",
             "choices": letters, "field": "choice", "letters": True, "truncated": False,
             "expected": None}
        )  # fmt: skip
    return rows


TEMPLATE_ROWS = _template_rows()


def test_template_replies_read_as_expected() -> None:
    wrong = [
        (row["id"], row["text"], _read(row))
        for row in TEMPLATE_ROWS
        if _read(row) != row["expected"]
    ]
    assert len(TEMPLATE_ROWS) > 500
    assert wrong == []
    counts = _summary(TEMPLATE_ROWS)
    assert counts["invented"] == counts["flipped"] == 0
