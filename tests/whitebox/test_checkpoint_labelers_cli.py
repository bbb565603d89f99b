"""unieval, critic and q2 end to end through ``realitycheck label`` on real BEGIN rows.

The first rows of BEGIN's TopicalChat file (real knowledge snippets and real
responses of dialogue models, with their human labels), copied to a data
folder of their own, are labelled by the three labelers on tiny random
models: the numbers are noise; what is checked is that every row gets a
value from real records through the command line, beside the human labels
of the same responses, and that a rerun computes nothing.
"""

from __future__ import annotations

import pytest
from _tiny_checkpoints import build_classifier, build_reader, build_t5

from realitycheck.cli import main
from realitycheck.datasets.begin import SPLITS
from realitycheck.labelers.q2 import Q2
from realitycheck.labelers.unieval import UniEval
from realitycheck.store import RunStore

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROWS = 4


@pytest.fixture(scope="module")
def begin_rows(data_dir, tmp_path_factory):
    """A data folder whose BEGIN TopicalChat file holds its header and first ROWS rows."""
    root = tmp_path_factory.mktemp("begin-rows")
    (root / "begin").mkdir()
    for split, name in SPLITS.items():
        lines = (data_dir / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (root / name).write_text("".join(lines[: 1 + ROWS if split == "tc-dev" else 1]))
    return root


def test_the_three_label_real_begin_rows_and_a_rerun_computes_nothing(
    begin_rows, tmp_path, monkeypatch
):
    t5 = build_t5(tmp_path / "t5", seed=0, head_std=0.1)
    generator = build_t5(tmp_path / "generator", seed=4)
    reader = build_reader(tmp_path / "reader")
    critic = build_classifier(tmp_path / "critic", {0: "Entailment", 1: "Hallucination"}, seed=3)
    nli = build_classifier(
        tmp_path / "nli", {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, seed=5
    )
    keys = [
        f'unieval[model="{t5}",dimension=groundedness,device=cpu]',
        f'critic[model="{critic}",device=cpu]',
        f'q2[generator="{generator}",reader="{reader}",judge=hf[model="{nli}",device=cpu],'
        "max_question_tokens=6,device=cpu]",
    ]
    out, cache = tmp_path / "run", tmp_path / "cache"
    label = ["-q", "label", "-d", "begin[splits=tc-dev]", "--data-dir", str(begin_rows)]
    label += [x for key in keys for x in ("-l", key)]
    label += ["--out", str(out), "--cache-dir", str(cache)]
    assert main(label) == 0

    labels = RunStore(out).frame("labels")
    human = labels[labels["labeler"] == "human"]
    assert len(human) == ROWS
    for name in ("unieval", "critic", "q2"):
        ours = labels[labels["labeler"].str.startswith(f"{name}[")]
        assert set(ours["response_id"]) == set(human["response_id"]), name
        assert (ours["error"] == "").all(), ours["error"].tolist()
        assert ours["score"].between(0, 1).all() and ours["hallucinated"].notna().all(), name

    ran: list[str] = []
    monkeypatch.setattr(UniEval, "consistency", lambda self, qs: ran.append("unieval") or [])
    monkeypatch.setattr(Q2, "questions", lambda self, xs, cache=None: ran.append("q2") or [])
    assert main(label) == 0
    assert ran == [] and len(RunStore(out).frame("labels")) == len(labels)
