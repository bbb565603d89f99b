"""annotate import: labels per annotator, the aggregate, idempotence, rounds, refusals."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from realitycheck.annotation import (
    AGGREGATES,
    RESULT_KEY,
    Selection,
    export_items,
    import_annotations,
    item_id,
)
from realitycheck.errors import InvalidInputError
from realitycheck.store import RunStore, load_results

FIXTURES = Path(__file__).parent / "fixtures"

PAIRS = ("exact_match", "rouge_l")


def fill_csv(source, target, verdict_of):
    """Fill an exported items.csv: ``verdict_of(row)`` gives (annotator, verdict) per row."""
    with source.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["annotator"], row["verdict"] = verdict_of(row)
    with target.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return target


def _labels(run):
    frame = RunStore(run).frame("labels")
    return frame[frame["labeler"].str.startswith("human")]


def _verdicts(run, key):
    frame = _labels(run)
    rows = frame[frame["labeler"] == key]
    return dict(zip(rows["response_id"], rows["hallucinated"], strict=True))


def _round_one(run, tmp_path, verdict_of):
    """Export the 6 disputed quiz items for 2 annotators; fill the sheet with ``verdict_of``."""

    export_items(RunStore(run), tmp_path / "r1", Selection(labelers=PAIRS, n=6), annotators=2)
    return fill_csv(tmp_path / "r1" / "items.csv", tmp_path / "r1" / "filled.csv", verdict_of)


def _alice_and_bob(row):
    """Alice says hallucinated on q1/q2/q5; Bob agrees except on q1 (and can't tell on q4)."""
    qid = row["response_id"].split("/")[1]
    if row["slot"] == "1":
        return "alice", "Hallucinated" if qid in ("q1", "q2", "q5") else "Faithful"
    verdict = {"q1": "faithful", "q4": "Can't tell"}.get(qid)
    return "bob", verdict or ("HALLUCINATED" if qid in ("q2", "q5") else "Faithful")


def test_a_filled_sheet_becomes_labels_per_annotator_and_a_majority(quiz_run, tmp_path):
    sheet = _round_one(quiz_run, tmp_path, _alice_and_bob)
    report = import_annotations(RunStore(quiz_run), [sheet])
    alice, bob, human = (_verdicts(quiz_run, k) for k in ("human:alice", "human:bob", "human"))
    assert len(alice) == len(bob) == len(human) == 6
    q = {rid.split("/")[1] + rid[-1]: rid for rid in human}  # q1a, q5b, …
    assert alice[q["q1a"]] is True and bob[q["q1a"]] is False
    assert human[q["q1a"]] is True  # a tie is hallucinated, as the files dataset's majority
    assert bob[q["q4a"]] is None and human[q["q4a"]] is False  # can't tell: Alice alone
    assert human[q["q5b"]] is True and human[q["q6b"]] is False
    labels = _labels(quiz_run).set_index(["response_id", "labeler"])
    cant = labels.loc[(q["q4a"], "human:bob")]
    assert cant["category"] == "cant_tell" and cant["error"] == "the annotator could not tell"
    spec = json.loads(labels.loc[(q["q1a"], "human:alice"), "spec"])
    assert spec["name"] == "annotation_import" and spec["params"]["file"] == "filled.csv"
    assert spec["params"]["sha256"] == report.files[0].sha256
    assert report.added == 18 and report.changed == report.unchanged == 0
    assert report.counts == {"hallucinated": 4, "faithful": 2, "no verdict": 0}
    measures = report.agreement.measures.set_index("measure")["value"]
    assert -1 <= measures["krippendorff_alpha"] <= 1
    assert set(report.agreement.annotators["annotator"]) == {"alice", "bob"}


def test_importing_the_same_file_again_changes_nothing(quiz_run, tmp_path):
    sheet = _round_one(quiz_run, tmp_path, _alice_and_bob)
    import_annotations(RunStore(quiz_run), [sheet])
    before = RunStore(quiz_run).frame("labels").sort_values(["response_id", "labeler"])
    again = import_annotations(RunStore(quiz_run), [sheet])
    after = RunStore(quiz_run).frame("labels").sort_values(["response_id", "labeler"])
    assert (again.added, again.changed, again.unchanged) == (0, 0, 18)
    assert before.reset_index(drop=True).equals(after.reset_index(drop=True))
    rows = RunStore(quiz_run).arrow("labels")
    keys = list(zip(rows["response_id"].to_pylist(), rows["labeler"].to_pylist(), strict=True))
    assert len(keys) == len(set(keys))


def test_a_second_round_on_disputed_items_adds_annotators_and_redoes_the_aggregate(
    quiz_run, tmp_path
):
    store = RunStore(quiz_run)
    import_annotations(store, [_round_one(quiz_run, tmp_path, _alice_and_bob)])
    alice, bob = _verdicts(quiz_run, "human:alice"), _verdicts(quiz_run, "human:bob")
    disputed = {r for r in alice if bob[r] is not None and bob[r] != alice[r]}
    second = export_items(store, tmp_path / "r2", Selection(escalate=True, n=None), annotators=2)
    assert set(second.choice.response_ids) == disputed == {"quiz/q1/model-a"}

    def carol_and_dave(row):
        return ("carol", "Faithful") if row["slot"] == "1" else ("dave", "Faithful")

    sheet = fill_csv(tmp_path / "r2" / "items.csv", tmp_path / "r2" / "filled.csv", carol_and_dave)
    report = import_annotations(store, [sheet])
    assert report.annotators == ["alice", "bob", "carol", "dave"]
    assert (report.added, report.changed, report.unchanged) == (2, 1, 5)  # human of q1a
    assert _verdicts(quiz_run, "human")["quiz/q1/model-a"] is False  # 3 faithful to 1
    assert len(_verdicts(quiz_run, "human:alice")) == 6  # round one is kept


def _simulated(truth, flips):
    """Annotators who see the truth, each flipping the items of ``flips[name]`` (qid sets)."""

    def verdict_of(row):
        slot = int(row["slot"]) - 1
        name = sorted(flips)[slot]
        qid = row["response_id"].split("/")[1]
        says = truth[qid] != (qid in flips[name])
        return name, "Hallucinated" if says else "Faithful"

    return verdict_of


def _four_annotators(sizes_run, tmp_path, aggregate="majority", **options):
    run, truth = sizes_run
    rng = np.random.default_rng(5)
    qids = sorted(truth)
    flips = {
        "ann": set(rng.choice(qids, 3, replace=False)),
        "bea": set(rng.choice(qids, 3, replace=False)),
        "cem": set(rng.choice(qids, 4, replace=False)),
        "zed": set(rng.choice(qids, 30, replace=False)),  # right half of the time
    }
    selection = Selection(strategy="random", n=60, seed=2)
    export_items(RunStore(run), tmp_path / "r", selection, annotators=4, formats=["jsonl"])
    rows = [json.loads(line) for line in (tmp_path / "r" / "items.jsonl").read_text().splitlines()]
    fill = _simulated(truth, flips)
    for row in rows:
        row["annotator"], row["verdict"] = fill({**row, "slot": str(row["slot"])})
    path = tmp_path / "r" / "filled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = import_annotations(RunStore(run), [path], aggregate=aggregate, **options)
    return run, truth, report


def test_dawid_skene_drops_the_weakest_annotator(sizes_run, tmp_path):
    run, truth, report = _four_annotators(sizes_run, tmp_path, drop_weakest=1)
    assert report.dropped == ["zed"]
    table = report.agreement.annotators.set_index("annotator")
    assert table["ds_reliability"].idxmin() == "zed" and table.loc["zed", "dropped"]
    human = _verdicts(run, "human")
    right = np.mean([human[f"sizes/q{i}/{m}"] == truth[f"q{i}"] for i, m in _ids(truth)])
    assert right >= 0.95
    spec = json.loads(_labels(run).query("labeler == 'human'")["spec"].iloc[0])
    assert spec["params"]["dropped"] == ["zed"]
    recorded = RunStore(run).read_manifest()["config"]["annotation"]["aggregate"]
    assert recorded["annotators"] == ["ann", "bea", "cem"] and recorded["dropped"] == ["zed"]


def _ids(truth):
    return [(int(q[1:]), "model-a" if int(q[1:]) % 2 else "model-b") for q in truth]


def test_a_reliability_threshold_drops_the_same_annotator(sizes_run, tmp_path):
    _, _, report = _four_annotators(sizes_run, tmp_path, min_reliability=0.7)
    assert report.dropped == ["zed"]


@pytest.mark.parametrize("aggregate", AGGREGATES)
def test_each_aggregate_rule_gives_a_verdict_per_item(sizes_run, tmp_path, aggregate):
    run, truth, report = _four_annotators(sizes_run, tmp_path, aggregate=aggregate)
    human = _labels(run).query("labeler == 'human'")
    assert len(human) == 60 and human["hallucinated"].notna().all()
    if aggregate == "dawid_skene":
        assert human["score"].between(0, 1).all()
        assert ((human["score"] >= 0.5) == human["hallucinated"].astype(bool)).all()
    if aggregate == "worst":
        votes = _labels(run)[_labels(run)["labeler"].str.startswith("human:")]
        anyone = votes.groupby("response_id")["hallucinated"].any()
        assert (human.set_index("response_id")["hallucinated"] == anyone).all()
    assert report.counts["no verdict"] == 0


def test_dropping_everyone_is_refused(sizes_run, tmp_path):
    with pytest.raises(InvalidInputError, match=r"Dropping 4 of 4 annotators leaves none"):
        _four_annotators(sizes_run, tmp_path, drop_weakest=4)


def _rewrite(path, change):
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    change(rows)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_items_not_of_this_run_are_refused_or_skipped_loudly(quiz_run, tmp_path):
    sheet = _round_one(quiz_run, tmp_path, _alice_and_bob)

    def foreign(rows):
        rows[0]["response_id"], rows[0]["item_id"] = "other/q9/model-z", item_id("other/q9/model-z")

    _rewrite(sheet, foreign)
    with pytest.raises(
        InvalidInputError,
        match=r"1 annotation\(s\) are not items exported .*"
        r"filled\.csv, line 2: response 'other/q9/model-z' is not in this run",
    ):
        import_annotations(RunStore(quiz_run), [sheet])
    assert _labels(quiz_run).empty
    report = import_annotations(RunStore(quiz_run), [sheet], skip_unknown=True)
    assert report.foreign == 1 and report.files[0].annotations == 11


def test_a_round_of_another_run_is_refused(quiz_run, tmp_path):
    sheet = _round_one(quiz_run, tmp_path, _alice_and_bob)
    _rewrite(sheet, lambda rows: rows[3].update(round="r000000000000"))
    with pytest.raises(InvalidInputError, match=r"line 5: round 'r000000000000' was not exported"):
        import_annotations(RunStore(quiz_run), [sheet])


def test_an_item_id_that_does_not_match_its_response_is_refused(quiz_run, tmp_path):
    sheet = _round_one(quiz_run, tmp_path, _alice_and_bob)
    _rewrite(sheet, lambda rows: rows[1].update(item_id="i0000000000000000"))
    with pytest.raises(
        InvalidInputError, match=r"filled\.csv, line 3, field 'item_id'.*changed after"
    ):
        import_annotations(RunStore(quiz_run), [sheet])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda rows: rows[2].update(verdict="maybe"),
            r"line 4, field 'verdict': The verdict must",
        ),
        (lambda rows: rows[0].update(annotator=""), r"line 2, field 'annotator': .*no annotator"),
        (lambda rows: rows[0].update(annotator="eve,admin"), r"line 2, field 'annotator'"),
        (
            lambda rows: rows[6].update(annotator="alice", verdict="Faithful"),
            r"line 8, field 'verdict': 'alice' gives this item .* at line 2",
        ),
    ],
)
def test_a_malformed_sheet_names_file_line_and_field(quiz_run, tmp_path, change, message):
    sheet = _rewrite(_round_one(quiz_run, tmp_path, _alice_and_bob), change)
    with pytest.raises(InvalidInputError, match=message) as caught:
        import_annotations(RunStore(quiz_run), [sheet])
    assert str(sheet) in str(caught.value)
    assert _labels(quiz_run).empty


def test_a_sheet_without_the_verdict_column_is_refused(quiz_run, tmp_path):
    sheet = _round_one(quiz_run, tmp_path, _alice_and_bob)
    text = sheet.read_text().replace(",verdict,", ",judgement,", 1)
    sheet.write_text(text)
    with pytest.raises(
        InvalidInputError, match=r"line 1: The file lacks the column\(s\) \['verdict'\]"
    ):
        import_annotations(RunStore(quiz_run), [sheet])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"tasks": []}', r"export\.json: A Label Studio JSON export is a list of tasks"),
        ('[{"id": 1,', r"export\.json, line 1: not valid JSON"),
        ('[{"data": {}, "annotations": []}]', r"field 'tasks\[0\]\.data\.response_id'"),
        ('[{"id": 3, "data": {"response_id": "x"}}]', r"field 'tasks\[0\]'.*export as JSON"),
        (
            '[{"data": {"response_id": "x"}, "annotations": '
            '[{"completed_by": "me", "result": []}]}]',
            r"field 'tasks\[0\]\.annotations\[0\]\.completed_by'",
        ),
        (
            '[{"data": {"response_id": "x"}, "annotations": [{"completed_by": 1, "result": '
            '[{"from_name": "verdict", "value": {"choices": ["Wrong"]}}]}]}]',
            r"field 'tasks\[0\]\.annotations\[0\]\.result': The verdict must be one of",
        ),
    ],
)
def test_a_malformed_label_studio_export_names_the_task_and_field(
    quiz_run, tmp_path, content, message
):
    path = tmp_path / "export.json"
    path.write_text(content)
    with pytest.raises(InvalidInputError, match=message):
        import_annotations(RunStore(quiz_run), [path])


def test_a_file_of_another_kind_is_refused(quiz_run, tmp_path):
    path = tmp_path / "labels.xlsx"
    path.write_bytes(b"PK")
    with pytest.raises(InvalidInputError, match=r"labels\.xlsx: An annotation file must be"):
        import_annotations(RunStore(quiz_run), [path])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"aggregate": "mean"}, r"The 'aggregate' parameter of annotate import must be one of"),
        ({"into": "rouge_l"}, r"The 'into' parameter of annotate import must be 'human' or"),
        ({"drop_weakest": -1}, r"The 'drop_weakest' parameter of annotate import must be an int"),
        (
            {"min_reliability": 1.5},
            r"The 'min_reliability' parameter .* must be a float in \[0, 1\]",
        ),
    ],
)
def test_bad_import_options_fail_in_one_message_shape(quiz_run, options, message):
    with pytest.raises(InvalidInputError, match=message):
        import_annotations(RunStore(quiz_run), ["x.csv"], **options)


@pytest.fixture
def shipped_run(tmp_path):
    """A run of the quiz whose dataset ships human labels (the q5 answers hallucinated)."""
    from realitycheck.cli import main

    rows = [json.loads(line) for line in (FIXTURES / "answers.jsonl").read_text().splitlines()]
    path = tmp_path / "labelled.jsonl"
    path.write_text(
        "".join(json.dumps(r | {"wrong": "yes" if r["qid"] == "q5" else "no"}) + "\n" for r in rows)
    )
    dataset = (
        f"files[path={path},text=answer,columns=example_id:qid+model:llm,label=wrong,"
        "positive=yes,negative=no,name=quiz]"
    )
    run = tmp_path / "shipped"
    assert main(["-q", "label", "-d", dataset, "-l", ",".join(PAIRS), "--out", str(run)]) == 0
    return run


def test_shipped_human_labels_are_not_replaced_silently(shipped_run, tmp_path):
    sheet = _round_one(shipped_run, tmp_path, _alice_and_bob)
    shipped = _verdicts(shipped_run, "human")
    with pytest.raises(InvalidInputError, match=r"6 label\(s\) a dataset shipped .*--replace"):
        import_annotations(RunStore(shipped_run), [sheet])
    assert _verdicts(shipped_run, "human") == shipped
    kept = import_annotations(RunStore(shipped_run), [sheet], into="human[protocol=annotation]")
    assert _verdicts(shipped_run, "human") == shipped
    assert len(_verdicts(shipped_run, "human[protocol=annotation]")) == 6 == kept.added - 12
    import_annotations(RunStore(shipped_run), [sheet], replace=True)
    replaced = _verdicts(shipped_run, "human")
    assert replaced["quiz/q1/model-a"] is True and shipped["quiz/q1/model-a"] is False
    assert replaced["quiz/q0/model-a"] is False  # not annotated: the shipped label stays


def test_the_agreement_is_a_study_result_of_the_run(quiz_run, tmp_path):
    import_annotations(RunStore(quiz_run), [_round_one(quiz_run, tmp_path, _alice_and_bob)])
    (result,) = [r for r in load_results(RunStore(quiz_run)) if r.study == RESULT_KEY]
    assert {t.name for t in result.tables} == {"annotators", "agreement", "pairwise"}
    assert "6 items labelled by 2 annotators (alice, bob)" in result.finding
    assert "human: 4 hallucinated, 2 faithful, 0 without a verdict" in result.finding
    manifest = RunStore(quiz_run).read_manifest()["config"]["annotation"]
    assert manifest["aggregate"]["into"] == "human"
    assert [v["file"] for v in manifest["imports"].values()] == ["filled.csv"]


def test_a_sheet_nobody_filled_in_is_refused(quiz_run, tmp_path):
    export_items(RunStore(quiz_run), tmp_path / "r", Selection(labelers=PAIRS), formats=["csv"])
    with pytest.raises(
        InvalidInputError, match=r"items\.csv: No verdict to import: .*6 empty slot"
    ):
        import_annotations(RunStore(quiz_run), [tmp_path / "r" / "items.csv"])
    assert not (quiz_run / "studies").exists()
