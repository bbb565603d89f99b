"""The evaluate stage: detectors and labelers measured against reference labels.

Two tables come out of it, and each describes the whole run: every stored
detector and labeler is measured, the ones a caller named (the ones it just
ran) and those an earlier stage or config stored, so a second config on the
same run adds its components to the tables instead of replacing them.
Only with ``only`` set do the tables hold the named components alone.
Either way both tables are computed afresh from the stored labels and scores
and replace the stored ones: no row outlives the records it was measured on.

* **metrics** — every detector against every reference labeler (human labels
  and, for labeler-shift analyses, the automatic labelers), per dataset and per
  slice (``all``, ``task=…``, ``model=…``, ``prompt_variant=…`` when named in
  ``slice_by``, and ``<column>=…`` for each ``slice_by`` column a dataset
  declared as ``meta``): AUROC, PR-AUC and PRR
  (prediction-rejection ratio) on every usable item; thresholded metrics on the
  *test* split only, at a threshold chosen on the separate *calibration* split
  (or given, for binary detectors); ECE and the Brier score on the *test* split
  of probabilities mapped from the score by Platt scaling or isotonic regression
  fitted on the calibration split.
* **agreement** — every automatic labeler (column ``labeler``) against the
  human labels (column ``reference``; with ``reference`` set, every other
  labeler against that reference): precision,
  recall, F1, agreement (accuracy), Cohen's kappa, balanced accuracy and
  F1-macro of its verdicts, and AUROC / PR-AUC of its continuous score.

Every value carries a percentile bootstrap confidence interval over responses,
the number of items used, of positives, and of items excluded because a label
or score was missing.

The split is by example (:func:`realitycheck.analysis.split_of`), so all
responses to one source fall on the same side.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd

from realitycheck.analysis import (
    Measure,
)
from realitycheck.errors import InvalidInputError
from realitycheck.executors import Executor, LocalExecutor
from realitycheck.metrics import UndefinedMetricWarning
from realitycheck.pipeline._checks import check_keys, explain_empty, unmeasured
from realitycheck.pipeline._evaluate_config import EvaluationConfig
from realitycheck.pipeline._evaluate_load import load_frame
from realitycheck.pipeline._evaluate_rows import (
    Row,
    Unit,
    Work,
    blas_threads,
    measure_unit,
    plan_units,
    present,
    references,
)
from realitycheck.progress import NullProgress, Progress
from realitycheck.records import AgreementResult, MetricResult
from realitycheck.records.keys import HUMAN
from realitycheck.store import RunStore

__all__ = ["Evaluation", "EvaluationConfig", "evaluate"]


@dataclass(kw_only=True)
class Evaluation:
    """The tables the evaluate stage produced, as DataFrames.

    ``metrics`` holds :class:`~realitycheck.records.MetricResult` rows (a
    detector, its reference ``labeler``); ``agreement`` holds
    :class:`~realitycheck.records.AgreementResult` rows (the ``labeler``
    measured, its ``reference``).

    ``reference`` is the labeler the stage took as ground truth (its config's,
    else ``human``), as the report reads it back from the manifest.
    """

    metrics: pd.DataFrame
    agreement: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    reference: str = HUMAN


def _in_unit_order(
    units: list[Unit], measured: list[list[Row]]
) -> tuple[list[MetricResult], list[AgreementResult]]:
    """The metrics rows and the agreement rows, each unit's in turn."""
    tables: dict[str, list[Row]] = {"metrics": [], "agreement": []}
    for unit, unit_rows in zip(units, measured, strict=True):
        tables[unit.table] += unit_rows
    # A metrics unit gives MetricResult rows, an agreement unit AgreementResult rows.
    return (
        cast(list[MetricResult], tables["metrics"]),
        cast(list[AgreementResult], tables["agreement"]),
    )


def evaluate(
    store: RunStore,
    config: EvaluationConfig | None = None,
    *,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Measure the run's detectors and labelers and store the two tables.

    Every stored detector and labeler is measured (only the named ones with
    ``config.only``; see :class:`EvaluationConfig`), and the two tables
    replace the stored ones whole, so they always describe the run's current
    labels and scores: evaluating again with the same settings gives the same
    tables, and a component whose scores were dropped or recomputed is
    measured on what is stored now.

    The run is read here; its units of work (each dataset against each ground
    truth) are measured by ``executor`` (default: this process, on one thread
    per core; a Ray executor: the cluster's workers) and stored in unit order,
    so the tables do not depend on where or in which order the units ran.

    Returns:
        The metrics and agreement tables, plus notes on anything excluded.
    """
    config = config or EvaluationConfig()
    progress = progress or NullProgress()
    executor = executor or LocalExecutor()
    notes: list[str] = []
    frame = load_frame(store, config.calibration_fraction, config.slice_by, notes)
    # A named component undefined on the data (rouge_l without reference answers) is
    # missing, not misspelt: say why it has nothing, and measure the rest.
    missing = unmeasured(
        store, frame, labelers=config.labelers or (), detectors=config.detectors or ()
    )
    notes += missing.notes
    check_keys(
        labelers=[*frame.labels.columns, *missing.labelers],
        detectors=[*frame.scores.columns, *missing.detectors],
        references=config.references,
        reference=config.reference,
        measured_labelers=config.labelers,
        measured_detectors=config.detectors,
        thresholds=config.thresholds,
    )
    found: dict[str, tuple[list[str], list[str]]] = {}
    rows: dict[str, np.ndarray] = {}
    units: list[Unit] = []
    for ds in sorted(frame.base["dataset"].unique()):
        rows[ds] = idx = np.flatnonzero((frame.base["dataset"] == ds).to_numpy())
        refs = references(frame, ds, idx, config, notes)
        found[ds] = (refs, present(frame.scores, idx, config.measured_detectors))
        units += plan_units(frame, ds, idx, refs, config)
    work = Work(
        frame=frame,
        config=config,
        measure=Measure(config.bootstrap),
        rows=rows,
        threads=blas_threads(),
    )
    measured: list[list[Row]] = [[] for _ in units]
    # Units on threads enter and leave warning filters out of turn; the filters
    # they set (undefined metrics silenced) hold throughout and are undone here.
    with progress.task("evaluating", len(units)) as task, warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for i, unit_rows in executor.map(measure_unit, work, list(enumerate(units))):
            measured[i] = unit_rows
            task.advance()
    metric_rows, agreement_rows = _in_unit_order(units, measured)
    if not metric_rows and (not agreement_rows or config.detectors):
        raise InvalidInputError(
            " ".join([explain_empty(frame.labels, frame.scores, found), *missing.notes])
        )
    store.replace(metric_rows, table=MetricResult.table)
    store.replace(agreement_rows, table=AgreementResult.table)
    store.update_manifest(config={"evaluate": config.as_dict()}, notes=notes)
    return Evaluation(
        metrics=store.frame("metrics"),
        agreement=store.frame("agreement"),
        notes=notes,
        reference=config.reference or HUMAN,
    )
