"""annotate export: seeded choices, blinded files, safe cells, a manifest without time."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import pytest

from realitycheck.annotation import (
    VERDICT_CHOICES,
    Selection,
    choose,
    export_items,
    item_id,
    labeling_config,
)
from realitycheck.errors import InvalidInputError
from realitycheck.store import RunData, RunStore


def _verdicts(run, keys):
    return RunData(RunStore(run)).verdicts()[list(keys)]


def test_disagreement_chooses_only_responses_the_labelers_disagree_on(quiz_run):
    keys = ("exact_match", "rouge_l", "token_f1")
    choice = choose(RunData(RunStore(quiz_run)), Selection(labelers=keys, n=None))
    v = _verdicts(quiz_run, keys)
    disputed = {rid for rid, row in v.iterrows() if row.nunique() > 1}
    assert set(choice.response_ids) == disputed
    assert choice.candidates == len(disputed) >= 3


def test_disagreement_takes_patterns_in_turn(quiz_run):
    keys = ("exact_match", "rouge_l", "token_f1")
    data = RunData(RunStore(quiz_run))
    sizes = choose(data, Selection(labelers=keys, n=None)).counts()
    assert len(sizes) >= 2
    for n in range(1, sum(sizes.values()) + 1):
        counts = choose(data, Selection(labelers=keys, n=n, seed=n)).counts()
        assert sum(counts.values()) == n
        for p in sizes:
            for q in sizes:
                # a pattern falls more than one behind another only when it has run out
                if counts.get(p, 0) < counts.get(q, 0) - 1:
                    assert counts.get(p, 0) == sizes[p], (n, p, q, counts)


@pytest.mark.parametrize("strategy", ["disagreement", "stratified", "random"])
def test_a_seed_gives_one_choice_and_another_seed_another(quiz_run, strategy):
    data = RunData(RunStore(quiz_run))
    settings = {"strategy": strategy, "labelers": ("exact_match", "rouge_l"), "n": 5}
    first = choose(data, Selection(seed=3, **settings))
    again = choose(data, Selection(seed=3, **settings))
    other = [choose(data, Selection(seed=s, **settings)).response_ids for s in range(4, 9)]
    assert first.response_ids == again.response_ids
    assert any(ids != first.response_ids for ids in other)


def test_stratified_by_model_and_by_label_balance_the_strata(quiz_run):
    data = RunData(RunStore(quiz_run))
    by_model = choose(data, Selection(strategy="stratified", by="model", n=6, seed=1))
    assert by_model.counts() == {"model=model-a": 3, "model=model-b": 3}
    models = data.frame().loc[list(by_model.response_ids), "model"]
    assert Counter(models) == {"model-a": 3, "model-b": 3}
    by_label = choose(data, Selection(strategy="stratified", by="label:rouge_l", n=4))
    v = data.verdicts()["rouge_l"].loc[list(by_label.response_ids)]
    assert Counter(v) == {0.0: 2, 1.0: 2}


def test_stratified_by_length_uses_quantile_bins(sizes_run):
    run, _ = sizes_run
    data = RunData(RunStore(run))
    choice = choose(data, Selection(strategy="stratified", by="length", bins=3, n=9))
    words = data.frame()["length_words"]
    edges = np.quantile(words, [0, 1 / 3, 2 / 3, 1])
    assert len(choice.counts()) >= 2
    for group, count in choice.counts().items():
        assert group.startswith("length ") and group.endswith(" words")
        assert count >= 2
    assert words.loc[list(choice.response_ids)].between(edges[0], edges[-1]).all()


def test_random_chooses_n_distinct_responses_of_the_run(quiz_run):
    data = RunData(RunStore(quiz_run))
    choice = choose(data, Selection(strategy="random", n=7, seed=11))
    assert len(set(choice.response_ids)) == 7
    assert set(choice.response_ids) <= set(data.frame().index)


def _export(run, out, **options):
    selection = Selection(labelers=("exact_match", "rouge_l"), n=6, **options)
    return export_items(RunStore(run), out, selection, annotators=2)


def test_exporting_twice_writes_the_same_bytes_and_one_round(quiz_run, tmp_path):
    one = _export(quiz_run, tmp_path / "a")
    two = _export(quiz_run, tmp_path / "b")
    assert one.round_id == two.round_id
    for f in one.files:
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
    manifest = json.loads((tmp_path / "a" / "annotation.json").read_text())
    assert {"created", "updated", "time", "timestamp"}.isdisjoint(manifest)
    assert manifest["round"] == one.round_id and manifest["seed"] == 0 and manifest["n"] == 6
    assert manifest["labelers"] == ["exact_match", "rouge_l"]
    assert manifest["label_studio"] == {"maximum_annotations": 2}
    ids = [i["response_id"] for i in manifest["items"]]
    assert [i["item_id"] for i in manifest["items"]] == [item_id(r) for r in ids]
    run_manifest = RunStore(quiz_run).read_manifest()
    recorded = run_manifest["config"]["annotation"]["rounds"][one.round_id]
    assert recorded["response_ids"] == ids and recorded["strategy"] == "disagreement"


def test_another_seed_is_another_round_of_the_same_items(quiz_run, tmp_path):
    one, two = _export(quiz_run, tmp_path / "a"), _export(quiz_run, tmp_path / "b", seed=1)
    assert one.round_id != two.round_id
    assert set(one.choice.response_ids) == set(two.choice.response_ids)  # all 6 disputed
    rounds = RunStore(quiz_run).read_manifest()["config"]["annotation"]["rounds"]
    assert set(rounds) == {one.round_id, two.round_id}


def _texts(folder):
    return {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()}


def test_annotators_are_blinded_unless_verdicts_are_shown(quiz_run, tmp_path):
    _export(quiz_run, tmp_path / "blind")
    for name, text in _texts(tmp_path / "blind").items():
        if name == "annotation.json":
            continue  # the manifest names the labelers that chose, for the record
        for word in ("exact_match", "rouge_l", "hallucinated", "verdicts"):
            assert word not in text, (name, word)
    shown = export_items(
        RunStore(quiz_run),
        tmp_path / "shown",
        Selection(labelers=("exact_match", "rouge_l"), n=6),
        show_verdicts=True,
    )
    tasks = json.loads((shown.folder / "tasks.json").read_text())
    assert all(
        t["data"]["verdicts"] == "exact_match: hallucinated; rouge_l: faithful" for t in tasks
    )
    assert 'value="$verdicts"' in (shown.folder / "label_config.xml").read_text()
    with (shown.folder / "items.csv").open(newline="") as f:
        assert {row["verdicts"] for row in csv.DictReader(f)} == {
            "exact_match: hallucinated; rouge_l: faithful"
        }


HOSTILE = "quiz/q5/model-b"  # =HYPERLINK(...) with ESC and U+202E in fixtures/answers.jsonl


def test_a_hostile_response_reaches_no_file_raw(quiz_run, tmp_path):
    tmp_path = tmp_path / "out"
    report = _export(quiz_run, tmp_path)
    assert HOSTILE in report.choice.response_ids
    original = RunData(RunStore(quiz_run)).frame().loc[HOSTILE, "text"]
    assert original.startswith("=HYPERLINK(") and "\x1b" in original and "\u202e" in original
    for name, text in _texts(tmp_path).items():
        assert "\x1b" not in text and "\u202e" not in text, name
    with (tmp_path / "items.csv").open(newline="", encoding="utf-8") as f:
        cells = [row["response"] for row in csv.DictReader(f) if row["response_id"] == HOSTILE]
    assert len(cells) == 2  # one row per annotator slot
    assert cells[0].startswith("'=HYPERLINK(") and "[U+001B]" in cells[0] and "[U+202E]" in cells[0]
    lines = (tmp_path / "items.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert {r["response"] for r in rows if r["response_id"] == HOSTILE} == {original}
    tasks = json.loads((tmp_path / "tasks.json").read_text(encoding="utf-8"))
    assert {t["data"]["response"] for t in tasks if t["data"]["response_id"] == HOSTILE} == {
        original
    }


def test_plain_files_hold_one_row_per_item_and_slot(quiz_run, tmp_path):
    tmp_path = tmp_path / "out"
    report = export_items(
        RunStore(quiz_run),
        tmp_path,
        Selection(labelers=("exact_match", "rouge_l"), n=4),
        formats=["csv"],
        annotators=3,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["annotation.json", "items.csv"]
    with (tmp_path / "items.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 12
    assert Counter(r["slot"] for r in rows) == {"1": 4, "2": 4, "3": 4}
    assert {r["response_id"] for r in rows} == set(report.choice.response_ids)
    assert {(r["annotator"], r["verdict"], r["note"]) for r in rows} == {("", "", "")}
    assert list(rows[0])[:8] == [
        "item_id",
        "response_id",
        "round",
        "slot",
        "question",
        "references",
        "context",
        "response",
    ]


def test_the_labeling_configuration_is_xml_with_the_verdict_choices_and_escaped_text():
    hostile = "Read <b>carefully</b> & \"judge\" 'only' the response]]>"
    root = ET.fromstring(labeling_config(instructions=hostile))
    assert root.tag == "View"
    assert root[0].get("value") == hostile
    choices = root.find("Choices")
    assert choices.get("name") == "verdict" and choices.get("toName") == "response"
    assert [c.get("value") for c in choices] == list(VERDICT_CHOICES)
    texts = {t.get("name"): t.get("value") for t in root.iter("Text")}
    assert texts == {k: f"${k}" for k in ("question", "references", "context", "response")}
    assert not list(root.iter("HyperText"))


def test_unknown_labeler_is_named_with_a_close_match(quiz_run, tmp_path):
    with pytest.raises(InvalidInputError, match=r"no labeler 'rouge'\. Did you mean 'rouge_l'\?"):
        export_items(RunStore(quiz_run), tmp_path, Selection(labelers=("rouge", "exact_match")))
    assert not (tmp_path / "annotation.json").exists()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"labelers": ("rouge_l",)}, r"must name at least two labelers for strategy=disagreement"),
        ({"n": 0}, r"The 'n' parameter of annotate export must be an int >= 1 or None. Got 0"),
        ({"strategy": "smart"}, r"The 'strategy' parameter of annotate export must be one of"),
        ({"strategy": "stratified", "by": "colour"}, r"'by' parameter .* must be one of dataset"),
        ({"seed": -1}, r"The 'seed' parameter of annotate export must be an int"),
    ],
)
def test_bad_selection_settings_fail_in_one_message_shape(settings, message):
    full = {"labelers": ("exact_match", "rouge_l")} | settings
    with pytest.raises(InvalidInputError, match=message):
        Selection(**full)


def test_escalate_needs_an_imported_round(quiz_run, tmp_path):
    with pytest.raises(InvalidInputError, match=r"has 0 annotator\(s\).*Import a first round"):
        export_items(RunStore(quiz_run), tmp_path, Selection(escalate=True, n=None))
