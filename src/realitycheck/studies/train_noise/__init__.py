"""Train noise: supervised detectors trained on clean and on noisy labels, tested on clean ones.

Parts: ``__init__`` (the training-label sets and the measurement), ``_report``
(the table, figures and finding).
"""

from __future__ import annotations

import fnmatch
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from realitycheck.analysis import CALIBRATION, Bootstrap, split_of
from realitycheck.detectors import RunContext, SupervisedDetector, detectors, take, training_problem
from realitycheck.metrics import bootstrap_distribution
from realitycheck.params import Interval, NonEmptyStr, SequenceOf, as_tuple, param, param_error
from realitycheck.records import Example, Response
from realitycheck.records.keys import is_human
from realitycheck.store import RunData, StudyResult
from realitycheck.studies import Study, quiet, study
from realitycheck.studies.label_noise import (
    apply_proposal,
    dissenting_label_proposal,
    random_flips,
)
from realitycheck.studies.train_noise._report import figure, finding, table

__all__ = ["TrainLabels", "TrainNoise"]


@dataclass(frozen=True)
class TrainLabels:
    """One set of training labels over a dataset's responses (NaN = no label; test: NaN).

    Attributes:
        condition: ``clean``, ``random_flip``, ``dissenting_worker``,
            ``dissenting_label`` or ``weak_supervision``.
        source: The annotator or labeler the noise comes from (``""``: none).
        raters: Who disagrees for ``dissenting_label``: ``annotators`` or
            ``automatic labelers``; ``""`` otherwise.
        labels: 1.0 / 0.0 / NaN per response of the dataset.
        rate: Share of the labelled calibration responses whose label differs from the clean one.
    """

    condition: str
    source: str
    raters: str
    labels: np.ndarray
    rate: float


@study("train_noise")
@dataclass(frozen=True, kw_only=True)
class TrainNoise(Study):
    """Supervised detectors trained on clean and on noisy labels, all tested on clean labels.

    Paper 002's central experiment ("Rethinking Evaluation for LLM
    Hallucination Detection", Trivia++): supervised methods "are trained on
    clean and noisy labels separately and tested on the same clean test set".
    Per dataset, each supervised detector of ``detectors`` (``probe``,
    ``finetuned``; the ``train_labels`` of its key is ignored here) is
    trained on the calibration split (:func:`realitycheck.analysis.split_of`)
    with each set of training labels, and scores the test split, where the
    clean ``reference`` labels measure it. The training-label sets follow
    paper 002's four noise types, as the ``label_noise`` study builds them
    (there for test labels), here on the calibration split only:

    - ``clean``: the reference labels;
    - ``random_flip``: exactly ``rate`` of the labelled calibration responses
      flipped (one seeded draw);
    - ``dissenting_worker``: one annotator's verdicts wherever it gave one,
      each annotator in turn, capped at ``rate`` changed labels;
    - ``dissenting_label``: where raters disagree, the minority verdict
      (a tie: the verdict opposite to the reference), capped at ``rate``; the
      raters are the annotators (``human:<name>``, at least two) or, for a
      dataset with one human label per response, its automatic labelers when
      it has two or more (column ``raters`` says which);
    - ``weak_supervision``: the verdicts of each automatic labeler matching
      ``weak_labelers`` (``fnmatch`` patterns), uncapped, where it has one.

    Each trained detector gets its AUROC and PR-AUC on the clean test labels
    (in [0, 1], higher = better) and the **drop** ``clean AUROC - AUROC``
    (positive = the noisy labels made a worse detector), with percentile
    bootstrap CIs over test responses, paired: every condition is measured
    on the same resamples, so the drop's CI is that of a difference. The CIs
    hold the trained models fixed (they do not cover training randomness).
    A training set with fewer than the detector's ``min_train`` labels, or one
    class, is skipped with the reason; so is a dataset whose test labels have
    one class. The seed of the run's bootstrap also seeds the noise.

    Args:
        reference: The clean labels (training and test).
        detectors: Supervised detector keys, e.g.
            ``probe[embedding=false,scores="*"]`` (a probe on every stored score).
        rate: Random-flip rate and cap of the human-noise sets, in [0, 1].
        weak_labelers: Labeler keys (``fnmatch`` patterns) used as weak supervision.
        datasets: Dataset names (``fnmatch`` patterns) it trains on; the others
            are listed as skipped. Training on embeddings is costly, so a run
            can restrict it (the demo: FaithBench, RAGTruth, HaluEval-general).
    """

    detectors: tuple[str, ...] = param(
        ('probe[embedding=false,scores="*"]',),
        SequenceOf(NonEmptyStr(), min_length=1),
        convert=as_tuple,
        doc="supervised detector keys",
    )
    rate: float = param(0.15, Interval(float, 0, 1), doc="random-flip rate and cap")
    weak_labelers: tuple[str, ...] = param(
        ("*",), SequenceOf(NonEmptyStr()), convert=as_tuple, doc="weak-supervision labelers"
    )
    datasets: tuple[str, ...] = param(
        ("*",),
        SequenceOf(NonEmptyStr(), min_length=1),
        convert=as_tuple,
        doc="dataset names it trains on (fnmatch patterns)",
    )

    title: ClassVar[str] = "Train noise: supervised detectors trained on clean vs noisy labels"

    def __post_init__(self) -> None:
        """Check the parameters, then that every detector key builds a supervised detector."""
        super().__post_init__()
        for key in self.detectors:
            built = detectors.create_from_key(key)
            if not isinstance(built, SupervisedDetector):
                names = sorted(
                    n for n in detectors.names() if issubclass(detectors.get(n), SupervisedDetector)
                )
                raise param_error(
                    "detectors",
                    self.name,
                    f"a list of supervised detector keys ({', '.join(names)})",
                    got=key,
                    hint=f"{key!r} is not trained on labels.",
                )

    def _supervised(self) -> list[SupervisedDetector]:
        out = []
        for key in self.detectors:
            built = detectors.create_from_key(key)
            if isinstance(built, SupervisedDetector):
                out.append(built)
        return out

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Train every detector on every label set of every dataset; measure on clean labels."""
        rows: list[dict[str, Any]] = []
        figures, skipped = [], []
        by_id = {r.response_id: r for r in data.store.read(Response)}
        examples = {e.example_id: e for e in data.store.read(Example)}
        run = RunContext(examples=examples, store=data.store)
        for ds in data.datasets:
            if not any(fnmatch.fnmatchcase(ds, p) for p in self.datasets):
                skipped.append(f"{ds}: not in datasets={list(self.datasets)}")
                continue
            ref = data.human_reference(ds, self.reference)
            if ref is None:
                skipped.append(f"{ds}: no {self.reference!r} labels")
                continue
            frame = data.frame(ds)
            responses = [by_id[rid] for rid in frame.index]
            y = data.verdicts(ds)[ref].to_numpy()
            calibration = split_of(frame["example_id"].tolist()) == CALIBRATION
            label_sets = list(self._label_sets(data, ds, ref, y, calibration, bootstrap.seed))
            skipped += self._unavailable(data, ds, ref)
            for det in self._supervised():
                found = self._measure(
                    det, ds, responses, run, y, calibration, label_sets, bootstrap, skipped
                )
                if found:
                    rows += found
                    figures.append(figure(ds, det.key, found))
        return self._result(
            finding(rows, self.rate, _clean_name(self.reference)),
            tables=[table(rows)],
            figures=figures,
            skipped=skipped,
        )

    # -- training-label sets ---------------------------------------------------------------

    def _rng_seed(self, seed: int, dataset: str, *parts: int) -> int:
        rng = np.random.default_rng([seed, zlib.crc32(dataset.encode("utf-8")), *parts])
        return int(rng.integers(2**32))

    def _weak(self, data: RunData, ds: str, ref: str) -> list[str]:
        autos = [k for k in data.labelers_of(ds) if k != ref and not is_human(k)]
        return [k for k in autos if any(fnmatch.fnmatchcase(k, p) for p in self.weak_labelers)]

    def _label_sets(
        self,
        data: RunData,
        ds: str,
        ref: str,
        y: np.ndarray,
        calibration: np.ndarray,
        seed: int,
    ) -> Iterator[TrainLabels]:
        y_cal = np.where(calibration, y, np.nan)
        labelled = ~np.isnan(y_cal)

        def changed(labels: np.ndarray) -> float:
            both = labelled & ~np.isnan(labels)
            return (
                float((labels[both] != y_cal[both]).sum() / labelled.sum())
                if labelled.any()
                else np.nan
            )

        yield TrainLabels("clean", "", "", y_cal, 0.0)
        flipped = random_flips(y_cal, self.rate, 1, self._rng_seed(seed, ds, 1))[0]
        yield TrainLabels("random_flip", "", "", flipped, changed(flipped))
        verdicts = data.verdicts(ds)
        annotators = data.annotators_of(ds)
        autos = [k for k in data.labelers_of(ds) if k != ref and not is_human(k)]
        raters, kind = (
            (annotators, "annotators") if len(annotators) >= 2 else (autos, "automatic labelers")
        )
        proposals: list[tuple[str, str, str, np.ndarray, float | None]] = []
        if len(raters) >= 2:
            minority = dissenting_label_proposal(y_cal, verdicts[raters].to_numpy())
            proposals.append(("dissenting_label", "", kind, minority, self.rate))
        proposals += [
            ("dissenting_worker", a, "", verdicts[a].to_numpy(), self.rate) for a in annotators
        ]
        for k, (name, source, who, proposal, cap) in enumerate(proposals):
            noisy = apply_proposal(
                y_cal,
                np.where(calibration, proposal, np.nan),
                cap=cap,
                seed=self._rng_seed(seed, ds, 7, k),
            )
            yield TrainLabels(name, source, who, noisy.labels, noisy.rate)
        for key in self._weak(data, ds, ref):
            weak = np.where(calibration, verdicts[key].to_numpy(), np.nan)
            yield TrainLabels("weak_supervision", key, "", weak, changed(weak))

    def _unavailable(self, data: RunData, ds: str, ref: str) -> list[str]:
        annotators = data.annotators_of(ds)
        autos = [k for k in data.labelers_of(ds) if k != ref and not is_human(k)]
        out = []
        if len(annotators) < 2 and len(autos) < 2:
            out.append(
                f"{ds}: dissenting_label (fewer than two annotators and fewer than two "
                "automatic labelers to disagree)"
            )
        if not annotators:
            out.append(f"{ds}: dissenting_worker (no per-annotator labels)")
        if not self._weak(data, ds, ref):
            out.append(
                f"{ds}: weak_supervision (no automatic labeler matches {list(self.weak_labelers)})"
            )
        return out

    # -- training and measurement ----------------------------------------------------------

    def _measure(
        self,
        det: SupervisedDetector,
        ds: str,
        responses: Sequence[Response],
        run: RunContext,
        y: np.ndarray,
        calibration: np.ndarray,
        label_sets: Sequence[TrainLabels],
        bootstrap: Bootstrap,
        skipped: list[str],
    ) -> list[dict[str, Any]]:
        inputs, errors = det.inputs(responses, run)
        valid = np.array([not e for e in errors], dtype=bool)
        test = np.flatnonzero(~calibration & valid & ~np.isnan(y))
        y_test = y[test]
        if y_test.size == 0 or y_test.min() == y_test.max():
            skipped.append(f"{ds}: {det.key} (its clean test labels have fewer than two classes)")
            return []
        made, predictions = [], []
        for labels in label_sets:
            rows = np.flatnonzero(calibration & valid & ~np.isnan(labels.labels))
            y_train = labels.labels[rows]
            problem = training_problem(
                det.name, ds, y_train, train_labels=_name(labels), min_train=det.min_train
            )
            if problem:
                skipped.append(f"{ds}: {det.key}, {_name(labels)}: {problem}")
                continue
            model = det.fit(take(inputs, rows.tolist()), y_train)
            predictions.append(det.predict(model, take(inputs, test.tolist())))
            made.append((labels, rows))
        if not made or made[0][0].condition != "clean":
            return []
        stacked = np.vstack(predictions)
        out = []
        resampled = {}
        with quiet():
            for metric in ("auroc", "pr_auc"):
                resampled[metric] = bootstrap_distribution(
                    metric, y_test, stacked, n_resamples=bootstrap.n_resamples, seed=bootstrap.seed
                )
        auroc = resampled["auroc"]
        pr_auc = resampled["pr_auc"]
        point_auroc, point_pr = _points(y_test, stacked)
        for j, (labels, rows) in enumerate(made):
            drop = auroc[0] - auroc[j]
            out.append(
                {
                    "dataset": ds,
                    "detector": det.key,
                    "condition": labels.condition,
                    "source": labels.source,
                    "raters": labels.raters,
                    "noise_rate": labels.rate,
                    "n_train": int(rows.size),
                    "n_train_positive": int(labels.labels[rows].sum()),
                    "n_test": int(test.size),
                    "n_test_positive": int(y_test.sum()),
                    "auroc": point_auroc[j],
                    **_interval("auroc", auroc[j], bootstrap.confidence),
                    "drop": point_auroc[0] - point_auroc[j],
                    **_interval("drop", drop, bootstrap.confidence),
                    "pr_auc": point_pr[j],
                    **_interval("pr_auc", pr_auc[j], bootstrap.confidence),
                }
            )
        return out


def _clean_name(reference: str) -> str:
    """How the finding names the clean labels: "human" or the reference labeler's key."""
    return "human" if is_human(reference) else reference


def _name(labels: TrainLabels) -> str:
    return labels.condition + (f" ({labels.source})" if labels.source else "")


def _points(y: np.ndarray, stacked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from realitycheck.metrics import auroc, pr_auc

    return (
        np.array([auroc(y, s) for s in stacked], dtype=float),
        np.array([pr_auc(y, s) for s in stacked], dtype=float),
    )


def _interval(name: str, values: np.ndarray, confidence: float) -> dict[str, float]:
    """Percentile interval of bootstrap values (NaN resamples left out)."""
    ok = values[~np.isnan(values)]
    if not ok.size:
        return {f"{name}_ci_low": np.nan, f"{name}_ci_high": np.nan}
    low, high = np.quantile(ok, [(1 - confidence) / 2, (1 + confidence) / 2])
    return {f"{name}_ci_low": float(low), f"{name}_ci_high": float(high)}
