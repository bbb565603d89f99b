"""Paired labeler shift per model and prompt variant: Janiak et al.'s Tables 2 and 3.

Janiak et al. (*The Illusion of Progress*, paper 000, Tables 2-3) give, per
model and for few-shot vs zero-shot prompts, each detector's AUROC under ROUGE
labels and under an LLM judge, and

    Δ% = (AUROC under the judge − AUROC under ROUGE) / AUROC under ROUGE × 100

("negative Δ% values reveal ROUGE's overestimation of method effectiveness").
Here the labeler plays ROUGE's part and the reference the judge's:
``delta_ref_pct = (reference AUROC − labeler AUROC) / labeler AUROC × 100``,
negative = the labeler overstates the detector. (The ``shift`` table's
``delta_pct`` is the same comparison the other way round, based on the
reference: ``(labeler − reference) / reference × 100``.)

Both AUROCs of a row are measured on the same responses (those with both
verdicts and the detector's score), so their bootstrap is paired: one set of
resamples (those of :func:`~realitycheck.metrics.bootstrap_ci`) gives both
AUROCs on every resample, and Δ% of each resample gives Δ%'s percentile
interval.
Sampling noise shared by the two AUROCs (which items were drawn) then cancels
out of Δ%, as it does not when the two are resampled independently.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from realitycheck.analysis import Bootstrap
from realitycheck.metrics import UndefinedMetricWarning, auroc_many, bootstrap_distribution

__all__ = ["ALL", "PAIRED_COLUMNS", "paired_rows", "paper_layout", "relative_change"]

ALL = "all"
"""The pooled model (row) or prompt variant (column group), when there are two or more."""

FloatArray = npt.NDArray[np.float64]

PAIRED_COLUMNS = [
    "dataset",
    "labeler",
    "reference",
    "model",
    "prompt_variant",
    "detector",
    "n",
    "labeler_positive_rate",
    "reference_positive_rate",
    "labeler_auroc",
    "labeler_auroc_ci_low",
    "labeler_auroc_ci_high",
    "reference_auroc",
    "reference_auroc_ci_low",
    "reference_auroc_ci_high",
    "delta_ref_pct",
    "delta_ref_pct_ci_low",
    "delta_ref_pct_ci_high",
]

# Paired column -> its name in a column group of the paper layout.
_SHOWN = {
    "labeler_auroc": "labeler AUROC",
    "reference_auroc": "reference AUROC",
    "delta_ref_pct": "Δ%",
}
_KEYS = ["dataset", "labeler", "reference", "model", "detector"]


def relative_change(value: float, reference: float) -> float:
    """Δ% = (value − reference) / reference × 100; NaN when the reference is 0 or NaN."""
    if not np.isfinite(reference) or reference == 0 or not np.isfinite(value):
        return float("nan")
    return (value - reference) / reference * 100.0


Estimate = tuple[FloatArray, FloatArray, FloatArray]
"""Values of k detectors, their interval's low and high ends, each of shape (k,)."""


@dataclass(frozen=True)
class _Paired:
    """Both AUROCs of k detectors on the same items, and Δ%, each with its interval."""

    labeler: Estimate
    reference: Estimate
    delta: Estimate


def _paired_auroc(
    y_labeler: npt.NDArray[np.bool_],
    y_reference: npt.NDArray[np.bool_],
    scores: FloatArray,
    bootstrap: Bootstrap,
) -> _Paired:
    """AUROC under each labeler and Δ%, all read off the same resamples of the items.

    ``scores`` is (k, n): k detectors on the same n items. The resamples are
    those of :func:`~realitycheck.metrics.bootstrap_ci` with the run's ``n_resamples``
    and ``seed``, drawn by :func:`~realitycheck.metrics.bootstrap_distribution`
    once per labeler (the same draws each time), so each AUROC's interval is
    ``bootstrap_ci``'s.
    """
    values = auroc_many(np.vstack([y_labeler, y_reference]), scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        labeler, reference = (
            bootstrap_distribution(
                "auroc", y, scores, n_resamples=bootstrap.n_resamples, seed=bootstrap.seed
            )
            for y in (y_labeler, y_reference)
        )
    defined = ~np.isnan(labeler) & ~np.isnan(reference) & (labeler != 0)
    delta = np.full(labeler.shape, np.nan)
    np.divide(100 * (reference - labeler), labeler, out=delta, where=defined)
    change = np.array(
        [relative_change(r, lab) for r, lab in zip(values[1], values[0], strict=True)]
    )
    return _Paired(
        (values[0], *_interval(labeler, bootstrap.confidence)),
        (values[1], *_interval(reference, bootstrap.confidence)),
        (change, *_interval(delta, bootstrap.confidence)),
    )


def _interval(resampled: FloatArray, confidence: float) -> tuple[FloatArray, FloatArray]:
    """Percentile interval of each row (k, B) over its defined resamples, as ``bootstrap_ci``."""
    quantiles = ((1 - confidence) / 2, (1 + confidence) / 2)
    low, high = np.full(len(resampled), np.nan), np.full(len(resampled), np.nan)
    for k, row in enumerate(resampled):
        usable = row[~np.isnan(row)]
        if usable.size:
            low[k], high[k] = np.quantile(usable, quantiles)
    return low, high


def _cells(frame: pd.DataFrame, column: str) -> list[tuple[str, npt.NDArray[np.bool_]]]:
    """``(value, mask)`` per value of ``column``, then the pooled ``all`` when two or more."""
    values = sorted(frame[column].dropna().astype(str).unique())
    column_values = frame[column].astype(str).to_numpy()
    cells = [(v, column_values == v) for v in values]
    if len(values) > 1:
        cells.append((ALL, np.ones(len(frame), dtype=bool)))
    return cells


def paired_rows(
    responses: pd.DataFrame,
    y_labeler: pd.Series,
    y_reference: pd.Series,
    scores: pd.DataFrame,
    bootstrap: Bootstrap,
) -> list[dict[str, object]]:
    """Rows of the ``paired`` table for one dataset and labeler, per model x prompt variant.

    Args:
        responses: The dataset's responses (``model``, ``prompt_variant``),
            indexed like the other arguments.
        y_labeler: The labeler's verdicts, 1.0 / 0.0 / NaN.
        y_reference: The reference's verdicts, 1.0 / 0.0 / NaN.
        scores: One column per detector, higher = more likely hallucinated.
        bootstrap: Resamples, coverage and seed of the intervals.

    Returns:
        One row per model (and ``all``), prompt variant (and ``all``) and
        detector with at least one item, with the columns of
        :data:`PAIRED_COLUMNS` after ``dataset``, ``labeler`` and ``reference``.
    """
    both = (y_labeler.notna() & y_reference.notna()).to_numpy()
    labels = (y_labeler.to_numpy(), y_reference.to_numpy())
    values = scores.to_numpy(dtype=float)
    rows: list[dict[str, object]] = []
    for model, in_model in _cells(responses, "model"):
        for prompt, in_prompt in _cells(responses, "prompt_variant"):
            measured = _measure_cell(in_model & in_prompt & both, labels, values, bootstrap)
            rows += [
                {"model": model, "prompt_variant": prompt, "detector": scores.columns[k], **row}
                for k, row in sorted(measured.items())
            ]
    return rows


def _measure_cell(
    cell: npt.NDArray[np.bool_],
    labels: tuple[FloatArray, FloatArray],
    values: FloatArray,
    bootstrap: Bootstrap,
) -> dict[int, dict[str, object]]:
    """Each detector's (column of ``values``) paired row on the items of ``cell`` it scored.

    Detectors scored on the same items share one paired bootstrap; a
    detector without any item has no row.
    """
    groups: dict[bytes, list[int]] = {}
    for k in range(values.shape[1]):
        groups.setdefault((cell & ~np.isnan(values[:, k])).tobytes(), []).append(k)
    out: dict[int, dict[str, object]] = {}
    for token, ks in groups.items():
        mask = np.frombuffer(token, dtype=bool)
        if not mask.any():
            continue
        y_l, y_r = labels[0][mask].astype(bool), labels[1][mask].astype(bool)
        paired = _paired_auroc(y_l, y_r, np.ascontiguousarray(values[mask][:, ks].T), bootstrap)
        for j, k in enumerate(ks):
            out[k] = {
                "n": int(mask.sum()),
                "labeler_positive_rate": float(y_l.mean()),
                "reference_positive_rate": float(y_r.mean()),
                **_flat("labeler_auroc", paired.labeler, j),
                **_flat("reference_auroc", paired.reference, j),
                **_flat("delta_ref_pct", paired.delta, j),
            }
    return out


def _flat(name: str, values: Estimate, j: int) -> dict[str, float]:
    value, low, high = values
    return {
        name: float(value[j]),
        f"{name}_ci_low": float(low[j]),
        f"{name}_ci_high": float(high[j]),
    }


def paper_layout(paired: pd.DataFrame) -> pd.DataFrame:
    """The ``paired`` table laid out as Janiak et al.'s Tables 2-3: prompt variants as columns.

    One row per dataset, labeler, reference, model (then ``all``) and
    detector; per prompt variant (then ``all``) a group of columns
    ``<variant>: labeler AUROC``, ``<variant>: reference AUROC`` and
    ``<variant>: Δ%``, each with ``_ci_low`` / ``_ci_high``, and
    ``<variant>: n``. A variant a dataset lacks is NaN.
    """
    if paired.empty:
        return pd.DataFrame(columns=_KEYS)
    variants = list(dict.fromkeys(v for v in paired["prompt_variant"] if v != ALL))
    variants += [ALL] if (paired["prompt_variant"] == ALL).any() else []
    columns = []
    for variant in variants:
        for shown in _SHOWN.values():
            columns += [f"{variant}: {shown}{s}" for s in ("", "_ci_low", "_ci_high")]
        columns.append(f"{variant}: n")
    rows = []
    for keys, group in paired.groupby(_KEYS, sort=False):
        row: dict[str, object] = dict(zip(_KEYS, keys, strict=True))
        for r in group.itertuples(index=False):
            variant = str(r.prompt_variant)
            for name, shown in _SHOWN.items():
                for s in ("", "_ci_low", "_ci_high"):
                    row[f"{variant}: {shown}{s}"] = getattr(r, name + s)
            row[f"{variant}: n"] = r.n
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=_KEYS + columns)
