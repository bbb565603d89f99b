from dataclasses import dataclass

import pytest

from realitycheck import Detector, InvalidInputError, Label, RunStore, Score, detect, ingest, label
from realitycheck.labelers import labelers


def test_ingest_stores_everything_once(tmp_path, tiny):
    store = RunStore(tmp_path)
    first = ingest(store, tiny)
    assert first.computed == {"tiny": 80}
    second = ingest(store, tiny)
    assert second.reused == {"tiny": 80} and not second.computed
    assert len(store.frame("responses")) == 80
    assert len(store.frame("labels")) == 80
    assert store.read_manifest()["datasets"]["tiny"]["notes"] == ["synthetic"]


@dataclass(frozen=True, kw_only=True)
class _Counting(Detector):
    """Counts characters; fails on request after a number of batches."""

    def score(self, responses, run):
        CALLS.append(len(responses))
        if FAIL_AFTER and len(CALLS) > FAIL_AFTER[0]:
            raise RuntimeError("killed")
        return [self._score(r, float(len(r.text))) for r in responses]


_Counting.name = "counting"
CALLS: list[int] = []
FAIL_AFTER: list[int] = []


def test_a_crashed_stage_keeps_finished_batches_and_resumes(tmp_path, tiny):
    store = RunStore(tmp_path)
    ingest(store, tiny)
    CALLS.clear()
    FAIL_AFTER[:] = [2]
    with pytest.raises(RuntimeError, match="killed"):
        detect(store, [_Counting()], batch_size=16)
    FAIL_AFTER.clear()
    assert len(store.frame("scores").query("detector.str.startswith('counting')")) == 32
    CALLS.clear()
    report = detect(store, [_Counting()], batch_size=16)
    assert report.reused["counting"] == 32
    assert report.computed["counting"] == 48
    assert CALLS == [16, 16, 16]
    CALLS.clear()
    detect(store, [_Counting()], batch_size=16)
    assert CALLS == []
    values = {
        s.response_id: s.value for s in store.read(Score) if s.detector.startswith("counting")
    }
    responses = {r.response_id: r.text for r in store.read(__import__("realitycheck").Response)}
    assert values == {rid: float(len(t)) for rid, t in responses.items()}


def test_label_skips_what_lacks_a_need_and_says_so(tmp_path, tiny):
    store = RunStore(tmp_path)
    ingest(store, tiny)
    rouge = labelers.create("rouge_l")
    report = label(store, [rouge])
    assert report.computed["rouge_l"] == 80
    assert not report.skipped
    rows = [lab for lab in store.read(Label) if lab.labeler == "rouge_l"]
    assert len(rows) == 80 and all(r.spec for r in rows)


def test_wrong_record_count_from_a_component_is_an_error(tmp_path, tiny):
    @dataclass(frozen=True, kw_only=True)
    class Short(Detector):
        """Returns one score too few."""

        def score(self, responses, run):
            return [self._score(r, 1.0) for r in responses[1:]]

    Short.name = "short"
    store = RunStore(tmp_path)
    ingest(store, tiny)
    with pytest.raises(InvalidInputError, match="short returned 79 records for 80 responses"):
        detect(store, [Short()])
