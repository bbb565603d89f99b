"""Ambiguity over retrieved documents, from the passage ids generation stores in each meta."""

import json

import pandas as pd

from realitycheck.studies import retrieval_ambiguity, retrieval_changes, retrieved_ids


def _frame(rows):
    return pd.DataFrame(
        [
            {"model": m, "example_id": e, "prompt_variant": v, "meta": json.dumps(meta)}
            for m, e, v, meta in rows
        ]
    )


def test_a_question_is_ambiguous_when_its_passage_sets_differ_across_variants():
    frame = _frame(
        [
            ("m1", "q1", "zero_shot", {"passages": ["a", "b"]}),
            ("m1", "q1", "zero_shot@2", {"passages": ["b", "a"]}),  # same set, other order
            ("m1", "q2", "zero_shot", {"passages": ["a"]}),
            ("m1", "q2", "zero_shot@2", {"passages": ["c"]}),
            ("m1", "q2", "zero_shot@3", {"passages": ["a"]}),
            ("m1", "q3", "zero_shot", {"passages": []}),
            ("m1", "q3", "zero_shot@2", {"passages": ["d"]}),
            ("m1", "q4", "zero_shot", {"passages": ["a"]}),  # one variant only: left out
            ("m1", "q5", "zero_shot", {"demos": ["x"]}),  # no retrieval: left out
            ("m1", "q5", "zero_shot@2", {}),
            ("m2", "q1", "zero_shot", {"passages": ["a"]}),
            ("m2", "q1", "zero_shot@2", {"passages": ["a"]}),
        ]
    )
    changes = retrieval_changes(frame)
    assert changes[
        ["model", "example_id", "n_variants", "n_distinct", "changed"]
    ].values.tolist() == [
        ["m1", "q1", 2, 1, False],
        ["m1", "q2", 3, 2, True],
        ["m1", "q3", 2, 2, True],
        ["m2", "q1", 2, 1, False],
    ]
    table = retrieval_ambiguity(frame).set_index("model")
    assert table.loc["m1", ["n_questions", "n_changed"]].tolist() == [3, 2]
    assert table.loc["m1", "ambiguity"] == 2 / 3 and table.loc["m2", "ambiguity"] == 0.0


def test_ids_come_from_meta_text_or_mappings_and_nothing_without_retrieval():
    assert retrieved_ids('{"passages": ["a", 3]}') == frozenset({"a", "3"})
    assert retrieved_ids({"passages": []}) == frozenset()
    assert retrieved_ids("{}") is None and retrieved_ids("not json") is None
    assert retrieval_changes(_frame([("m", "q", "v", {})])).empty
