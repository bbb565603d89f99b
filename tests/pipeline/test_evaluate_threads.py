"""Evaluate on threads: the same tables, byte for byte, as one unit after the other."""

import pickle
import warnings

import numpy as np
import pytest
from tests.pipeline.test_evaluate_units import _work

from realitycheck import EvaluationConfig, Label, RunStore, Score, evaluate, ingest
from realitycheck.analysis import Bootstrap, Measure, Where
from realitycheck.executors import LocalExecutor
from realitycheck.pipeline._evaluate_rows import Unit, blas_threads, measure_unit


def _run(path, tiny):
    """The tiny run with a second labeler and detector: four units (two references, agreement)."""
    store = RunStore(path)
    ingest(store, tiny)
    ids = store.frame("responses")["response_id"].tolist()
    rng = np.random.default_rng(5)
    store.append(
        [
            Label(response_id=r, labeler="rouge_l", hallucinated=bool(v > 0.5), score=float(v))
            for r, v in zip(ids, rng.random(len(ids)), strict=True)
        ]
    )
    store.append(
        [
            Score(response_id=r, detector="recorded:other", value=float(v))
            for r, v in zip(ids, np.round(rng.random(len(ids)), 1), strict=True)
        ]
    )
    return store


@pytest.mark.parametrize("workers", [2, 4])
def test_threads_give_the_serial_tables_byte_for_byte(tmp_path, tiny, workers):
    config = EvaluationConfig(bootstrap=Bootstrap(n_resamples=300, seed=4))
    serial = evaluate(_run(tmp_path / "one", tiny), config, executor=LocalExecutor(workers=1))
    threaded = evaluate(
        _run(tmp_path / "many", tiny), config, executor=LocalExecutor(workers=workers)
    )
    assert len(serial.metrics) > 100 and len(serial.agreement) > 10
    for table in ("metrics", "agreement"):
        one, many = getattr(serial, table), getattr(threaded, table)
        assert one.to_csv(index=False) == many.to_csv(index=False)
        stored = [
            (p / f"{table}.parquet").read_bytes() for p in (tmp_path / "one", tmp_path / "many")
        ]
        assert stored[0] == stored[1]


def test_units_on_threads_equal_units_in_turn_and_keep_their_order():
    work = _work(threads=blas_threads())
    units = [Unit("metrics", "d", "human", ("det",))] * 3 + [Unit("agreement", "d", "human", ())]
    numbered = list(enumerate(units))
    one = list(LocalExecutor(workers=1).map(measure_unit, work, numbered))
    many = list(LocalExecutor(workers=3).map(measure_unit, _work(blas_threads()), numbered))
    assert [i for i, _ in many] == [0, 1, 2, 3]
    assert many == one and one[0][1] == one[2][1] and len(one[0][1]) > 20


def test_threaded_evaluate_leaves_the_warning_filters_as_it_found_them(tmp_path, tiny):
    before = list(warnings.filters)
    evaluate(
        _run(tmp_path, tiny),
        EvaluationConfig(bootstrap=Bootstrap(n_resamples=50)),
        executor=LocalExecutor(workers=3),
    )
    assert list(warnings.filters) == before


def test_measure_and_its_resamples_pickle_without_their_locks():
    """A Ray worker gets the driver's Measure by pickle: the locks are made anew, rows unchanged."""
    rng = np.random.default_rng(2)
    y, s = (rng.random(60) < 0.4).astype(float), rng.random((2, 60))
    measure = Measure(Bootstrap(n_resamples=80))
    where = Where(labeler="human", slice="all", dataset="d", n_excluded=0)
    want = measure.rows("prr", ["a", "b"], y, s, where)  # draws and keeps the resamples
    copy = pickle.loads(pickle.dumps(measure))
    assert copy._lock is not measure._lock
    assert copy.resamples(60)._lock is not measure.resamples(60)._lock
    assert copy.rows("prr", ["a", "b"], y, s, where) == want
