"""A real Label Studio 1.23.2 export (scripts/label_studio_roundtrip.py) read back into its run.

``fixtures/tasks.json``, ``label_config.xml`` and ``annotation.json`` are what
``annotate export`` wrote for the quiz run; Label Studio validated the
configuration, imported the tasks and returned ``label_studio_export.json``
after two users annotated them (one skipped task, one "Can't tell", one note).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from realitycheck.annotation import read_label_studio
from realitycheck.cli import main
from realitycheck.store import RunStore

FIXTURES = Path(__file__).parent / "fixtures"
EXPORT = FIXTURES / "label_studio_export.json"
EXPORT_ARGS = ["-l", "exact_match,rouge_l", "--n", "6", "--annotators", "2", "--seed", "0"]
"""The export of scripts/label_studio_roundtrip.py."""
WORDS = {"Hallucinated": True, "Faithful": False, "Can't tell": None}


def _expected() -> dict[tuple[str, str], bool | None]:
    """Each (response id, user) verdict, read from the export here, independently."""
    out = {}
    for task in json.loads(EXPORT.read_text(encoding="utf-8")):
        for a in task["annotations"]:
            if a["was_cancelled"]:
                continue
            (choice,) = [r["value"]["choices"][0] for r in a["result"] if r["type"] == "choices"]
            out[(task["data"]["response_id"], f"human:user{a['completed_by']}")] = WORDS[choice]
    return out


def test_the_fixture_tasks_are_what_export_writes_today(quiz_run, tmp_path):
    out = tmp_path / "out"
    args = ["-q", "annotate", "export", "--run", str(quiz_run), "--export-dir", str(out)]
    args += EXPORT_ARGS
    assert main(args) == 0
    for name in ("tasks.json", "label_config.xml", "annotation.json"):
        assert (out / name).read_bytes() == (FIXTURES / name).read_bytes(), (
            f"{name} changed: rerun scripts/label_studio_roundtrip.py --fixtures"
        )


def test_the_real_export_reads_as_one_verdict_per_user_and_task():
    found, skipped = read_label_studio(EXPORT)
    assert dict(skipped) == {"cancelled (skipped by the annotator)": 1}
    assert {(a.response_id, f"human:{a.annotator}"): a.hallucinated for a in found} == _expected()
    notes = {a.note for a in found if a.note}
    assert notes == {"reference says otherwise"}
    hostile = [a for a in found if a.response_id == "quiz/q5/model-b"]
    assert len(hostile) == 2 and {a.round for a in found} == {"r5798e796da20"}


@pytest.fixture
def imported(quiz_run, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["-q", "annotate", "export", "--run", str(quiz_run), "--export-dir", str(out)]
    args += EXPORT_ARGS
    assert main(args) == 0
    capsys.readouterr()
    assert main(["annotate", "import", "--run", str(quiz_run), str(EXPORT)]) == 0
    return quiz_run, capsys.readouterr().out


def test_importing_the_real_export_stores_each_users_labels_and_the_majority(imported):
    run, out = imported
    labels = RunStore(run).frame("labels")
    human = labels[labels["labeler"].str.startswith("human")]
    by_user = human[human["labeler"] != "human"]
    stored = dict(
        zip(
            zip(by_user["response_id"], by_user["labeler"], strict=True),
            by_user["hallucinated"],
            strict=True,
        )
    )
    assert stored == _expected()
    votes: dict[str, list[bool]] = {}
    for (rid, _), verdict in _expected().items():
        votes.setdefault(rid, []).extend([] if verdict is None else [verdict])
    aggregate = human[human["labeler"] == "human"].set_index("response_id")["hallucinated"]
    assert set(aggregate.index) == set(votes)
    for rid, verdict in aggregate.items():
        assert verdict == (2 * sum(votes[rid]) >= len(votes[rid])), rid  # a tie: hallucinated
    spec = json.loads(by_user["spec"].iloc[0])
    assert spec["params"] == {
        "file": EXPORT.name,
        "format": "label-studio",
        "sha256": hashlib.sha256(EXPORT.read_bytes()).hexdigest(),
    }
    assert "11 annotations; left out: 1 cancelled" in out
    assert "labels: 17 added, 0 changed, 0 unchanged" in out
    assert "krippendorff_alpha: 0.53" in out and "user2: 4 items" in out
