"""Label rules of the ``files`` dataset: thresholds, empty cells, lists, columns, annotators."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from realitycheck.datasets import datasets
from realitycheck.datasets.files import Files
from realitycheck.errors import InvalidInputError


def _jsonl(tmp_path: Path, rows: list[dict], name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _csv(tmp_path: Path, text: str, name: str = "d.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _human(bundle, labeler: str = "human") -> list:
    return [lab.hallucinated for lab in bundle.labels if lab.labeler == labeler]


def _load(path: Path, **params):
    return Files(path=str(path), polarity=params.pop("polarity", "confirmed"), **params).load()


# 1. Numeric threshold with a direction.


def test_threshold_below_and_above_with_ties_faithful(tmp_path):
    rows = [{"text": f"a{i}", "score": s} for i, s in enumerate([0.2, 0.5, 0.75, "0.4"])]
    path = _jsonl(tmp_path, rows)
    assert _human(_load(path, label="score", threshold=0.5, hallucinated_if="below")) == [
        True,
        False,
        False,
        True,
    ]
    assert _human(_load(path, label="score", threshold=0.5, hallucinated_if="above")) == [
        False,
        False,
        True,
        False,
    ]


def test_threshold_from_a_key_on_a_csv(tmp_path):
    path = _csv(tmp_path, "text,factuality_score\nx,0.75\ny,0.25\n")
    key = f"files[path={path},label=factuality_score,threshold=0.5,hallucinated_if=below]"
    bundle = datasets.create_from_key(key).load()
    assert _human(bundle) == [False, True]
    note = next(n for n in bundle.notes if n.startswith("Label mapping of 'factuality_score'"))
    assert ">= 0.5 -> faithful 1" in note and "< 0.5 -> hallucinated 1" in note


# 2. empty_means.


@pytest.mark.parametrize(
    ("empty_means", "expected"),
    [("excluded", None), ("hallucinated", True), ("faithful", False)],
)
def test_empty_means(tmp_path, empty_means, expected):
    path = _jsonl(tmp_path, [{"text": "a", "errors": ""}, {"text": "b", "errors": []}])
    bundle = _load(path, label="errors", list_rule="nonempty", empty_means=empty_means)
    assert _human(bundle) == [expected, expected]
    errors = [lab.error for lab in bundle.labels]
    assert errors == (["empty label cell"] * 2 if expected is None else ["", ""])


# 3. List-valued labels.


def test_list_rules_any_all_nonempty(tmp_path):
    rows = [
        {"text": "a", "lab": ["yes", "no"]},
        {"text": "b", "lab": "['yes','yes']"},
        {"text": "c", "lab": '["no"]'},
        {"text": "d", "lab": "[]"},
    ]
    path = _jsonl(tmp_path, rows)
    assert _human(_load(path, label="lab")) == [True, True, False, None]
    assert _human(_load(path, label="lab", list_rule="all")) == [False, True, False, None]
    assert _human(_load(path, label="lab", list_rule="nonempty", empty_means="faithful")) == [
        True,
        True,
        True,
        False,
    ]


def test_error_spans_nonempty_counts_and_empty_is_no_error(tmp_path):
    path = _csv(
        tmp_path,
        'text,errors\na,"[{""start"": 1, ""end"": 4}]"\nb,[]\nc,"[\'wrong date\']"\n',
    )
    bundle = _load(path, label="errors", list_rule="nonempty", empty_means="faithful")
    assert _human(bundle) == [True, False, True]
    note = next(n for n in bundle.notes if n.startswith("Label mapping of 'errors'"))
    assert "non-empty list -> hallucinated 2" in note and "empty list -> faithful 1" in note


def test_a_list_cell_is_never_evaluated(tmp_path):
    path = _jsonl(tmp_path, [{"text": "a", "lab": "[__import__('os').getcwd()]"}])
    with pytest.raises(InvalidInputError, match=r"cannot be read as JSON or as a Python literal"):
        _load(path, label="lab")


# 4. Several label columns.


def test_combine_any_of_and_all_of(tmp_path):
    rows = [
        {"text": "a", "a": "yes", "b": "no"},
        {"text": "b", "a": "no", "b": "no"},
        {"text": "c", "a": "yes", "b": "yes"},
        {"text": "d", "a": "no", "b": ""},
    ]
    path = _jsonl(tmp_path, rows)
    assert _human(_load(path, label=["a", "b"])) == [True, False, True, None]
    assert _human(_load(path, label=["a", "b"], combine="all_of")) == [False, False, True, False]
    bundle = datasets.create_from_key(f"files[path={path},label=a+b,polarity=confirmed]").load()
    assert bundle.labels[3].error == "no verdict by any_of"
    assert json.loads(bundle.labels[0].raw) == {"a": "yes", "b": "no"}


# 5. Per-annotator columns.


ANNOTATED = [
    {"text": "a", "ann1": "yes", "ann2": "no", "ann3": "yes"},
    {"text": "b", "ann1": "no", "ann2": "no", "ann3": "yes"},
    {"text": "c", "ann1": "yes", "ann2": "no", "ann3": ""},
    {"text": "d", "ann1": "", "ann2": "", "ann3": ""},
]


def test_annotators_become_human_labels_with_a_majority(tmp_path):
    bundle = _load(_jsonl(tmp_path, ANNOTATED), annotators=["ann1", "ann2", "ann3"])
    assert _human(bundle, "human:ann1") == [True, False, True, None]
    assert _human(bundle, "human:ann3") == [True, True, None, None]
    # Row c is a 1-1 tie (ann3 is empty): a tie is hallucinated.
    assert _human(bundle) == [True, False, True, None]
    assert [lab.error for lab in bundle.labels if lab.labeler == "human"][3] == (
        "no annotator verdict"
    )


def test_annotators_worst(tmp_path):
    bundle = _load(
        _jsonl(tmp_path, ANNOTATED), annotators=["ann1", "ann2", "ann3"], aggregate="worst"
    )
    assert _human(bundle) == [True, True, True, None]


def test_annotators_beside_a_label_column_keep_it_as_human(tmp_path):
    rows = [dict(r, gold="no") for r in ANNOTATED]
    bundle = _load(_jsonl(tmp_path, rows), label="gold", annotators=["ann1", "ann2"])
    assert _human(bundle) == [False] * 4
    assert _human(bundle, "human:ann2") == [False, False, False, None]


# 6. Sentence-level labels.


SENTENCES = [
    {"text": "a", "annotation": ["accurate", "major_inaccurate", "accurate"]},
    {"text": "b", "annotation": ["minor_inaccurate", "major_inaccurate", "accurate"]},
    {"text": "c", "annotation": ["accurate", "accurate"]},
]
SENTENCE_VALUES = {
    "positive": ["major_inaccurate", "minor_inaccurate"],
    "negative": ["accurate"],
}


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("strictest", [True, True, False]),
        ("majority", [False, True, False]),
        ("share>=0.3", [True, True, False]),
        ("share>=1", [False, False, False]),
    ],
)
def test_sentence_rules(tmp_path, rule, expected):
    path = _jsonl(tmp_path, SENTENCES)
    bundle = _load(path, sentences="annotation", sentence_rule=rule, **SENTENCE_VALUES)
    assert _human(bundle) == expected


def test_sentence_rule_default_is_strictest_and_counts_items(tmp_path):
    bundle = _load(_jsonl(tmp_path, SENTENCES), sentences="annotation", **SENTENCE_VALUES)
    assert _human(bundle) == [True, True, False]
    note = next(n for n in bundle.notes if n.startswith("Label mapping of 'annotation'"))
    assert "item 'accurate' -> faithful 5" in note
    assert "item 'major_inaccurate' -> hallucinated 2" in note


# 7. Polarity.


FACTUAL = [{"text": f"t{i}", "label": i % 5 != 0} for i in range(10)]
"""``label: true`` means factual here: 8 of 10 responses are correct."""


def test_true_means_factual_loads_right_with_positive_false(tmp_path, caplog):
    path = _jsonl(tmp_path, FACTUAL)
    with caplog.at_level(logging.WARNING):
        bundle = Files(path=str(path), positive="false", negative="true").load()
    assert _human(bundle) == [i % 5 == 0 for i in range(10)]
    assert "Label mapping of 'label': 'true' -> faithful 8, 'false' -> hallucinated 2." in (
        bundle.notes
    )
    assert not any("Warning" in n for n in bundle.notes)
    assert not caplog.records


def test_backwards_polarity_warns_until_confirmed(tmp_path, caplog):
    path = _jsonl(tmp_path, FACTUAL)
    with caplog.at_level(logging.WARNING):
        bundle = Files(path=str(path)).load()
    assert sum(_human(bundle)) == 8
    warning = next(n for n in bundle.notes if n.startswith("Warning"))
    assert "80% of the labelled responses" in warning and "polarity=confirmed" in warning
    assert any("80%" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        confirmed = Files(path=str(path), polarity="confirmed").load()
    assert not any(n.startswith("Warning") for n in confirmed.notes)
    assert not caplog.records


def test_polarity_is_not_part_of_the_key(tmp_path):
    path = _jsonl(tmp_path, FACTUAL)
    assert Files(path=str(path)).key == Files(path=str(path), polarity="confirmed").key


# Malformed label rules and cells: a clear error naming the file, line and field.


THRESHOLD = {"threshold": 0.5, "hallucinated_if": "below"}
BAD_CELLS = [
    # (a good cell, the bad cells, the parameters, the message)
    ("0.1", {"s": "high"}, {"label": "s", **THRESHOLD}, "finite number"),
    ("0.1", {"s": True}, {"label": "s", **THRESHOLD}, "finite number"),
    ("0.1", {"s": "nan"}, {"label": "s", **THRESHOLD}, "finite number"),
    ("0.1", {"s": [0.7, "x"]}, {"label": "s", **THRESHOLD}, "finite number"),
    ("yes", {"s": "maybe"}, {"label": "s"}, "neither positive"),
    ("yes", {"s": "['a', "}, {"label": "s"}, "cannot be read"),
    ("yes", {"s": "[1, 2"}, {"label": "s"}, "cannot be read"),
    ("yes", {"s": "[x for x in y]"}, {"label": "s"}, "cannot be read"),
    ("yes", {"s": "[1] [2]"}, {"label": "s"}, "cannot be read"),
    ("yes", {"s": '{"a": 1}]'}, {"label": "s"}, "cannot be read"),
    ("yes", {"s": ["yes", ""]}, {"label": "s"}, "Item 2 of the list is empty"),
    ("yes", {"s": ["yes", ["no"]]}, {"label": "s"}, "Item 2 of the list must be one value"),
    ("yes", {"s": {"a": ["x"]}}, {"label": "s"}, "Item 1 of the list must be one value"),
    ("yes", {"s": "{'a': 'maybe'}"}, {"label": "s"}, "neither positive"),
    ("yes", {"s": "{'a': 'no'"}, {"label": "s"}, "cannot be read as JSON"),
    ("yes", {"s": "{1, 2}"}, {"label": "s"}, "looks like a table but reads as set"),
    ("yes", {"s": ["perhaps"]}, {"label": "s"}, "neither positive"),
    (["yes"], {"s": "yes"}, {"sentences": "s"}, "list of per-sentence labels"),
    (["yes"], {"s": [{"label": "yes"}]}, {"sentences": "s"}, "must be one value"),
    ("yes", {"s": "yes", "t": "odd"}, {"label": ["s", "t"]}, "neither positive"),
    ("yes", {"s": "yes", "t": "odd"}, {"annotators": ["s", "t"]}, "neither positive"),
]


@pytest.mark.parametrize(("good", "cells", "params", "match"), BAD_CELLS)
def test_a_malformed_cell_names_file_line_and_field(tmp_path, good, cells, params, match):
    rows = [{"text": "ok", **{k: good for k in cells}}, {"text": "bad", **cells}]
    path = _jsonl(tmp_path, rows)
    with pytest.raises(InvalidInputError, match=match) as info:
        _load(path, **params)
    assert info.value.path == str(path)
    assert info.value.line == 2
    assert info.value.field in cells


BAD_PARAMS = [
    ({"label": "s", "threshold": 0.5}, "'hallucinated_if' parameter"),
    ({"label": "s", "hallucinated_if": "below"}, "'threshold' parameter"),
    ({"label": "s", "threshold": 0.5, "hallucinated_if": "under"}, "'hallucinated_if'"),
    ({"label": "s", "threshold": "half", "hallucinated_if": "below"}, "'threshold'"),
    ({"label": "s", "empty_means": "nothing"}, "'empty_means'"),
    ({"label": "s", "list_rule": "some"}, "Did you mean 'nonempty'|'list_rule'"),
    ({"label": "s", "combine": "or"}, "'combine'"),
    ({"sentences": "s", "sentence_rule": "share>=2"}, "'sentence_rule'"),
    ({"sentences": "s", "sentence_rule": "mostly"}, "'sentence_rule'"),
    ({"annotators": ["s", "t"], "aggregate": "mean"}, "'aggregate'"),
    ({"label": "s", "polarity": "sure"}, "'polarity'"),
    ({"label": "s", "annotators": ["s", "t"]}, "'s' is also in 'label'"),
]


@pytest.mark.parametrize(("params", "match"), BAD_PARAMS)
def test_a_bad_label_parameter_is_refused(tmp_path, params, match):
    path = _jsonl(tmp_path, [{"text": "a", "s": "yes", "t": "no"}])
    with pytest.raises(InvalidInputError, match=match):
        Files(path=str(path), **params)


@pytest.mark.parametrize(
    ("params", "column"),
    [
        ({"annotators": ["ann1", "ann9"]}, "ann9"),
        ({"label": ["s", "u"]}, "u"),
        ({"sentences": "z"}, "z"),
    ],
)
def test_a_missing_label_column_is_named(tmp_path, params, column):
    path = _jsonl(tmp_path, [{"text": "a", "ann1": "yes", "s": "no"}])
    with pytest.raises(InvalidInputError, match=f"The column '{column}'") as info:
        Files(path=str(path), **params).load()
    assert info.value.field == column and info.value.path == str(path)


def test_label_noise_reads_the_annotators_of_a_files_dataset(tmp_path):
    from realitycheck import Bootstrap, RunStore, ingest
    from realitycheck.store import RunData
    from realitycheck.studies.label_noise import LabelNoise

    rng = np.random.default_rng(0)
    truth = rng.random(60) < 0.4
    rows = []
    for i, t in enumerate(truth):
        votes = {f"ann{a}": bool(t) != (rng.random() < 0.15) for a in (1, 2, 3)}
        rows.append({"text": f"answer {i}", "question": f"q{i}", **votes})
    path = _jsonl(tmp_path, rows)
    files = Files(path=str(path), annotators=["ann1", "ann2", "ann3"], title="mine")
    store = RunStore(tmp_path / "run")
    ingest(store, files)
    data = RunData(store)
    assert data.annotators_of("mine") == ["human:ann1", "human:ann2", "human:ann3"]
    result = LabelNoise(repetitions=2).run(data, bootstrap=Bootstrap(n_resamples=20))
    assert not any("fewer than two annotators" in s for s in result.skipped)
    reliability = result.table("rater_reliability")
    assert set(reliability["rater"]) == {"human:ann1", "human:ann2", "human:ann3"}


@pytest.mark.parametrize(
    "key",
    [
        "files[path=d.jsonl,sentences=s,sentence_rule=share>=0.3]",
        "files[path=d.jsonl,annotators=a+b+c,aggregate=worst,empty_means=faithful]",
        "files[path=d.jsonl,label=a+b,combine=all_of,list_rule=nonempty]",
        "files[path=d.jsonl,label=s,threshold=0.5,hallucinated_if=above]",
    ],
)
def test_label_rules_round_trip_through_the_key(key):
    made = datasets.create_from_key(key)
    assert datasets.create_from_key(made.key) == made
    assert made.key.count(",") == key.count(",")


def test_annotators_by_dawid_skene_match_the_analysis_fit(tmp_path):
    from realitycheck.analysis import dawid_skene

    rng = np.random.default_rng(1)
    truth = rng.random(80) < 0.35
    accuracy = {"ann1": 0.95, "ann2": 0.7, "ann3": 0.65}
    rows = []
    for i, t in enumerate(truth):
        votes = {a: ("yes" if bool(t) != (rng.random() > p) else "no") for a, p in accuracy.items()}
        if i % 7 == 0:
            votes["ann3"] = ""
        rows.append({"text": f"answer {i}", **votes})
    bundle = _load(_jsonl(tmp_path, rows), annotators=list(accuracy), aggregate="dawid_skene")
    matrix = np.array(
        [[np.nan if lab.hallucinated is None else float(lab.hallucinated) for lab in col]
         for col in ([x for x in bundle.labels if x.labeler == f"human:{a}"] for a in accuracy)]
    ).T  # fmt: skip
    fit = dawid_skene(matrix)
    human = [x for x in bundle.labels if x.labeler == "human"]
    assert [x.score for x in human] == pytest.approx(fit.posterior.tolist())
    assert [x.hallucinated for x in human] == [bool(p >= 0.5) for p in fit.posterior]
    majority = _human(_load(_jsonl(tmp_path, rows), annotators=list(accuracy)))
    assert majority != [x.hallucinated for x in human]  # the reliable annotator weighs more
    assert any(n.startswith("human = Dawid-Skene over 3 annotators") for n in bundle.notes)


@pytest.mark.parametrize(
    ("values", "yes", "no"),
    [((True, False), "true", "false"), (("yes", "no"), "yes", "no"), ((1, 0), "1", "0")],
)
def test_default_mapping_of_a_boolean_column_warns_below_half(tmp_path, caplog, values, yes, no):
    # factool's knowledge_qa: 46% true, where true means factual.
    rows = [{"text": f"t{i}", "label": values[0] if i < 46 else values[1]} for i in range(100)]
    path = _jsonl(tmp_path, rows)
    with caplog.at_level(logging.WARNING):
        bundle = Files(path=str(path)).load()
    assert sum(_human(bundle)) == 46
    warning = next(n for n in bundle.notes if n.startswith("Warning"))
    assert f"{yes!r} -> hallucinated, {no!r} -> faithful" in warning
    assert f"positive={no},negative={yes}" in warning and "46%" in warning
    assert any("default mapping" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "params",
    [
        {"positive": "false", "negative": "true"},
        {"positive": "true", "negative": "false"},
        {"polarity": "confirmed"},
    ],
)
def test_a_chosen_mapping_of_a_boolean_column_does_not_warn(tmp_path, caplog, params):
    rows = [{"text": f"t{i}", "label": i < 5} for i in range(10)]
    with caplog.at_level(logging.WARNING):
        bundle = Files(path=str(_jsonl(tmp_path, rows)), **params).load()
    assert not any(n.startswith("Warning") for n in bundle.notes)
    assert not caplog.records


def test_default_mapping_of_words_does_not_warn(tmp_path, caplog):
    rows = [{"text": f"t{i}", "label": "hallucinated" if i < 3 else "faithful"} for i in range(9)]
    with caplog.at_level(logging.WARNING):
        bundle = Files(path=str(_jsonl(tmp_path, rows))).load()
    assert not any(n.startswith("Warning") for n in bundle.notes)
