"""The FAMD ensemble of ``metric_correlation`` when a supervised detector is in the run.

A supervised detector (``probe``) trains on the calibration split and scores
the test split only, so no calibration item has every signal. The ensemble is
fitted without it and names it; where too few signals are left, the finding
says why the ensemble did not run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from realitycheck.analysis import Bootstrap, split_of
from realitycheck.store import RunData
from realitycheck.studies.metric_correlation import ENSEMBLE, MetricCorrelation

pytest.importorskip("sklearn")
pytest.importorskip("prince")

PROBE = "probe[embedding=false,scores=length*]"
PLAIN = ("length", "length[unit=chars]")


@pytest.fixture(scope="module")
def data(real_run) -> RunData:
    """TruthfulQA's first 60 examples: two length detectors and a probe trained on them."""
    return real_run(truthfulqa=60, detectors=(*PLAIN, PROBE))


def test_the_probe_scores_only_the_test_split(data):
    scores = data.detector_scores("truthfulqa")
    split = split_of(list(data.example_ids("truthfulqa")))
    assert scores[PROBE][split == "calibration"].isna().all()
    assert scores[PROBE][split == "test"].notna().sum() > 10


def test_ensemble_fits_without_the_uncovered_signal_and_names_it(data):
    result = MetricCorrelation().run(data, bootstrap=Bootstrap(n_resamples=20))
    loadings = result.table("loadings")
    assert sorted(loadings["signal"]) == sorted(PLAIN)
    ensemble = result.table("ensemble")
    assert list(ensemble["signal"]) == [ENSEMBLE, *PLAIN]
    (line,) = [s for s in result.skipped if PROBE in s]
    assert line == (
        "truthfulqa: ensemble: left out, scored on fewer than 10 calibration items (e.g. a "
        f"supervised detector, which scores the test split only): {PROBE} (0)"
    )
    assert f"left out for want of calibration scores: {PROBE}." in result.finding
    assert "did not run" not in result.finding
    # The fit is the one of the covered signals alone.
    alone = MetricCorrelation(signals=PLAIN).run(data, bootstrap=Bootstrap(n_resamples=20))
    pd.testing.assert_frame_equal(result.table("ensemble_scores"), alone.table("ensemble_scores"))
    # The probe still correlates with the others on the test items it scored.
    corr = result.table("correlation")
    pair = corr[(corr["a"] == "length") & (corr["b"] == PROBE)].iloc[0]
    assert pair["n"] == data.detector_scores("truthfulqa")[PROBE].notna().sum()
    assert np.isfinite(pair["rho"])


def test_the_finding_says_why_the_ensemble_did_not_run(data):
    study = MetricCorrelation(signals=("length", PROBE))
    result = study.run(data, bootstrap=Bootstrap(n_resamples=20))
    assert result.table("ensemble").empty and result.table("loadings").empty
    why = f"1 signal(s) scored on the calibration split, 2 needed (left out: {PROBE})"
    assert f"truthfulqa: ensemble: {why}" in result.skipped
    assert f"The FAMD ensemble did not run on truthfulqa ({why})." in result.finding
