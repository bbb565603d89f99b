"""Evaluate's work in units an executor can spread: one dataset against one ground truth.

The driver reads the run (:func:`~realitycheck.pipeline._evaluate_load.load_frame`),
decides per dataset which labelers are ground truths (:func:`references`) and
what each is measured on (:func:`plan_units`), and maps :func:`measure_unit`
over the units. A unit's rows depend only on the run's tables, the settings
and the bootstrap seed (the resamples of n items are the same wherever they
are drawn), and on one thing of the process: the number of BLAS threads,
which changes the last bits of the Platt-scaling fit (a Ray worker starts
with one thread, the driver with one per core). Each unit therefore runs
with the driver's BLAS thread counts (:func:`blas_threads`), so a worker on
the same kind of machine gives the same bits; the driver puts the rows back
in unit order. A local executor runs the units on threads of this process
(one per core), which share the run's arrays and the drawn resamples.

- a ``metrics`` unit: every detector of one dataset against one reference,
  per slice (AUROC, PR-AUC, PRR on every usable item; thresholded and
  calibration metrics on the test split);
- an ``agreement`` unit: every automatic labeler of one dataset against one
  ground truth, per slice, as :class:`~realitycheck.records.AgreementResult`
  rows (the labeler measured in ``labeler``, the ground truth in ``reference``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_info, threadpool_limits

from realitycheck.analysis import (
    AGREEMENT_METRICS,
    BLAS_LOCK,
    CALIBRATION_METRICS,
    RANKING_METRICS,
    SCORE_METRICS,
    TEST,
    THRESHOLD_METRICS,
    Measure,
    Where,
    group_by_mask,
)
from realitycheck.executors import thread_safe
from realitycheck.pipeline._evaluate_load import Frame
from realitycheck.pipeline._slices import slices
from realitycheck.pipeline._test_split import fit_calibrations, fit_thresholds, test_split_rows
from realitycheck.records import AgreementResult, MetricResult
from realitycheck.records.keys import LabelKey

if TYPE_CHECKING:
    from realitycheck.pipeline._evaluate_config import EvaluationConfig

__all__ = [
    "Row",
    "Unit",
    "Work",
    "blas_threads",
    "measure_unit",
    "plan_units",
    "present",
    "references",
]

Row = MetricResult | AgreementResult
"""A row of a unit: of the metrics table, or of the agreement table."""


@dataclass(frozen=True)
class Unit:
    """One dataset's measurements against one ground truth.

    Attributes:
        table: ``metrics`` (detectors against ``truth``) or ``agreement``
            (labelers against ``truth``).
        dataset: The dataset.
        truth: The labeler taken as ground truth.
        keys: The detectors (``metrics``) or labelers (``agreement``) measured.
    """

    table: str
    dataset: str
    truth: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Work:
    """What every unit reads: the run's tables, the settings and each dataset's rows.

    ``threads`` are the driver's BLAS thread counts by library (see :func:`blas_threads`).
    """

    frame: Frame
    config: EvaluationConfig
    measure: Measure
    rows: Mapping[str, np.ndarray]  # dataset -> positions of its responses in ``frame``
    threads: Mapping[str, int]


def blas_threads() -> dict[str, int]:
    """This process's thread count of each BLAS / OpenMP library, by library file prefix."""
    return {info["prefix"]: int(info["num_threads"]) for info in threadpool_info()}


def present(frame: pd.DataFrame, idx: np.ndarray, wanted: tuple[str, ...] | None) -> list[str]:
    """The columns of ``frame`` with a value on the rows ``idx``: all, or those ``wanted``.

    A bare family name of stored records (``recorded``, ``human``) in ``wanted``
    means all of them.
    """
    have = [c for c in frame.columns if frame[c].iloc[idx].notna().any()]
    if wanted is None:
        return sorted(have)
    out = []
    for k in wanted:
        matches = [h for h in have if h == k or LabelKey.parse(h).kind == k]
        out += [m for m in sorted(matches) if m not in out]
    return out


def references(
    frame: Frame, dataset: str, rows_idx: np.ndarray, config: EvaluationConfig, notes: list[str]
) -> list[str]:
    """Return the ground-truth labelers for a dataset, each distinct label set once."""
    refs = present(frame.labels, rows_idx, config.references)
    if config.references is None:
        refs = [r for r in refs if not LabelKey.parse(r).is_annotator]
    if config.reference is not None:
        if config.reference not in present(frame.labels, rows_idx, None):
            notes.append(f"{dataset}: no {config.reference} labels; it is not measured here.")
            return []
        refs = [config.reference, *(r for r in refs if r != config.reference)]
    kept: list[str] = []
    for ref in refs:
        column = frame.labels[ref].to_numpy()[rows_idx]
        twin = next(
            (
                k
                for k in kept
                if np.array_equal(frame.labels[k].to_numpy()[rows_idx], column, equal_nan=True)
            ),
            None,
        )
        if twin is None:
            kept.append(ref)
        else:
            notes.append(f"{dataset}: {ref} equals {twin} on every response; shown as {twin}.")
    return kept


def _agreement_plan(
    frame: Frame, rows_idx: np.ndarray, refs: list[str], config: EvaluationConfig
) -> tuple[list[str], list[str]]:
    """The ground truths of agreement, and the labelers measured against them."""
    found = present(frame.labels, rows_idx, None)
    if config.reference is not None:
        truths = [config.reference] if config.reference in refs else []
        autos = [k for k in found if k != config.reference and not LabelKey.parse(k).is_annotator]
    else:
        truths = [k for k in refs if LabelKey.parse(k).is_human] or [
            k for k in found if LabelKey.parse(k).is_human_aggregate
        ]
        autos = [k for k in found if not LabelKey.parse(k).is_human]
    named = config.measured_labelers
    if named is not None:
        # Against a non-human reference, the human aggregates are always measured too.
        humans = (
            [] if config.reference is None else [k for k in autos if LabelKey.parse(k).is_human]
        )
        autos = [k for k in named if k in autos and k not in humans] + humans
    return truths, autos


def plan_units(
    frame: Frame, dataset: str, rows_idx: np.ndarray, refs: list[str], config: EvaluationConfig
) -> list[Unit]:
    """One dataset's units: detectors against each reference, then labelers against each truth."""
    dets = tuple(present(frame.scores, rows_idx, config.measured_detectors))
    truths, autos = _agreement_plan(frame, rows_idx, refs, config)
    return [Unit("metrics", dataset, ref, dets) for ref in refs] + [
        Unit("agreement", dataset, truth, tuple(autos)) for truth in truths
    ]


@thread_safe
def measure_unit(work: Work, numbered: tuple[int, Unit]) -> tuple[int, list[Row]]:
    """Return the unit's number and its rows (an executor's task; see the module docstring).

    Thread-safe: units share ``work.measure``, whose resamples are drawn under locks.
    """
    i, unit = numbered
    rows_idx = work.rows[unit.dataset]
    with BLAS_LOCK:  # no other thread is between setting and restoring its counts
        limits = threadpool_limits(limits=dict(work.threads))
    try:
        measured: list[Row]
        if unit.table == "metrics":
            measured = list(_detector_rows(work, rows_idx, unit))
        else:
            measured = list(_agreement_rows(work, rows_idx, unit))
    finally:
        with BLAS_LOCK:
            limits.restore_original_limits()
    return i, measured


def _detector_rows(work: Work, rows_idx: np.ndarray, unit: Unit) -> list[MetricResult]:
    frame, config, measure = work.frame, work.config, work.measure
    base = frame.base.iloc[rows_idx]
    dets, ref, dataset = list(unit.keys), unit.truth, unit.dataset
    out: list[MetricResult] = []
    test = (base["split"] == TEST).to_numpy()
    calib = ~test
    y_all = frame.labels[ref].to_numpy()[rows_idx]
    s_all = {d: frame.scores[d].to_numpy()[rows_idx] for d in dets}
    thresholds = fit_thresholds(y_all, s_all, calib, config.thresholds, config.threshold_objective)
    thresholded = {d: (s_all[d], note, t) for d, (t, note) in thresholds.items() if not np.isnan(t)}
    probabilities = {
        d: (p, note, None)
        for d, (p, note) in fit_calibrations(y_all, s_all, calib, config.calibration).items()
    }
    for slice_name, in_slice in slices(base):
        valid = {d: in_slice & ~np.isnan(y_all) & ~np.isnan(s_all[d]) for d in dets}
        for keys, mask in group_by_mask(valid):
            y, s = y_all[mask], np.vstack([s_all[k][mask] for k in keys])
            where = Where(
                labeler=ref,
                slice=slice_name,
                dataset=dataset,
                n_excluded=int(in_slice.sum() - mask.sum()),
            )
            for metric in SCORE_METRICS:
                out += measure.rows(metric, keys, y, s, where)
        where = Where(labeler=ref, slice=slice_name, dataset=dataset, n_excluded=0)
        in_test = in_slice & test
        out += test_split_rows(THRESHOLD_METRICS, thresholded, y_all, in_test, where, measure)
        out += test_split_rows(CALIBRATION_METRICS, probabilities, y_all, in_test, where, measure)
    return out


def _as_agreement(row: MetricResult) -> AgreementResult:
    """A labeler's row, measured as if it were a detector against ``row.labeler``."""
    fields = asdict(row)
    fields["labeler"], fields["reference"] = fields.pop("detector"), fields["labeler"]
    return AgreementResult(**fields)


def _agreement_rows(work: Work, rows_idx: np.ndarray, unit: Unit) -> list[AgreementResult]:
    frame, measure = work.frame, work.measure
    base = frame.base.iloc[rows_idx]
    out: list[AgreementResult] = []
    y_all = frame.labels[unit.truth].to_numpy()[rows_idx]
    for slice_name, in_slice in slices(base):
        for lab in unit.keys:
            p_all = frame.labels[lab].to_numpy()[rows_idx]
            sc_all = frame.label_scores[lab].to_numpy()[rows_idx]
            for metrics, values, kind in (
                (AGREEMENT_METRICS, p_all, "verdict at the labeler's own threshold"),
                (RANKING_METRICS, sc_all, "continuous labeler score"),
            ):
                mask = in_slice & ~np.isnan(y_all) & ~np.isnan(values)
                if not mask.any():
                    continue
                where = Where(
                    labeler=unit.truth,
                    slice=slice_name,
                    dataset=unit.dataset,
                    n_excluded=int(in_slice.sum() - mask.sum()),
                )
                for metric in metrics:
                    out += map(
                        _as_agreement,
                        measure.rows(
                            metric,
                            [lab],
                            y_all[mask],
                            values[mask][None, :],
                            where,
                            notes=[kind],
                        ),
                    )
    return out
