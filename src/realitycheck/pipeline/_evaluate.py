"""The evaluate stage: detectors and labelers measured against reference labels.

Two tables come out of it:

* **metrics** — every detector against every reference labeler (human labels
  and, for labeler-shift analyses, the automatic labelers), per dataset and per
  slice (``all``, ``task=…``, ``model=…``, and ``<column>=…`` for each
  ``slice_by`` column a dataset declared as ``meta``): AUROC, PR-AUC and PRR
  (prediction-rejection ratio) on every usable item; thresholded metrics on the
  *test* split only, at a threshold chosen on the separate *calibration* split
  (or given, for binary detectors); ECE and the Brier score on the *test* split
  of probabilities mapped from the score by Platt scaling or isotonic regression
  fitted on the calibration split.
* **agreement** — every automatic labeler against the human labels (or, with
  ``reference`` set, every other labeler against the reference): precision,
  recall, F1, agreement (accuracy), Cohen's kappa, balanced accuracy and
  F1-macro of its verdicts, and AUROC / PR-AUC of its continuous score.

Every value carries a percentile bootstrap confidence interval over responses,
the number of items used, of positives, and of items excluded because a label
or score was missing.

The split is by example (:func:`realitycheck.analysis.split_of`), so all
responses to one source fall on the same side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields

import numpy as np
import pandas as pd

from realitycheck.analysis import (
    AGREEMENT_METRICS,
    CALIBRATION_METHODS,
    CALIBRATION_METRICS,
    OBJECTIVES,
    RANKING_METRICS,
    SCORE_METRICS,
    TEST,
    THRESHOLD_METRICS,
    Bootstrap,
    Measure,
    Where,
    group_by_mask,
)
from realitycheck.errors import InvalidInputError
from realitycheck.keys import LabelKey
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    OneOf,
    OrNone,
    Satisfies,
    SequenceOf,
    as_tuple,
    check_params,
    param,
)
from realitycheck.pipeline._checks import check_keys, explain_empty
from realitycheck.pipeline._evaluate_load import Frame, load_frame
from realitycheck.pipeline._slices import slices
from realitycheck.pipeline._test_split import fit_calibrations, fit_thresholds, test_split_rows
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import MetricResult
from realitycheck.store import RunStore

__all__ = ["Evaluation", "EvaluationConfig", "evaluate"]

_KEYS = OrNone(SequenceOf(NonEmptyStr()))


def _is_threshold_map(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool) and v == v
        for k, v in value.items()
    )


@dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """What to measure and how.

    Args:
        reference: The labeler taken as ground truth, any stored label key
            (``human``, ``human[protocol=worst]``, a judge, a panel,
            ``recorded:<name>``). ``None`` (the default) = the dataset's human
            labels: agreement against every human aggregate. When set, every
            other labeler (human aggregates included, single annotators not) is
            measured against it, and it is the first reference of the detectors.
        labelers: Automatic labelers to compare with humans (with the reference,
            when one is set, and then the human aggregates too); ``None`` = all stored.
        references: Labelers used as ground truth for detectors; ``None`` = the
            human aggregates (not single annotators) and every automatic labeler.
        bootstrap: Resamples, confidence and seed of every interval.
        threshold_objective: What the calibration-split threshold maximises.
        calibration: How a detector's score becomes a probability of
            hallucination before ECE and the Brier score: ``platt`` (Platt
            scaling) or ``isotonic`` (isotonic regression), fitted with
            scikit-learn on the calibration split of each dataset and
            reference, the metrics measured on the test split; ``none`` takes
            scores as probabilities (detectors with a value outside [0, 1]
            then get neither metric). PRR needs no calibration: it is rank-based.
        calibration_fraction: Share of examples in the calibration split.
        thresholds: Fixed thresholds by detector key (hallucinated iff value >=
            threshold); these detectors skip the calibration-split choice.
        slice_by: Metadata columns (a ``files`` dataset's ``meta``) that add one
            slice per value, ``<column>=<value>``, when a dataset has two or more.
    """

    reference: str | None = param(None, OrNone(NonEmptyStr()))
    detectors: tuple[str, ...] | None = param(None, _KEYS, convert=as_tuple)
    labelers: tuple[str, ...] | None = param(None, _KEYS, convert=as_tuple)
    references: tuple[str, ...] | None = param(None, _KEYS, convert=as_tuple)
    bootstrap: Bootstrap = param(MISSING, InstanceOf(Bootstrap), default_factory=Bootstrap)
    threshold_objective: str = param("f1_macro", OneOf(*OBJECTIVES))
    calibration: str = param("platt", OneOf(*CALIBRATION_METHODS))
    calibration_fraction: float = param(0.5, Interval(float, 0, 1, closed="neither"))
    thresholds: Mapping[str, float] = param(
        MISSING,
        Satisfies(_is_threshold_map, "a mapping from detector keys to numbers"),
        default_factory=dict,
    )
    slice_by: tuple[str, ...] = param((), SequenceOf(NonEmptyStr()), convert=as_tuple)

    def __post_init__(self) -> None:
        check_params(self, owner="evaluate")

    def as_dict(self) -> dict[str, object]:
        """The settings as plain JSON-able values (written to the run manifest)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["bootstrap"] = self.bootstrap.as_dict()
        out["thresholds"] = dict(self.thresholds)
        return out


@dataclass(kw_only=True)
class Evaluation:
    """The tables the evaluate stage produced, as DataFrames of MetricResult rows."""

    metrics: pd.DataFrame
    agreement: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def _present(frame: pd.DataFrame, idx: np.ndarray, wanted: tuple[str, ...] | None) -> list[str]:
    have = [c for c in frame.columns if frame[c].iloc[idx].notna().any()]
    if wanted is None:
        return sorted(have)
    out = []
    for k in wanted:
        # A bare family name of stored records ("recorded", "human") means all of them.
        matches = [h for h in have if h == k or LabelKey.parse(h).kind == k]
        out += [m for m in sorted(matches) if m not in out]
    return out


def _references(
    frame: Frame, dataset: str, rows_idx: np.ndarray, config: EvaluationConfig, notes: list[str]
) -> list[str]:
    """Return the ground-truth labelers for a dataset, each distinct label set once."""
    refs = _present(frame.labels, rows_idx, config.references)
    if config.references is None:
        refs = [r for r in refs if not LabelKey.parse(r).is_annotator]
    if config.reference is not None:
        if config.reference not in _present(frame.labels, rows_idx, None):
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


def _detector_rows(
    frame: Frame,
    dataset: str,
    rows_idx: np.ndarray,
    refs: list[str],
    config: EvaluationConfig,
    measure: Measure,
) -> list[MetricResult]:
    base = frame.base.iloc[rows_idx]
    dets = _present(frame.scores, rows_idx, config.detectors)
    out: list[MetricResult] = []
    test = (base["split"] == TEST).to_numpy()
    calib = ~test
    for ref in refs:
        y_all = frame.labels[ref].to_numpy()[rows_idx]
        s_all = {d: frame.scores[d].to_numpy()[rows_idx] for d in dets}
        thresholds = fit_thresholds(
            y_all, s_all, calib, config.thresholds, config.threshold_objective
        )
        thresholded = {
            d: (s_all[d], note, t) for d, (t, note) in thresholds.items() if not np.isnan(t)
        }
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
            out += test_split_rows(
                CALIBRATION_METRICS, probabilities, y_all, in_test, where, measure
            )
    return out


def _agreement_rows(
    frame: Frame,
    dataset: str,
    rows_idx: np.ndarray,
    refs: list[str],
    config: EvaluationConfig,
    measure: Measure,
) -> list[MetricResult]:
    base = frame.base.iloc[rows_idx]
    present = _present(frame.labels, rows_idx, None)
    if config.reference is not None:
        truths = [config.reference] if config.reference in refs else []
        autos = [k for k in present if k != config.reference and not LabelKey.parse(k).is_annotator]
    else:
        truths = [k for k in refs if LabelKey.parse(k).is_human] or [
            k for k in present if LabelKey.parse(k).is_human_aggregate
        ]
        autos = [k for k in present if not LabelKey.parse(k).is_human]
    if config.labelers is not None:
        # Against a non-human reference, the human aggregates are always measured too.
        humans = (
            [] if config.reference is None else [k for k in autos if LabelKey.parse(k).is_human]
        )
        autos = [k for k in config.labelers if k in autos and k not in humans] + humans
    out: list[MetricResult] = []
    for ref in truths:
        y_all = frame.labels[ref].to_numpy()[rows_idx]
        for slice_name, in_slice in slices(base):
            for lab in autos:
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
                        labeler=ref,
                        slice=slice_name,
                        dataset=dataset,
                        n_excluded=int(in_slice.sum() - mask.sum()),
                    )
                    for metric in metrics:
                        out += measure.rows(
                            metric,
                            [lab],
                            y_all[mask],
                            values[mask][None, :],
                            where,
                            notes=[kind],
                        )
    return out


def evaluate(
    store: RunStore,
    config: EvaluationConfig | None = None,
    *,
    progress: Progress | None = None,
) -> Evaluation:
    """Measure the run's detectors and labelers and store the two tables.

    Returns:
        The metrics and agreement tables, plus notes on anything excluded.
    """
    config = config or EvaluationConfig()
    progress = progress or NullProgress()
    notes: list[str] = []
    frame = load_frame(store, config.calibration_fraction, config.slice_by, notes)
    check_keys(
        labelers=list(frame.labels.columns),
        detectors=list(frame.scores.columns),
        references=config.references,
        reference=config.reference,
        measured_labelers=config.labelers,
        measured_detectors=config.detectors,
        thresholds=config.thresholds,
    )
    measure = Measure(config.bootstrap)
    found: dict[str, tuple[list[str], list[str]]] = {}
    metric_rows: list[MetricResult] = []
    agreement_rows: list[MetricResult] = []
    datasets = sorted(frame.base["dataset"].unique())
    with progress.task("evaluating", len(datasets)) as task:
        for ds in datasets:
            idx = np.flatnonzero((frame.base["dataset"] == ds).to_numpy())
            refs = _references(frame, ds, idx, config, notes)
            found[ds] = (refs, _present(frame.scores, idx, config.detectors))
            metric_rows += _detector_rows(frame, ds, idx, refs, config, measure)
            agreement_rows += _agreement_rows(frame, ds, idx, refs, config, measure)
            task.advance()
    if not metric_rows and (not agreement_rows or config.detectors):
        raise InvalidInputError(explain_empty(frame.labels, frame.scores, found))
    store.replace(metric_rows, table="metrics")
    store.replace(agreement_rows, table="agreement")
    store.update_manifest(config={"evaluate": config.as_dict()}, notes=notes)
    return Evaluation(
        metrics=store.frame("metrics"), agreement=store.frame("agreement"), notes=notes
    )
