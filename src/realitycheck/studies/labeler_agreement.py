"""Labeler agreement: each automatic labeler judged against the reference (human) labels."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap, split_of
from realitycheck.metrics import bootstrap_ci, choose_threshold, f1_weighted
from realitycheck.store import RunData, StudyResult, StudyTable
from realitycheck.studies._agreement_parts import (
    TABLES,
    agreement_finding,
    both_right,
    empty_table,
    error_causes,
    label_distribution,
    plot_errors,
    plot_kappa,
    reference_words,
)
from realitycheck.studies._base import Study, study
from realitycheck.studies._shift_common import (
    LEXICAL_LABELERS,
    automatic_labelers,
    base_name,
    check_fraction,
    check_int,
    confusion_ci,
    quiet,
    similarity_of,
)

__all__ = ["LabelerAgreement"]

_CONFUSION = ("precision", "recall", "f1", "accuracy", "cohen_kappa", "f1_weighted")
_CONFIDENCE = 0.95


@study("labeler_agreement")
@dataclass(frozen=True, kw_only=True)
class LabelerAgreement(Study):
    """How well each automatic labeler reproduces the reference (human) labels.

    Follows Janiak et al. (*The Illusion of Progress*, Table 1 and Appendix G)
    and Kulkarni et al. (*The Mirage of Hallucination Detection*, Table 1,
    Figure 2, Table 11). Positive class = hallucinated. For every dataset with
    reference labels and every automatic labeler on it:

    * **agreement** — precision, recall, F1 (of the hallucinated class),
      accuracy (= agreement), Cohen's kappa ([-1, 1], 0 = chance) and weighted
      F1 of its verdicts, and PR-AUC of its continuous score where it has one
      (chance = the share of hallucinated items); each with a 95% percentile
      bootstrap CI over the items both labelled.
    * **threshold** — the threshold maximising weighted F1, chosen on the
      *calibration* split (``split_of`` by example id) and applied to the
      *test* split. It is set on the labeler's raw similarity where its
      ``raw`` text holds one (``rouge_l_f1=0.46``: hallucinated iff
      similarity <= threshold), else on its score (hallucinated iff score >=
      threshold). The labeler's own verdicts are scored on the same test items.
    * **distribution** — share of the dataset's responses labelled
      hallucinated, correct, and missing (no verdict), the reference included.
    * **both_right** — for each pair of labelers, on the items all three
      labelled: share both agree with the reference, only one does, neither.
    * **errors** — for the lexical labelers (ROUGE-L, BLEU, token F1, exact
      match, knowledge F1) each error gets one cause, in this order. A false
      positive (labeler: hallucinated, reference: correct) is *long but
      correct* when the response has more words than the ``long_quantile``
      quantile of the dataset's response lengths, or more than ``long_ratio``
      times the words of the example's longest reference answer; otherwise it
      is a *paraphrase with no overlap* when the labeler's similarity is below
      ``low_overlap`` and, if an ``embedding_similarity`` labeler ran on the
      dataset, that labeler judged it correct; otherwise *other false
      positive*. A false negative (labeler: correct, reference: hallucinated)
      is a *wrong answer with high overlap* when the similarity is at least
      ``high_overlap``, otherwise *other false negative*.

    Args:
        reference: The labeler taken as ground truth.
        n_resamples: Bootstrap resamples per confidence interval.
        seed: Seed of the bootstrap.
        calibration_fraction: Share of examples in the calibration split.
        long_quantile: Quantile of response lengths above which a response is long.
        long_ratio: A response longer than this many times its longest reference is long.
        low_overlap: Similarity below which a false positive has "no overlap".
        high_overlap: Similarity from which a false negative has "high overlap".
    """

    n_resamples: int = 1000
    seed: int = 0
    calibration_fraction: float = 0.5
    long_quantile: float = 0.75
    long_ratio: float = 3.0
    low_overlap: float = 0.1
    high_overlap: float = 0.5
    title: ClassVar[str] = "Labeler agreement with human labels"

    def __post_init__(self) -> None:
        check_int(self.n_resamples, "n_resamples", self.name, low=1)
        check_int(self.seed, "seed", self.name, low=0)
        check_fraction(self.calibration_fraction, "calibration_fraction", self.name)
        check_fraction(self.long_quantile, "long_quantile", self.name)
        check_fraction(self.long_ratio, "long_ratio", self.name, high=float("inf"))
        check_fraction(self.low_overlap, "low_overlap", self.name, closed=True)
        check_fraction(self.high_overlap, "high_overlap", self.name, closed=True)

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Compare every automatic labeler with the reference on every dataset."""
        parts: dict[str, list[pd.DataFrame]] = {k: [] for k in TABLES}
        skipped = []
        for dataset in data.datasets:
            have = data.labelers_of(dataset)
            if self.reference not in have:
                skipped.append(f"{dataset}: no {self.reference!r} labels")
                continue
            autos = automatic_labelers(have, self.reference)
            if not autos:
                skipped.append(f"{dataset}: no automatic labeler")
                continue
            for name, frame in self._dataset(data, dataset, autos).items():
                parts[name].append(frame)
        frames = {
            k: pd.concat(v, ignore_index=True) if v else pd.DataFrame(columns=TABLES[k])
            for k, v in parts.items()
        }
        tables = [StudyTable(k, frames[k][TABLES[k]], self._caption(k)) for k in TABLES]
        figures = []
        if not frames["agreement"].empty:
            figures.append(plot_kappa(frames["agreement"], self.reference))
        if not frames["errors"].empty:
            figures.append(plot_errors(frames["errors"]))
        return self._result(
            agreement_finding(frames, self.reference),
            tables=tables,
            figures=figures,
            skipped=skipped,
        )

    def _dataset(self, data: RunData, dataset: str, autos: list[str]) -> dict[str, pd.DataFrame]:
        frame = data.frame(dataset)
        verdicts = data.verdicts(dataset)
        scores = data.label_scores(dataset)
        y = verdicts[self.reference]
        labels = data.labels[data.labels["response_id"].isin(frame.index)]
        split = pd.Series(
            split_of(frame["example_id"].tolist(), self.calibration_fraction), index=frame.index
        )
        embedding = [k for k in data.labelers_of(dataset) if base_name(k) == "embedding_similarity"]
        long_cut = float(frame["length_words"].quantile(self.long_quantile))
        ref_words = reference_words(data, frame)
        agreement, thresholds, errors = [], [], []
        for labeler in autos:
            own = labels[labels["labeler"] == labeler].set_index("response_id")
            similarity = similarity_of(own["raw"]).reindex(frame.index)
            both = y.notna() & verdicts[labeler].notna()
            truth, pred = y[both].to_numpy() == 1, verdicts.loc[both, labeler].to_numpy() == 1
            agreement.append(
                self._agreement(
                    dataset,
                    labeler,
                    truth,
                    pred,
                    scores[labeler][both],
                    int((~both & y.notna()).sum()),
                )
            )
            thresholds.append(
                self._threshold(
                    dataset, labeler, own, y, verdicts[labeler], scores[labeler], similarity, split
                )
            )
            if base_name(labeler) in LEXICAL_LABELERS:
                errors.append(
                    error_causes(
                        words=frame.loc[both, "length_words"],
                        truth=truth,
                        pred=pred,
                        similarity=similarity[both],
                        reference_words=ref_words[both],
                        embedding_correct=(verdicts.loc[both, embedding[0]] == 0)
                        if embedding
                        else None,
                        long_cut=long_cut,
                        long_ratio=self.long_ratio,
                        low_overlap=self.low_overlap,
                        high_overlap=self.high_overlap,
                    ).assign(dataset=dataset, labeler=labeler)
                )
        return {
            "agreement": pd.concat(agreement, ignore_index=True),
            "threshold": pd.DataFrame(thresholds),
            "distribution": label_distribution(dataset, verdicts[[self.reference, *autos]]),
            "both_right": both_right(dataset, y, verdicts[autos]),
            "errors": pd.concat(errors, ignore_index=True) if errors else empty_table("errors"),
        }

    def _agreement(
        self,
        dataset: str,
        labeler: str,
        truth: np.ndarray,
        pred: np.ndarray,
        score: pd.Series,
        n_excluded: int,
    ) -> pd.DataFrame:
        found = confusion_ci(
            truth,
            pred,
            _CONFUSION,
            n_resamples=self.n_resamples,
            confidence=_CONFIDENCE,
            seed=self.seed,
        )
        rows = [(m, *found[m], truth.size, int(truth.sum())) for m in _CONFUSION]
        scored = score.notna().to_numpy()
        kind = "continuous" if score[scored].nunique() > 2 else "binary"
        if kind == "continuous":
            with quiet():
                pr = bootstrap_ci(
                    "pr_auc",
                    truth[scored],
                    score[scored].to_numpy(),
                    n_resamples=self.n_resamples,
                    seed=self.seed,
                )
            bounds = (float(pr.value), float(pr.ci_low), float(pr.ci_high))
            rows.append(("pr_auc", *bounds, int(scored.sum()), int(truth[scored].sum())))
        columns = ["metric", "value", "ci_low", "ci_high", "n", "n_positive"]
        out = pd.DataFrame(rows, columns=columns)
        return out.assign(
            dataset=dataset,
            labeler=labeler,
            reference=self.reference,
            kind=kind,
            n_excluded=n_excluded,
        )

    def _threshold(
        self,
        dataset: str,
        labeler: str,
        own: pd.DataFrame,
        y: pd.Series,
        verdict: pd.Series,
        score: pd.Series,
        similarity: pd.Series,
        split: pd.Series,
    ) -> dict[str, object]:
        spec = json.loads(own["spec"].iloc[0]) if len(own) else {}
        own_threshold = spec.get("params", {}).get("threshold") if isinstance(spec, dict) else None
        on_similarity = bool(similarity.notna().any())
        x = -similarity if on_similarity else score
        usable = y.notna() & x.notna()
        cal, test = usable & (split == "calibration"), usable & (split == "test")
        row: dict[str, object] = {
            "dataset": dataset,
            "labeler": labeler,
            "own_rule": (
                f"similarity < {own_threshold:g}"
                if on_similarity and own_threshold is not None
                else "its verdict"
            ),
            "threshold_on": "similarity" if on_similarity else "score",
            "n_calibration": int(cal.sum()),
            "n_test": int(test.sum()),
            "best_threshold": np.nan,
            "best_rule": "",
            "f1_weighted_calibration": np.nan,
            "f1_weighted_test": np.nan,
            "f1_weighted_test_own": np.nan,
            "note": "",
        }
        own_test = test & verdict.notna()
        if own_test.any():
            row["f1_weighted_test_own"] = f1_weighted(y[own_test] == 1, verdict[own_test] == 1)
        if not x.notna().any():
            row["note"] = "binary verdicts only; no score to threshold"
            return row
        if not cal.any() or not test.any():
            row["note"] = "the calibration or the test split is empty"
            return row
        with quiet():
            t = choose_threshold(y[cal] == 1, x[cal], objective="f1_weighted")
        row["best_threshold"] = -t if on_similarity else t
        row["best_rule"] = f"similarity <= {-t:.4g}" if on_similarity else f"score >= {t:.4g}"
        row["f1_weighted_calibration"] = f1_weighted(y[cal] == 1, x[cal] >= t)
        row["f1_weighted_test"] = f1_weighted(y[test] == 1, x[test] >= t)
        return row

    def _caption(self, table: str) -> str:
        ref = self.reference
        return {
            "agreement": f"Each automatic labeler against {ref}: precision, recall, F1 of the "
            "hallucinated class, accuracy (agreement), Cohen's kappa and weighted F1 of its "
            "verdicts; PR-AUC of its score where continuous. 95% bootstrap CIs "
            f"({self.n_resamples} resamples, seed {self.seed}).",
            "threshold": "Threshold maximising weighted F1, chosen on the calibration split "
            f"({self.calibration_fraction:.0%} of examples) and scored on the test split, next "
            "to the labeler's own verdicts on the same test items.",
            "distribution": "Share of each dataset's responses labelled hallucinated, correct "
            "or left without a verdict.",
            "both_right": f"For each pair of labelers, on items labelled by both and by {ref}: "
            f"share on which both agree with {ref}, only one does, or neither.",
            "errors": "Errors of the lexical labelers by cause: long but correct (false "
            f"positive longer than the {self.long_quantile:.0%} length quantile or "
            f"{self.long_ratio:g}x the longest reference), paraphrase with no overlap (false "
            f"positive, not long, similarity < {self.low_overlap:g}, and judged correct by "
            "embedding_similarity where it ran), wrong answer with high overlap (false negative, "
            f"similarity >= {self.high_overlap:g}); the rest are 'other'.",
        }[table]
