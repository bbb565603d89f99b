"""Evaluate's units of work give the same bits in any process: ordering and BLAS threads."""

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from realitycheck.analysis import Bootstrap, Measure
from realitycheck.executors import LocalExecutor
from realitycheck.pipeline import EvaluationConfig
from realitycheck.pipeline._evaluate_load import Frame
from realitycheck.pipeline._evaluate_rows import Unit, Work, blas_threads, measure_unit

N = 12_000  # large enough for OpenBLAS to split the Platt fit's products over threads


def _frame(seed=0) -> Frame:
    rng = np.random.default_rng(seed)
    ids = pd.Index([f"r{i}" for i in range(N)], name="response_id")
    y = (rng.random(N) < 0.55).astype(float)
    base = pd.DataFrame(
        {
            "response_id": ids,
            "example_id": [f"e{i // 2}" for i in range(N)],
            "model": np.where(np.arange(N) % 2, "m1", "m2"),
            "dataset": "d",
            "task": "qa",
            "split": pd.Categorical(np.where(rng.random(N) < 0.5, "test", "calibration")),
        }
    )
    score = rng.normal(size=N) + 0.3 * y + rng.integers(0, 200, N)
    return Frame(
        base=base,
        labels=pd.DataFrame({"human": y}, index=ids),
        label_scores=pd.DataFrame({"human": np.full(N, np.nan)}, index=ids),
        scores=pd.DataFrame({"det": score}, index=ids),
    )


def _work(threads) -> Work:
    config = EvaluationConfig(bootstrap=Bootstrap(n_resamples=20))
    measure = Measure(config.bootstrap)
    rows = {"d": np.arange(N)}
    return Work(frame=_frame(), config=config, measure=measure, rows=rows, threads=threads)


UNIT = Unit("metrics", "d", "human", ("det",))


def _ece(rows):
    return [(r.slice, r.value, r.ci_low, r.ci_high) for r in rows if r.metric in ("ece", "brier")]


def test_the_platt_fit_depends_on_the_blas_threads_of_the_process():
    """Without the driver's thread counts, a one-thread worker gives other last bits."""
    free = _work(threads={})  # no limits: whatever the process has
    with threadpool_limits(2):
        two = measure_unit(free, (0, UNIT))[1]
    with threadpool_limits(1):
        one = measure_unit(free, (0, UNIT))[1]
    assert _ece(one) and _ece(one) != _ece(two)
    assert [r.value for r in one] == pytest.approx([r.value for r in two], rel=1e-12, nan_ok=True)


def test_a_unit_gives_the_drivers_bits_in_a_one_thread_process():
    with threadpool_limits(2):
        work = _work(threads=blas_threads())
        here = measure_unit(work, (0, UNIT))[1]
    with threadpool_limits(1):  # a Ray worker starts with OMP_NUM_THREADS=1
        there = measure_unit(work, (0, UNIT))[1]
    assert here == there and len(here) > 20


def test_units_come_back_with_their_numbers_in_any_order():
    work = _work(threads=blas_threads())
    units = [UNIT, Unit("agreement", "d", "human", ())]
    numbered = list(enumerate(units))
    ahead = dict(LocalExecutor().map(measure_unit, work, numbered))
    behind = dict(LocalExecutor().map(measure_unit, work, numbered[::-1]))
    assert ahead == behind and sorted(ahead) == [0, 1] and ahead[1] == []
