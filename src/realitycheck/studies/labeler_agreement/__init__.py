"""Labeler agreement: each automatic labeler judged against the reference (human) labels.

Parts: ``_errors`` (a cause for each error of a lexical labeler), ``_report``
(small tables, the kappa figure, the finding).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap, confusion_ci, split_of
from realitycheck.metrics import bootstrap_ci, choose_threshold, f1_weighted
from realitycheck.params import Interval, param
from realitycheck.store import RunData, StudyResult, StudyTable
from realitycheck.studies import Study, automatic_labelers, base_name, quiet, study
from realitycheck.studies.labeler_agreement._errors import (
    LEXICAL_LABELERS,
    error_causes,
    plot_errors,
    reference_words,
)
from realitycheck.studies.labeler_agreement._report import (
    TABLES,
    agreement_finding,
    both_right,
    empty_table,
    label_distribution,
    plot_kappa,
)

__all__ = ["SIMILARITY_LABELERS", "LabelerAgreement", "similarity_of"]

_CONFUSION = ("precision", "recall", "f1", "accuracy", "cohen_kappa", "f1_weighted")
_SHARE = Interval(float, 0, 1, closed="neither")
_SIMILARITY = Interval(float, 0, 1)

SIMILARITY_LABELERS: frozenset[str] = LEXICAL_LABELERS | {"embedding_similarity"}
"""Labelers that threshold a similarity to the truth; their ``score`` is ``1 - similarity``."""


_DECIMALS = 12
"""``1 - (1 - s)`` differs from ``s`` by a rounding error (0.1 comes back as
0.09999999999999998); rounding to 12 decimals undoes it, so an item never
crosses a cut such as ``low_overlap = 0.1`` by floating-point noise."""


def similarity_of(labeler: str, score: pd.Series) -> pd.Series:
    """A similarity labeler's similarity (higher = closer to the truth), read off its score.

    The labelers of :data:`SIMILARITY_LABELERS` store ``score = 1 - similarity``
    (higher = more likely hallucinated), so the similarity is ``1 - score``
    (rounded to 12 decimals to undo the subtraction's rounding error); any
    other labeler has none (all NaN).
    """
    if base_name(labeler) not in SIMILARITY_LABELERS:
        return pd.Series(np.nan, index=score.index)
    return (1.0 - score).round(_DECIMALS)


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
      (chance = the share of hallucinated items); each with a percentile
      bootstrap CI over the items both labelled (the run's bootstrap settings).
    * **threshold** — the threshold maximising weighted F1, chosen on the
      *calibration* split (``split_of`` by example id) and applied to the
      *test* split. It is set on the labeler's similarity where it has one
      (the labelers of :data:`SIMILARITY_LABELERS`: hallucinated iff
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
        calibration_fraction: Share of examples in the calibration split.
        long_quantile: Quantile of response lengths above which a response is long.
        long_ratio: A response longer than this many times its longest reference is long.
        low_overlap: Similarity below which a false positive has "no overlap".
        high_overlap: Similarity from which a false negative has "high overlap".
    """

    calibration_fraction: float = param(0.5, _SHARE)
    long_quantile: float = param(0.75, _SHARE)
    long_ratio: float = param(3.0, Interval(float, 0, float("inf"), closed="neither"))
    low_overlap: float = param(0.1, _SIMILARITY)
    high_overlap: float = param(0.5, _SIMILARITY)
    title: ClassVar[str] = "Labeler agreement with the reference labels"

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
            for name, frame in self._dataset(data, dataset, autos, bootstrap).items():
                parts[name].append(frame)
        frames = {
            k: pd.concat(v, ignore_index=True) if v else pd.DataFrame(columns=TABLES[k])
            for k, v in parts.items()
        }
        tables = [StudyTable(k, frames[k][TABLES[k]], self._caption(k, bootstrap)) for k in TABLES]
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

    def _dataset(
        self, data: RunData, dataset: str, autos: list[str], bootstrap: Bootstrap
    ) -> dict[str, pd.DataFrame]:
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
            similarity = similarity_of(labeler, scores[labeler])
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
                    bootstrap,
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
        bootstrap: Bootstrap,
    ) -> pd.DataFrame:
        found = confusion_ci(truth, pred, _CONFUSION, bootstrap)
        rows = [(m, *found[m], truth.size, int(truth.sum())) for m in _CONFUSION]
        scored = score.notna().to_numpy()
        kind = "continuous" if score[scored].nunique() > 2 else "binary"
        if kind == "continuous":
            with quiet():
                pr = bootstrap_ci(
                    "pr_auc",
                    truth[scored],
                    score[scored].to_numpy(),
                    n_resamples=bootstrap.n_resamples,
                    confidence=bootstrap.confidence,
                    seed=bootstrap.seed,
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

    def _caption(self, table: str, bootstrap: Bootstrap) -> str:
        ref = self.reference
        return {
            "agreement": f"Each automatic labeler against {ref}: precision, recall, F1 of the "
            "hallucinated class, accuracy (agreement), Cohen's kappa and weighted F1 of its "
            f"verdicts; PR-AUC of its score where continuous. {bootstrap.confidence:.0%} bootstrap "
            f"CIs ({bootstrap.n_resamples} resamples, seed {bootstrap.seed}).",
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
