"""Length bias: how much detectors, labelers and labels follow response length.

Parts: ``_report`` (figures and finding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap, ranking_ci
from realitycheck.metrics import correlation_pvalue, pearson, spearman, wilson_interval
from realitycheck.params import Interval, OneOf, param
from realitycheck.records.keys import LabelKey, is_human
from realitycheck.store import RunData, StudyResult, StudyTable
from realitycheck.studies import Study, automatic_labelers, quiet, study
from realitycheck.studies.length._report import (
    length_finding,
    plot_accuracy_by_length,
    plot_lengths,
)

__all__ = ["LengthBias"]

Unit = Literal["words", "chars"]
_QUANTILES = {"q10": 0.1, "q25": 0.25, "median": 0.5, "q75": 0.75, "q90": 0.9}


@study("length")
@dataclass(frozen=True, kw_only=True)
class LengthBias(Study):
    """Response length as a confound of detectors, labelers and labels.

    Follows Janiak et al. (*The Illusion of Progress*, Section 6: length
    patterns, Table 5 correlations, Table 6 length baselines) and Kulkarni et
    al. (*The Mirage of Hallucination Detection*, Figure 5: metric accuracy by
    response length). Length is the number of whitespace-separated words of
    the response (or characters, with ``unit="chars"``).

    * **correlation** — Pearson r and Spearman rho ([-1, 1]; > 0 = the signal
      grows with length) of every detector value and every labeler score with
      length (a labeler without a score, e.g. human, enters with its 0/1
      verdict: point-biserial), with two-sided p-values; single annotators
      are left out.
    * **ranking** — AUROC ([0, 1], 0.5 = chance) against the reference labels
      of every detector and of three baselines (higher = more likely
      hallucinated): *Len*, the response's own length; *Mean-Len*, the mean
      length of its ``samples``; *Std-Len*, their population standard
      deviation (two samples at least). Mean-Len and Std-Len exist only where
      responses have samples. Bootstrap CIs; rank 1 = highest AUROC.
    * **distribution** — length quantiles of hallucinated and correct
      responses (reference labels).
    * **accuracy_by_length** — accuracy (agreement with the reference) of each
      automatic labeler in ``n_bins`` quantile bins of length (fewer when
      lengths tie), with Wilson intervals and the reference hallucination
      rate in the bin.

    Both kinds of interval cover the run's bootstrap confidence.

    Args:
        reference: The labeler taken as ground truth.
        unit: ``words`` or ``chars``.
        n_bins: Number of quantile bins of length.
    """

    unit: Unit = param("words", OneOf(Unit))
    n_bins: int = param(5, Interval(int, 1))
    title: ClassVar[str] = "Length bias"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Measure length effects on every dataset."""
        parts: dict[str, list[pd.DataFrame]] = {k: [] for k in _COLUMNS}
        skipped: list[str] = []
        hist = {}
        for dataset in data.datasets:
            frame = data.frame(dataset)
            length = frame[f"length_{self.unit}"].astype(float)
            parts["correlation"].append(_correlations(data, dataset, length))
            labelers = data.labelers_of(dataset)
            if self.reference not in labelers:
                skipped.append(f"{dataset}: no {self.reference!r} labels; length correlations only")
                continue
            verdicts = data.verdicts(dataset)
            y = verdicts[self.reference]
            baselines = _baselines(frame, length, self.unit)
            if baselines.shape[1] == 1:
                skipped.append(
                    f"{dataset}: no response has samples; Mean-Len and Std-Len not computed"
                )
            parts["ranking"].append(self._ranking(data, dataset, y, baselines, bootstrap))
            parts["distribution"].append(_distribution(dataset, length, y, self.unit))
            hist[dataset] = (length, y)
            autos = automatic_labelers(labelers, self.reference)
            if not autos:
                skipped.append(f"{dataset}: no automatic labeler; no accuracy by length")
                continue
            parts["accuracy_by_length"].append(
                self._accuracy(dataset, length, y, verdicts[autos], bootstrap.confidence)
            )
        frames = {
            k: pd.concat(v, ignore_index=True)[_COLUMNS[k]]
            if v
            else pd.DataFrame(columns=_COLUMNS[k])
            for k, v in parts.items()
        }
        figures = [plot_lengths(ds, length, y, self.unit) for ds, (length, y) in hist.items()]
        if not frames["accuracy_by_length"].empty:
            figures.append(
                plot_accuracy_by_length(
                    frames["accuracy_by_length"], self.unit, bootstrap.confidence
                )
            )
        tables = [StudyTable(k, frames[k], self._caption(k, bootstrap)) for k in _COLUMNS]
        return self._result(
            length_finding(frames, self.reference, self.unit),
            tables=tables,
            figures=figures,
            skipped=skipped,
        )

    def _ranking(
        self,
        data: RunData,
        dataset: str,
        y: pd.Series,
        baselines: pd.DataFrame,
        bootstrap: Bootstrap,
    ) -> pd.DataFrame:
        detectors = data.detector_scores(dataset)[data.detectors_of(dataset)]
        signals = pd.concat([detectors, baselines], axis=1)
        table = ranking_ci(y, signals, ("auroc",), bootstrap)
        table["kind"] = np.where(table["name"].isin(baselines.columns), "baseline", "detector")
        table = table.sort_values("value", ascending=False, na_position="last")
        table["rank"] = table["value"].rank(ascending=False, method="min")
        return table.rename(columns={"value": "auroc"}).assign(dataset=dataset)

    def _accuracy(
        self,
        dataset: str,
        length: pd.Series,
        y: pd.Series,
        verdicts: pd.DataFrame,
        confidence: float,
    ) -> pd.DataFrame:
        known = y.notna()
        bins = pd.qcut(length[known], self.n_bins, duplicates="drop")
        rows = []
        for number, interval in enumerate(bins.cat.categories, start=1):
            in_bin = (bins == interval).reindex(length.index, fill_value=False)
            rate = float(y[in_bin].mean())
            for labeler in verdicts.columns:
                ok = in_bin & verdicts[labeler].notna()
                n = int(ok.sum())
                right = int((verdicts.loc[ok, labeler] == y[ok]).sum())
                low, high = wilson_interval(right, n, confidence=confidence)
                rows.append(
                    {
                        "dataset": dataset,
                        "labeler": labeler,
                        "bin": number,
                        "length_low": float(length[in_bin].min()),
                        "length_high": float(length[in_bin].max()),
                        "n": n,
                        "accuracy": right / n if n else np.nan,
                        "ci_low": float(low),
                        "ci_high": float(high),
                        "hallucination_rate": rate,
                    }
                )
        return pd.DataFrame(rows)

    def _caption(self, table: str, bootstrap: Bootstrap) -> str:
        ref, unit, level = self.reference, self.unit, f"{bootstrap.confidence:.0%}"
        return {
            "correlation": f"Pearson and Spearman correlation of each detector value and "
            f"labeler score (verdict where it has no score) with response length in {unit}; "
            "two-sided p-values.",
            "ranking": f"AUROC against {ref} of every detector and of the length baselines "
            f"Len, Mean-Len and Std-Len (in {unit}), with {level} bootstrap CIs "
            f"({bootstrap.n_resamples} resamples, seed {bootstrap.seed}); rank 1 = best.",
            "distribution": f"Length in {unit} of hallucinated and correct responses "
            f"({ref} labels).",
            "accuracy_by_length": f"Accuracy of each automatic labeler against {ref} in "
            f"{self.n_bins} quantile bins of length in {unit} (bins with tied edges merged), "
            f"with Wilson {level} intervals and the reference hallucination rate in the bin.",
        }[table]


_COLUMNS: dict[str, list[str]] = {
    "correlation": [
        "dataset",
        "kind",
        "name",
        "signal",
        "n",
        "pearson_r",
        "pearson_p",
        "spearman_rho",
        "spearman_p",
        "note",
    ],
    "ranking": [
        "dataset",
        "rank",
        "name",
        "kind",
        "auroc",
        "ci_low",
        "ci_high",
        "n",
        "n_positive",
        "n_excluded",
    ],
    "distribution": ["dataset", "label", "unit", "n", "mean", "std", "min", *_QUANTILES, "max"],
    "accuracy_by_length": [
        "dataset",
        "labeler",
        "bin",
        "length_low",
        "length_high",
        "n",
        "accuracy",
        "ci_low",
        "ci_high",
        "hallucination_rate",
    ],
}


def _correlations(data: RunData, dataset: str, length: pd.Series) -> pd.DataFrame:
    signals: list[tuple[str, str, str, pd.Series]] = []
    scores = data.detector_scores(dataset)
    signals += [("detector", d, "value", scores[d]) for d in data.detectors_of(dataset)]
    label_scores, verdicts = data.label_scores(dataset), data.verdicts(dataset)
    for labeler in data.labelers_of(dataset):
        if LabelKey.parse(labeler).is_annotator:
            continue
        if is_human(labeler) or not label_scores[labeler].notna().any():
            signals.append(("labeler", labeler, "verdict", verdicts[labeler]))
        else:
            signals.append(("labeler", labeler, "score", label_scores[labeler]))
    rows = []
    for kind, name, signal, values in signals:
        ok = values.notna() & length.notna()
        x, v = length[ok].to_numpy(), values[ok].to_numpy(dtype=float)
        n, note = int(ok.sum()), ""
        r = rho = float("nan")
        if n < 3:
            note = f"only {n} items; 3 are needed"
        else:
            with quiet():
                r, rho = pearson(x, v), spearman(x, v)
            if not np.isfinite(r):
                note = "undefined: the signal or the length is constant"
        rows.append(
            {
                "dataset": dataset,
                "kind": kind,
                "name": name,
                "signal": signal,
                "n": n,
                "pearson_r": r,
                "pearson_p": correlation_pvalue(r, n),
                "spearman_rho": rho,
                "spearman_p": correlation_pvalue(rho, n),
                "note": note,
            }
        )
    return pd.DataFrame(rows, columns=_COLUMNS["correlation"])


def _sample_lengths(samples: object, unit: str) -> list[int]:
    texts = list(samples) if samples is not None else []  # type: ignore[call-overload]
    return [len(t.split()) if unit == "words" else len(t) for t in texts]


def _baselines(frame: pd.DataFrame, length: pd.Series, unit: str) -> pd.DataFrame:
    """Len, and Mean-Len / Std-Len over samples where any response has samples."""
    out = pd.DataFrame({"Len": length}, index=frame.index)
    lengths = frame["samples"].map(lambda s: _sample_lengths(s, unit))
    if not lengths.map(len).gt(0).any():
        return out
    out["Mean-Len"] = lengths.map(lambda ls: float(np.mean(ls)) if ls else np.nan)
    out["Std-Len"] = lengths.map(lambda ls: float(np.std(ls)) if len(ls) >= 2 else np.nan)
    return out


def _distribution(dataset: str, length: pd.Series, y: pd.Series, unit: str) -> pd.DataFrame:
    rows = []
    for label, value in (("hallucinated", 1.0), ("correct", 0.0)):
        x = length[y == value]
        row: dict[str, object] = {"dataset": dataset, "label": label, "unit": unit, "n": len(x)}
        row |= {
            "mean": x.mean(),
            "std": x.std(ddof=1),
            "min": x.min(),
            "max": x.max(),
        }
        row |= {name: x.quantile(q) for name, q in _QUANTILES.items()}
        rows.append(row)
    return pd.DataFrame(rows)
