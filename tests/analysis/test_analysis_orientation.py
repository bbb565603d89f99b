"""wrong_way: an AUROC whose whole confidence interval lies below chance, on any cell type."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from realitycheck.analysis import WRONG_WAY_BELOW, wrong_way


@pytest.mark.parametrize(
    ("value", "low", "high", "flagged"),
    [
        (np.float64(0.2), np.float64(0.1), np.float64(0.3), True),
        (0.2, 0.1, np.nextafter(WRONG_WAY_BELOW, 0.0), True),
        (0.2, 0.1, WRONG_WAY_BELOW, False),  # touches chance
        (0.2, pd.NA, 0.3, False),  # a pandas gap is no interval
        (pd.NA, 0.1, 0.3, False),
        (0.2, 0.1, None, False),
        (0.2, 0.1, math.nan, False),
        (0.2, 0.1, "0.3?", False),  # not a number: not judged
    ],
)
def test_only_a_whole_interval_below_chance_is_the_wrong_way(value, low, high, flagged):
    assert wrong_way("auroc", value, low, high) is flagged


@pytest.mark.parametrize("metric", ["pr_auc", "prr", "AUROC", "auroc_change"])
def test_only_an_auroc_is_judged(metric):
    assert wrong_way(metric, 0.1, 0.05, 0.2) is False


def test_it_agrees_with_the_interval_on_random_rows():
    rng = np.random.default_rng(0)
    ends = np.sort(rng.random((200, 3)), axis=1)
    got = [wrong_way("auroc", v, lo, hi) for lo, v, hi in ends]
    assert got == list(ends[:, 2] < 0.5)
    assert any(got) and not all(got)
