"""Metric correlation: how much labelers and detectors agree, and a FAMD ensemble of them."""

from __future__ import annotations

import fnmatch
import re
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap, famd_scores, fit_famd, split_of
from realitycheck.metrics import UndefinedMetricWarning, bootstrap_ci, pearson, spearman
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    OrNone,
    SequenceOf,
    as_tuple,
    param,
)
from realitycheck.records.keys import LabelKey, is_human
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies import Study, fmt, study
from realitycheck.studies.plots import heatmap, png_bytes

__all__ = ["MetricCorrelation"]

ENSEMBLE = "famd-ensemble"
MIN_PAIRS = 3
MIN_CALIBRATION = 10


def _signal_frame(data: RunData, ds: str, keys: list[str]) -> pd.DataFrame:
    """One column per key: a detector's values, else a labeler's score, else its 0/1 verdict."""
    detectors, scores, verdicts = (
        data.detector_scores(ds), data.label_scores(ds), data.verdicts(ds),
    )  # fmt: skip
    columns = {}
    for key in keys:
        if key in detectors.columns and detectors[key].notna().any():
            columns[key] = detectors[key]
        elif key in scores.columns and scores[key].notna().any():
            columns[key] = scores[key]
        else:
            columns[key] = verdicts[key]
    return pd.DataFrame(columns, index=data.frame(ds).index, dtype=float)


@dataclass(frozen=True)
class _EnsembleNote:
    """What became of one dataset's ensemble.

    Attributes:
        why: Why it did not run, or ``""`` when it ran.
        uncovered: Signals left out for want of calibration scores.
    """

    why: str
    uncovered: tuple[str, ...] = ()


def _not_run_sentences(notes: dict[str, _EnsembleNote], shown: int = 3) -> list[str]:
    """One sentence naming the datasets whose ensemble did not run, and why."""
    failed = [(ds, n) for ds, n in notes.items() if n.why]
    if not failed:
        return []
    parts = [f"{ds} ({n.why})" for ds, n in failed[:shown]]
    if len(failed) > shown:
        parts.append(f"{len(failed) - shown} more dataset(s), listed under skipped")
    return [f"The FAMD ensemble did not run on {'; '.join(parts)}."]


def _is_binary(x: pd.Series) -> bool:
    return bool(x.dropna().isin((0.0, 1.0)).all())


@study("metric_correlation")
@dataclass(frozen=True, kw_only=True)
class MetricCorrelation(Study):
    """Spearman correlations between every labeler and detector, and a FAMD ensemble of signals.

    Follows Kulkarni et al. (*The Mirage of Hallucination Detection*, Figures 1
    and 6 and the Ensemble metric of Table 1). **Correlation** (per dataset):
    Spearman's rho in [-1, 1] between every pair of signals — each detector's
    value, each labeler's score (or its 0/1 verdict where it has no score; all
    oriented higher = more likely hallucinated) — on the items both scored;
    single annotators (``human:<name>``) only with ``annotators=True``, and a
    column identical to an earlier one is shown once. Rho is NaN (with a note)
    below 3 shared items or when a signal is constant on them. **Ensemble**:
    factor analysis of mixed data (Pagès 2014; ``prince``) over ``signals``,
    numeric ones standardised and 0/1 ones as categories, fitted on the
    *calibration* split only (``split_of`` by example id); the first
    component, oriented on the calibration split so that it correlates
    positively with the ``reference`` labels (higher = more likely
    hallucinated), is scored on the *test* split next to each input signal on
    the same items (AUROC and PR-AUC in [0, 1], paired bootstrap CIs with the
    run's bootstrap settings). A signal scored on fewer than 10 calibration
    items — a supervised detector (``probe``, ``finetuned``) trains there and
    scores the test split only — is left out of the fit and named in
    ``skipped`` and the finding; a dataset whose ensemble cannot run at all
    says why in both.

    Args:
        reference: Labels that orient and evaluate the ensemble.
        signals: Detector or labeler keys (``fnmatch`` patterns such as
            ``recorded:*`` allowed) for the ensemble; None = every detector.
        annotators: Include single annotators in the correlation matrix.
        calibration_fraction: Share of examples in the calibration split.
    """

    signals: tuple[str, ...] | None = param(
        None, OrNone(SequenceOf(NonEmptyStr(), min_length=1)), convert=as_tuple
    )
    annotators: bool = param(False, InstanceOf(bool))
    calibration_fraction: float = param(0.5, Interval(float, 0, 1, closed="neither"))
    title: ClassVar[str] = "Correlation between metrics, and their FAMD ensemble"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Correlate every pair of signals and fit/evaluate the ensemble, per dataset."""
        parts: dict[str, list[pd.DataFrame]] = {
            k: [] for k in ("correlation", "ensemble", "loadings", "ensemble_scores")
        }
        figures: list[StudyFigure] = []
        skipped: list[str] = []
        ensemble_notes: dict[str, _EnsembleNote] = {}
        for ds in data.datasets:
            frame, notes = self._matrix(data, ds)
            if frame.shape[1] < 2:
                skipped.append(f"{ds}: correlation: fewer than 2 labelers and detectors")
            else:
                long = self._correlation(frame).assign(dataset=ds)
                parts["correlation"].append(long)
                figures.append(self._heatmap(ds, list(frame.columns), long, notes))
            note = self._ensemble(data, ds, parts, skipped, bootstrap)
            ensemble_notes[ds] = note
            if note.why:
                skipped.append(f"{ds}: ensemble: {note.why}")
        frames = {
            k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()
        }
        order = ["dataset"]
        frames = {k: v[order + [c for c in v.columns if c not in order]] if len(v) else v
                  for k, v in frames.items()}  # fmt: skip
        tables = [StudyTable(k, frames[k], CAPTIONS[k].format(s=self, b=bootstrap)) for k in frames]
        return self._result(
            self._finding(frames, ensemble_notes), tables=tables, figures=figures, skipped=skipped
        )

    def _matrix(self, data: RunData, ds: str) -> tuple[pd.DataFrame, list[str]]:
        labelers = [
            k for k in data.labelers_of(ds) if self.annotators or not LabelKey.parse(k).is_annotator
        ]
        frame = _signal_frame(data, ds, labelers + data.detectors_of(ds))
        keep: list[str] = []
        notes: list[str] = []
        for c in map(str, frame.columns):
            same = next((k for k in keep if frame[k].equals(frame[c])), None)
            if same is None:
                keep.append(c)
            else:
                notes.append(f"{c} = {same}")
        return frame[keep], notes

    def _correlation(self, frame: pd.DataFrame) -> pd.DataFrame:
        rows = []
        values = {c: frame[c].to_numpy() for c in frame.columns}
        present = {c: ~np.isnan(v) for c, v in values.items()}
        for i, a in enumerate(frame.columns):
            for b in frame.columns[i + 1 :]:
                ok = present[a] & present[b]
                n = int(ok.sum())
                x, y = values[a][ok], values[b][ok]
                note = ""
                if n < MIN_PAIRS:
                    rho, note = float("nan"), f"fewer than {MIN_PAIRS} items scored by both"
                elif np.ptp(x) == 0 or np.ptp(y) == 0:
                    rho, note = float("nan"), "constant on the shared items"
                else:
                    rho = spearman(x, y)
                rows.append({"a": a, "b": b, "rho": rho, "n": n, "note": note})
        return pd.DataFrame(rows, columns=["a", "b", "rho", "n", "note"])

    def _heatmap(
        self, ds: str, names: list[str], long: pd.DataFrame, notes: list[str]
    ) -> StudyFigure:
        k = len(names)
        matrix = np.eye(k)
        pos = {n: i for i, n in enumerate(names)}
        for a, b, rho in zip(long["a"], long["b"], long["rho"], strict=True):
            matrix[pos[a], pos[b]] = matrix[pos[b], pos[a]] = rho
        cells = [[f"{v:.2f}" if v == v else "" for v in row] for row in matrix]
        fig = heatmap(
            np.ma.masked_invalid(matrix),
            names,
            names,
            heading=f"{ds}: Spearman correlation (pairwise complete)",
            cells=cells,
            colorbar="Spearman rho",
            cmap="RdBu_r",
            vmin=-1,
            vmax=1,
        )
        caption = f"{ds}: Spearman rho between signals on the items both scored; blank = undefined."
        if notes:
            caption += f" Identical columns shown once: {'; '.join(notes)}."
        stem = "correlation_" + re.sub(r"[^A-Za-z0-9._=-]+", "_", ds)
        return StudyFigure(stem, png_bytes(fig), caption)

    def _inputs(self, data: RunData, ds: str) -> list[str]:
        if self.signals is None:
            return data.detectors_of(ds)
        available = data.detectors_of(ds) + data.labelers_of(ds)
        chosen: list[str] = []
        for wanted in self.signals:
            found = [wanted] if wanted in available else []
            if not found and "*" in wanted:
                found = [k for k in available if fnmatch.fnmatchcase(k, wanted)]
            chosen += [k for k in found if k not in chosen]
        return [k for k in chosen if k != self.reference]

    def _ensemble(
        self,
        data: RunData,
        ds: str,
        parts: dict[str, list[pd.DataFrame]],
        skipped: list[str],
        bootstrap: Bootstrap,
    ) -> _EnsembleNote:
        if self.reference not in data.labelers_of(ds):
            return _EnsembleNote(f"no {self.reference!r} labels to orient and evaluate it")
        requested = self._inputs(data, ds)
        if len(requested) < 2:
            wanted = (
                "detectors" if self.signals is None else f"signals matching {list(self.signals)}"
            )
            return _EnsembleNote(f"{len(requested)} {wanted} on the dataset, 2 needed")
        frame = _signal_frame(data, ds, requested)
        y = data.verdicts(ds)[self.reference]
        split = pd.Series(
            split_of(list(data.example_ids(ds)), self.calibration_fraction), frame.index
        )
        # A signal scored on (almost) no calibration item, such as a supervised
        # detector that trains there and scores the test split only, cannot be
        # fitted on: it is left out by name rather than emptying the fit.
        coverage = frame[split == "calibration"].notna().sum()
        uncovered = tuple(c for c in requested if coverage[c] < MIN_CALIBRATION)
        if uncovered:
            skipped.append(
                f"{ds}: ensemble: left out, scored on fewer than {MIN_CALIBRATION} calibration "
                "items (e.g. a supervised detector, which scores the test split only): "
                + ", ".join(f"{c} ({int(coverage[c])})" for c in uncovered)
            )
            requested = [c for c in requested if c not in uncovered]
            frame = frame[requested]
        if len(requested) < 2:
            return _EnsembleNote(
                f"{len(requested)} signal(s) scored on the calibration split, 2 needed "
                f"(left out: {', '.join(uncovered)})",
                uncovered,
            )
        complete = frame.notna().all(axis=1)
        cal = complete & (split == "calibration")
        if cal.sum() < MIN_CALIBRATION:
            return _EnsembleNote(
                f"{int(cal.sum())} calibration items with every signal, {MIN_CALIBRATION} needed",
                uncovered,
            )
        inputs = [c for c in requested if frame.loc[cal, c].nunique() > 1]
        if len(inputs) < len(requested):
            constant = sorted(set(requested) - set(inputs))
            skipped.append(
                f"{ds}: ensemble: left out, constant on the calibration split: {constant}"
            )
        if len(inputs) < 2:
            return _EnsembleNote(
                f"{len(inputs)} signal(s) vary on the calibration split, 2 needed", uncovered
            )
        frame = frame[inputs]
        binary = [c for c in inputs if _is_binary(frame.loc[complete, c])]
        fit = fit_famd(frame[cal], binary)
        raw = pd.Series(famd_scores(fit, frame[complete]), frame.index[complete])
        oriented = cal & y.notna()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            r = pearson(raw[oriented], y[oriented]) if oriented.sum() > 1 else float("nan")
        if r != r:
            return _EnsembleNote(
                "the reference labels of the calibration split have one class; cannot orient",
                uncovered,
            )
        score = raw * (1.0 if r >= 0 else -1.0)
        test = complete & (split == "test")
        labelled = test & y.notna()
        parts["ensemble_scores"].append(
            pd.DataFrame({"dataset": ds, "response_id": score[test].index, "value": score[test]})
        )
        parts["loadings"].append(self._loadings(ds, fit, frame[cal], score[cal], binary))
        if y[labelled].nunique() < 2:
            return _EnsembleNote(
                "the test split's reference labels have one class; no AUROC", uncovered
            )
        parts["ensemble"].append(
            self._evaluate(
                ds,
                y[labelled],
                score[labelled],
                frame[labelled],
                binary,
                int(cal.sum()),
                bootstrap,
            )
        )
        return _EnsembleNote("", uncovered)

    def _loadings(
        self, ds: str, fit: Any, frame: pd.DataFrame, score: pd.Series, binary: list[str]
    ) -> pd.DataFrame:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            loading = [pearson(frame[c], score) for c in fit.signals]
        return pd.DataFrame(
            {
                "signal": fit.signals,
                "kind": ["binary" if c in binary else "numeric" for c in fit.signals],
                "loading": loading,
                "contribution_pct": fit.contributions.to_numpy(),
                "component_inertia_pct": 100 * fit.inertia_share,
                "n_calibration": len(frame),
                "engine": fit.engine,
            }
        ).assign(dataset=ds)

    def _evaluate(
        self,
        ds: str,
        y: pd.Series,
        score: pd.Series,
        frame: pd.DataFrame,
        binary: list[str],
        n_cal: int,
        bootstrap: Bootstrap,
    ) -> pd.DataFrame:
        names = [ENSEMBLE, *frame.columns]
        stacked = np.vstack([score.to_numpy(), frame.to_numpy(dtype=float).T])
        labels = y.to_numpy(dtype=float)
        out = pd.DataFrame(
            {
                "signal": names,
                "kind": ["FAMD component 1"]
                + ["binary" if c in binary else "numeric" for c in frame.columns],
            }
        )
        for metric in ("auroc", "pr_auc"):
            result = bootstrap_ci(
                metric,
                labels,
                stacked,
                n_resamples=bootstrap.n_resamples,
                confidence=bootstrap.confidence,
                seed=bootstrap.seed,
            )
            out[metric] = result.value
            out[f"{metric}_ci_low"] = result.ci_low
            out[f"{metric}_ci_high"] = result.ci_high
        return out.assign(
            n=len(labels), n_positive=int(labels.sum()), n_calibration=n_cal, dataset=ds
        )

    def _finding(self, frames: dict[str, pd.DataFrame], notes: dict[str, _EnsembleNote]) -> str:
        sentences = []
        corr = frames["correlation"].dropna(subset=["rho"]) if len(frames["correlation"]) else None
        if corr is not None and len(corr):
            ds = corr.groupby("dataset").size().idxmax()
            c = corr[corr["dataset"] == ds]
            human = c["a"].map(is_human).astype(bool) | c["b"].map(is_human).astype(bool)
            machine = c[~human]
            if len(machine):
                top = machine.iloc[int(np.argmax(machine["rho"].abs().to_numpy()))]
                sentences.append(
                    f"On {ds}, the median |Spearman rho| over {len(machine)} pairs of detectors "
                    f"and automatic labelers is {machine['rho'].abs().median():.2f}; the "
                    f"strongest pair is {top['a']} / {top['b']} "
                    f"(rho {top['rho']:.2f}, n={top['n']})."
                )
            ref = c[(c["a"] == self.reference) ^ (c["b"] == self.reference)]
            ref = ref[~(ref["a"].map(is_human).astype(bool) & ref["b"].map(is_human).astype(bool))]
            if len(ref):
                top = ref.iloc[int(np.argmax(ref["rho"].to_numpy()))]
                other = top["b"] if top["a"] == self.reference else top["a"]
                sentences.append(
                    f"The signal that tracks {self.reference} labels best there is {other} "
                    f"(rho {top['rho']:.2f})."
                )
        ens = frames["ensemble"]
        if len(ens):
            for ds in list(dict.fromkeys(ens["dataset"]))[:2]:
                e = ens[ens["dataset"] == ds]
                first, inputs = e.iloc[0], e.iloc[1:]
                best = inputs.iloc[int(np.nanargmax(inputs["auroc"].to_numpy()))]
                text = (
                    f"On {ds}, the FAMD ensemble of {len(inputs)} signals, fitted on "
                    f"{first['n_calibration']} calibration responses, reaches test AUROC "
                    f"{fmt(first['auroc'])} [{fmt(first['auroc_ci_low'])}, "
                    f"{fmt(first['auroc_ci_high'])}] on {first['n']} responses, against "
                    f"{fmt(best['auroc'])} for its best input ({best['signal']})"
                )
                left_out = notes[ds].uncovered if ds in notes else ()
                if left_out:
                    text += f"; left out for want of calibration scores: {', '.join(left_out)}"
                sentences.append(text + ".")
            more = ens["dataset"].nunique() - 2
            if more > 0:
                sentences.append(f"The ensemble table has {more} more dataset(s).")
        sentences += _not_run_sentences(notes)
        return " ".join(sentences) or "No dataset had two signals to correlate or combine."


CAPTIONS = {
    "correlation": "Spearman rho between every pair of signals (detector values; labeler "
    "scores, or 0/1 verdicts where a labeler has no score) on the n items both scored.",
    "ensemble": "Test-split AUROC and PR-AUC ({b.confidence:.0%} paired bootstrap CIs, "
    "{b.n_resamples} resamples) of the FAMD ensemble (fitted on the calibration split, oriented by "
    "{s.reference} labels there) and of each input signal on the same items.",
    "loadings": "First FAMD component: each signal's loading (Pearson correlation with the "
    "oriented component on the calibration items; > 0 pushes towards hallucinated) and its "
    "contribution (% of the component's inertia); component_inertia_pct = its share of the "
    "total inertia.",
    "ensemble_scores": "The ensemble's value (higher = more likely hallucinated) for each "
    "test-split response with every input signal, reusable as a detector score.",
}
