"""evaluate's loader equals RunData's pivots reindexed on the run's responses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from realitycheck import Example, Label, Response, RunStore, Score
from realitycheck.analysis import split_of
from realitycheck.errors import InvalidInputError
from realitycheck.pipeline._evaluate_load import load_frame
from realitycheck.store import RunData


def _run(path, seed: int) -> RunStore:
    """Two parts per table, labels with missing verdicts, strays and orphan responses."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    store.append([Example(example_id=f"e/{i}", dataset=f"d{i % 2}", task="qa") for i in range(30)])
    rids = [f"e/{i % 33}/{i}" for i in range(120)]  # examples 30..32 are unknown: 9 orphans
    for part in (rids[:70], rids[70:]):
        store.append(
            [
                Response(
                    response_id=r, example_id=r.rsplit("/", 1)[0], model=f"m{len(r) % 2}", text="t"
                )
                for r in part
            ]
        )
        verdicts = [None if rng.random() < 0.1 else bool(rng.random() < 0.4) for _ in part]
        store.append(
            [
                Label(response_id=r, labeler=lab, hallucinated=v, score=rng.random())
                for r, v in zip(part, verdicts, strict=True)
                for lab in ("zeta", "human")
                if rng.random() < 0.9
            ]
        )
        store.append(
            [
                Score(response_id=r, detector=det, value=float(rng.normal()))
                for r in part
                for det in ("b:x", "a:y")
                if rng.random() < 0.8
            ]
        )
    store.append([Label(response_id="ghost/1", labeler="human", hallucinated=True)])
    store.append([Score(response_id="ghost/2", detector="c:only_strays", value=1.0)])
    store.append([Label(response_id=rids[3], labeler="human", hallucinated=False)])  # newest wins
    return store


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_load_frame_equals_rundata_pivots(tmp_path, seed):
    store = _run(tmp_path / "run", seed)
    notes: list[str] = []
    frame = load_frame(store, 0.5, (), notes)
    data = RunData(store)
    usable = data.responses[data.responses["dataset"].notna()]
    ids = usable["response_id"]
    assert frame.base["response_id"].tolist() == ids.tolist()
    for column in ("example_id", "model", "dataset", "task"):
        assert frame.base[column].tolist() == usable[column].tolist()
    assert frame.base["split"].tolist() == split_of(usable["example_id"].tolist()).tolist()
    for got, pivot in (
        (frame.labels, data.wide_verdicts),
        (frame.label_scores, data.wide_label_scores),
        (frame.scores, data.wide_scores),
    ):
        want = pivot.reindex(ids).astype(float)
        assert list(got.columns) == list(want.columns)
        np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
    assert notes[0] == "9 responses point at unknown examples and are excluded."
    for note, table in zip(notes[1:], (data.labels, data.scores), strict=True):
        stray = table.loc[~table["response_id"].isin(set(ids)), "response_id"]
        shown = stray.unique()[:3].tolist()
        assert note.startswith(f"{len(stray)} {'labels' if table is data.labels else 'scores'}")
        assert f"(e.g. {shown})" in note
    assert frame.labels.loc[ids.iloc[3], "human"] == 0.0


def test_load_frame_without_labels_or_scores(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append([Example(example_id="e", dataset="d", task="qa")])
    store.append([Response(response_id="e/1", example_id="e", model="m", text="t")])
    frame = load_frame(store, 0.5, (), [])
    assert frame.labels.shape == (1, 0) and frame.scores.shape == (1, 0)
    assert isinstance(frame.scores.index, pd.Index) and frame.scores.index.tolist() == ["e/1"]


def test_load_frame_refuses_an_empty_run(tmp_path):
    with pytest.raises(InvalidInputError, match="holds no responses"):
        load_frame(RunStore(tmp_path / "run"), 0.5, (), [])
