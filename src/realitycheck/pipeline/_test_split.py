"""What evaluate fits on the calibration split and measures on the test split.

Per dataset and reference, each detector gets a decision threshold (chosen on
the calibration split, or given) and a map from its score to a probability of
hallucination (Platt scaling or isotonic regression fitted on the calibration
split); the thresholded metrics, ECE and the Brier score are then measured
on the test items of every slice, with bootstrap intervals over those items
(the fitted threshold and map held fixed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from realitycheck.analysis import Measure, Where, calibrate, choose_or_fix_threshold, group_by_mask
from realitycheck.records import MetricResult

__all__ = ["fit_calibrations", "fit_thresholds", "test_split_rows"]

Inputs = Mapping[str, tuple[np.ndarray, str, float | None]]
"""Detector key -> (values over the dataset's rows, note, threshold or None)."""


def fit_thresholds(
    y_all: np.ndarray,
    s_all: dict[str, np.ndarray],
    calib: np.ndarray,
    given: Mapping[str, float],
    objective: str,
) -> dict[str, tuple[float, str]]:
    """Per detector: the given threshold, or the one maximising ``objective`` on calibration."""
    out = {}
    for d, values in s_all.items():
        if d in given:
            out[d] = (float(given[d]), "threshold given by the user")
            continue
        ok = ~np.isnan(y_all) & ~np.isnan(values) & calib
        out[d] = choose_or_fix_threshold(y_all[ok], values[ok], objective)
    return out


def fit_calibrations(
    y_all: np.ndarray, s_all: dict[str, np.ndarray], calib: np.ndarray, method: str
) -> dict[str, tuple[np.ndarray, str]]:
    """Per detector that can be calibrated: its probabilities over the rows, and how."""
    out = {}
    for d, values in s_all.items():
        ok = ~np.isnan(y_all) & ~np.isnan(values) & calib
        probs, note = calibrate(y_all[ok], values[ok], values, method)
        if probs is not None:
            out[d] = (probs, note)
    return out


def test_split_rows(
    metrics: tuple[str, ...],
    inputs: Inputs,
    y_all: np.ndarray,
    in_test: np.ndarray,
    where: Where,
    measure: Measure,
) -> list[MetricResult]:
    """Each metric on the test items ``in_test`` of a slice, detectors with equal items together."""
    out: list[MetricResult] = []
    valid = {d: in_test & ~np.isnan(y_all) & ~np.isnan(v[0]) for d, v in inputs.items()}
    for keys, mask in group_by_mask(valid):
        found = [inputs[k] for k in keys]
        given = [v[2] for v in found if v[2] is not None]
        here = replace(where, n_excluded=int(in_test.sum() - mask.sum()))
        for metric in metrics:
            out += measure.rows(
                metric,
                keys,
                y_all[mask],
                np.vstack([v[0][mask] for v in found]),
                here,
                thresholds=given if len(given) == len(found) else None,
                notes=[v[1] for v in found],
            )
    return out
