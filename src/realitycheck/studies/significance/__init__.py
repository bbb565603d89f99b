"""Significance: does a score or label differ across groups, and do two detectors differ?

Parts: ``_groups`` (normality check, test choice, post-hoc tests),
``_report`` (captions, the group figure, the finding). DeLong's test and the
paired bootstrap are :func:`realitycheck.metrics.delong` and
:func:`realitycheck.metrics.paired_auroc_bootstrap`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from realitycheck.analysis import Bootstrap
from realitycheck.metrics import (
    PairedBootstrap,
    UndefinedMetricWarning,
    auroc,
    delong,
    paired_auroc_bootstrap,
    wilson_interval,
)
from realitycheck.params import AnyOf, Interval, OneOf, OrNone, Satisfies, param
from realitycheck.records.model_info import ModelInfo
from realitycheck.store import RunData, StudyResult, StudyTable
from realitycheck.studies import Study, study
from realitycheck.studies.significance._groups import NOT_APPLICABLE, compare_groups
from realitycheck.studies.significance._report import CAPTIONS, finding, group_figure

__all__ = ["Significance", "group_of_models"]

Paired = Literal["auto", "yes", "no"]

GROUPINGS = (
    "model", "task", "decoding", "prompt_variant", "family", "size_bin", "instruction_tuned",
)  # fmt: skip
MODEL_FACTORS = ("family", "size_bin", "instruction_tuned")
SIZE_BINS = ((3e9, "<3B"), (10e9, "3-10B"), (30e9, "10-30B"), (float("inf"), ">=30B"))
_FROM_METADATA = (
    "from the run's model metadata (a models file given with --models, or the run "
    "config's [models] table), never from the model's name"
)
RULES = {
    "family": f"the model's family {_FROM_METADATA}",
    "size_bin": f"the model's size in parameters {_FROM_METADATA}, binned as <3B, 3-10B, "
    "10-30B, >=30B",
    "instruction_tuned": f"'tuned' or 'base' {_FROM_METADATA}",
}


def _factor(info: ModelInfo | None, grouping: str) -> str | None:
    if info is None:
        return None
    if grouping == "family":
        return info.family
    if grouping == "instruction_tuned":
        return (
            None
            if info.instruction_tuned is None
            else ("tuned" if info.instruction_tuned else "base")
        )
    if info.size is None:
        return None
    return next(label for edge, label in SIZE_BINS if info.size < edge)


def group_of_models(models: pd.Series, grouping: str, info: Mapping[str, ModelInfo]) -> pd.Series:
    """Return each model's ``family``, ``size_bin`` or ``instruction_tuned`` group from ``info``.

    ``info`` is the run's model metadata (:attr:`realitycheck.store.RunData.models`);
    a model without it (or without that field) gets None: unknown, left out of the test.
    """
    return models.map(lambda m: _factor(info.get(str(m)), grouping))


def _rule(grouping: str, models: pd.Series, groups: pd.Series) -> str:
    """The grouping's rule, naming the models left out as unknown."""
    rule = RULES.get(grouping, "")
    if grouping not in MODEL_FACTORS:
        return rule
    unknown = sorted({str(m) for m in models[groups.isna()].dropna().unique()})
    if unknown:
        shown = ", ".join(unknown[:5]) + (
            f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        )
        rule += f"; unknown (not in the metadata), so left out: {shown}"
    return rule


def _meta_value(text: Any, key: str) -> str | None:
    try:
        meta = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return None
    value = meta.get(key) if isinstance(meta, dict) else None
    return None if value is None or value == "" else str(value)


def _groups(frame: pd.DataFrame, grouping: str, info: Mapping[str, ModelInfo]) -> pd.Series:
    if grouping in MODEL_FACTORS:
        return group_of_models(frame["model"], grouping, info)
    if grouping.startswith("meta:"):
        key = grouping.split(":", 1)[1]
        return frame["meta"].map(lambda t: _meta_value(t, key))
    return frame[grouping].map(lambda v: None if v is None or v == "" else str(v))


def _pair(item: Any) -> str | None:
    """``A vs B`` (or a 2-item sequence) as ``"A vs B"``; None if it is not a pair of keys."""
    parts = item.split(" vs ") if isinstance(item, str) else item
    if not isinstance(parts, list | tuple) or len(parts) != 2:
        return None
    if not all(isinstance(p, str) and p.strip() for p in parts):
        return None
    return f"{parts[0].strip()} vs {parts[1].strip()}"


def _pairs_of(compare: Any) -> Any:
    """Detector pairs as ``"A vs B"`` strings (anything else unchanged, for the check)."""
    if compare is None:
        return None
    items = [compare] if isinstance(compare, str) else compare
    if not isinstance(items, list | tuple):
        return compare
    pairs = [_pair(item) for item in items]
    return compare if None in pairs else tuple(pairs)


def _is_pairs(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(p, str) for p in value)


def _is_value(value: Any) -> bool:
    return isinstance(value, str) and value not in ("", "hallucinated:")


def _is_meta(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("meta:") and len(value) > 5


@study("significance")
@dataclass(frozen=True, kw_only=True)
class Significance(Study):
    """Hypothesis tests: a value across groups, and two detectors' AUROCs on the same items.

    Follows the test choice of Kulkarni et al. (*The Mirage of Hallucination
    Detection*, §3 and appendix A.4). **Across groups** (per dataset): the
    value is ``value`` (``hallucinated:<labeler>`` = its 0/1 verdict, so the
    group mean is a hallucination rate in [0, 1]; a detector key = its score,
    higher = more likely hallucinated; a labeler key = its score); the groups
    are ``group``. The design is *matched* when at least half of the examples
    were answered by every group (``paired="auto"``); a matched test uses the
    examples answered by all groups, averaging several responses of one group
    to one example. Normality is checked per sample with Shapiro–Wilk (n from 3
    to 5,000; larger samples on a random 5,000; differences for two matched
    groups); 0/1 values skip it. Then: two groups → paired t-test / Wilcoxon
    signed-rank (matched) or Welch t-test / Mann–Whitney U; more →
    repeated-measures ANOVA + Bonferroni paired t-tests / Friedman + Nemenyi
    (matched) or one-way ANOVA + Tukey HSD / Kruskal–Wallis + Bonferroni
    Mann–Whitney U. **Detectors** (per dataset, against ``reference``):
    DeLong's test of two correlated AUROCs and a paired bootstrap of the
    AUROC difference (two-sided p = twice the smaller share of resamples on
    either side of 0); by default the best detector by AUROC against each other.
    All p-values are two-sided, in [0, 1]. The group means' intervals and the
    paired bootstrap use the run's bootstrap settings.

    Args:
        reference: Labels the detectors' AUROCs are measured against.
        value: ``hallucinated:<labeler>``, a detector key or a labeler key;
            ``None`` = ``hallucinated:<reference>``.
        group: ``model``, ``task``, ``decoding``, ``prompt_variant``,
            ``family``, ``size_bin``, ``instruction_tuned`` (these three from the
            run's model metadata; models without it are unknown and left out) or
            ``meta:<key>``.
        paired: ``auto``, ``yes`` or ``no``: whether groups are matched on example.
        alpha: Significance level of the normality checks and the tables.
        compare: Detector pairs ``"A vs B"``; None = best vs each other.
    """

    value: str | None = param(
        None,
        OrNone(Satisfies(_is_value, "a detector key, a labeler key or 'hallucinated:<labeler>'")),
    )
    group: str = param("model", AnyOf(OneOf(GROUPINGS), Satisfies(_is_meta, "'meta:<key>'")))
    paired: Paired = param("auto", OneOf(Paired))
    alpha: float = param(0.05, Interval(float, 0, 1, closed="neither"))
    compare: tuple[str, ...] | None = param(
        None,
        OrNone(Satisfies(_is_pairs, "detector pairs written 'A vs B' (or 2-item sequences)")),
        convert=_pairs_of,
    )
    title: ClassVar[str] = "Significance tests across groups and between detectors"

    @property
    def tested(self) -> str:
        """The value tested across groups: ``value``, or ``hallucinated:<reference>``."""
        return self.value or f"hallucinated:{self.reference}"

    def analyse(self, data: RunData, bootstrap: Bootstrap) -> StudyResult:
        """Test the value across groups and compare detectors, dataset by dataset."""
        tables: dict[str, list[pd.DataFrame]] = {
            k: [] for k in ("tests", "groups", "normality", "posthoc", "detectors")
        }
        figures, skipped = [], []
        for ds in data.datasets:
            values, why = self._values(data, ds)
            if values is None:
                skipped.append(f"{ds}: {why}")
            else:
                parts = self._across_groups(data, ds, values, bootstrap.confidence)
                for name, frame in parts.items():
                    tables[name].append(frame)
                test = parts["tests"].iloc[0]
                if test["test"] == NOT_APPLICABLE:
                    skipped.append(f"{ds}: group test {test['why']}")
                else:
                    figures.append(
                        group_figure(
                            ds,
                            parts["groups"],
                            test,
                            value=self.tested,
                            group=self.group,
                            confidence=bootstrap.confidence,
                        )
                    )
            rows, why = self._detectors(data, ds, bootstrap)
            if rows is None:
                skipped.append(f"{ds}: detector comparison: {why}")
            else:
                tables["detectors"].append(rows)
        frames = {
            k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in tables.items()
        }
        return self._result(
            finding(
                frames,
                value=self.tested,
                group=self.group,
                alpha=self.alpha,
                confidence=bootstrap.confidence,
            ),
            tables=[
                StudyTable(k, frames[k], CAPTIONS[k].format(s=self, b=bootstrap)) for k in frames
            ],
            figures=figures,
            skipped=skipped,
        )

    def _values(self, data: RunData, ds: str) -> tuple[pd.Series | None, str]:
        labelers, detectors = data.labelers_of(ds), data.detectors_of(ds)
        if self.tested.startswith("hallucinated:"):
            key = self.tested.split(":", 1)[1]
            if key in labelers:
                return data.verdicts(ds)[key], ""
            return None, f"no {key!r} labels"
        if self.tested in detectors:
            return data.detector_scores(ds)[self.tested], ""
        if self.tested in labelers:
            scores = data.label_scores(ds)[self.tested]
            if scores.notna().any():
                return scores, ""
            return None, f"{self.tested!r} gives no score (use 'hallucinated:{self.tested}')"
        return None, f"no detector or labeler {self.tested!r}"

    def _across_groups(
        self, data: RunData, ds: str, values: pd.Series, confidence: float
    ) -> dict[str, pd.DataFrame]:
        frame = data.frame(ds)
        groups = _groups(frame, self.group, data.models)
        result = compare_groups(
            values.to_numpy(dtype=float), groups.to_numpy(), frame["example_id"].to_numpy(),
            alpha=self.alpha, paired=self.paired,
        )  # fmt: skip
        key = {"dataset": ds, "value": self.tested, "grouping": self.group}
        test = key | {
            "test": result.test, "statistic": result.statistic, "p_value": result.p_value,
            "significant": bool(result.p_value < self.alpha), "design": result.design,
            "n_groups": result.n_groups, "n_values": result.n_values,
            "n_blocks": result.n_blocks, "n_no_group": int(groups.isna().sum()),
            "n_no_value": int(values.isna().sum()),
            "why": result.why, "group_rule": _rule(self.group, frame["model"], groups),
        }  # fmt: skip
        described = self._describe(values, groups, confidence)
        means = dict(zip(described["group"], described["mean"], strict=True))
        posthoc = result.posthoc.assign(
            mean_a=result.posthoc["group_a"].map(means),
            mean_b=result.posthoc["group_b"].map(means),
            significant=result.posthoc["p_adjusted"] < self.alpha,
        )
        return {
            "tests": pd.DataFrame([test]),
            "groups": described.assign(**key),
            "normality": result.normality.assign(**key),
            "posthoc": posthoc.assign(**key),
        }

    def _describe(self, values: pd.Series, groups: pd.Series, confidence: float) -> pd.DataFrame:
        from scipy import stats

        rows = []
        for name, part in values.groupby(groups.to_numpy()):
            x = part.dropna().to_numpy(dtype=float)
            if x.size and np.isin(x, (0.0, 1.0)).all():
                low, high = wilson_interval(int(x.sum()), x.size, confidence=confidence)
            elif x.size > 1 and np.ptp(x) > 0:
                t = stats.t.ppf(0.5 + confidence / 2, x.size - 1)
                half = t * x.std(ddof=1) / np.sqrt(x.size)
                low, high = x.mean() - half, x.mean() + half
            else:
                low = high = float("nan")
            rows.append(
                {"group": str(name), "n": x.size, "mean": x.mean() if x.size else np.nan}
                | {"ci_low": low, "ci_high": high}
                | {
                    "median": np.median(x) if x.size else np.nan,
                    "std": np.std(x, ddof=1) if x.size > 1 else np.nan,
                }
            )
        return pd.DataFrame(
            rows, columns=["group", "n", "mean", "ci_low", "ci_high", "median", "std"]
        )

    def _detectors(
        self, data: RunData, ds: str, bootstrap: Bootstrap
    ) -> tuple[pd.DataFrame | None, str]:
        if self.reference not in data.labelers_of(ds):
            return None, f"no {self.reference!r} labels"
        present = data.detectors_of(ds)
        if len(present) < 2:
            return None, f"{len(present)} detector(s), 2 needed"
        y = data.verdicts(ds)[self.reference]
        scores = data.detector_scores(ds)
        if self.compare is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                areas = {
                    d: auroc(y[ok], scores.loc[ok, d])
                    for d in present
                    if (ok := y.notna() & scores[d].notna()).any()
                }
            ranked = sorted((k for k in areas if areas[k] == areas[k]), key=lambda k: -areas[k])
            if len(ranked) < 2:
                return None, f"{len(ranked)} detector(s) with a defined AUROC, 2 needed"
            pairs = [(ranked[0], other) for other in ranked[1:]]
        else:
            split = [p.split(" vs ") for p in self.compare]
            pairs = [(a, b) for a, b in split if a in present and b in present]
        if not pairs:
            return None, "none of the requested detector pairs is on the dataset"
        rows = [self._compare(ds, y, scores, a, b, bootstrap) for a, b in pairs]
        out = pd.DataFrame(rows)
        out["delong_p_bonferroni"] = (out["delong_p"] * len(out)).clip(upper=1.0)
        return out, ""

    def _compare(
        self, ds: str, y: pd.Series, scores: pd.DataFrame, a: str, b: str, bootstrap: Bootstrap
    ) -> dict[str, Any]:
        ok = y.notna() & scores[a].notna() & scores[b].notna()
        labels = y[ok].to_numpy(dtype=float)
        both = scores.loc[ok, [a, b]].to_numpy(dtype=float).T
        test = delong(labels, both)
        if test.note.startswith("fewer"):  # too few items in a class: no bootstrap either
            boot = PairedBootstrap(np.nan, np.nan, np.nan, np.nan, 0)
        else:
            boot = paired_auroc_bootstrap(
                labels,
                both[0],
                both[1],
                n_resamples=bootstrap.n_resamples,
                confidence=bootstrap.confidence,
                seed=bootstrap.seed,
            )
        return {
            "dataset": ds, "reference": self.reference, "detector_a": a, "detector_b": b,
            "n": int(ok.sum()), "n_positive": int(labels.sum()),
            "auroc_a": test.auroc[0], "auroc_b": test.auroc[1], "difference": boot.difference,
            "delong_z": test.z, "delong_p": test.p_value,
            "bootstrap_ci_low": boot.ci_low, "bootstrap_ci_high": boot.ci_high,
            "bootstrap_p": boot.p_value, "n_resamples": boot.n_resamples, "note": test.note,
        }  # fmt: skip
