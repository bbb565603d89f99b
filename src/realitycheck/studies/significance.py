"""Significance: does a score or label differ across groups, and do two detectors differ?"""

from __future__ import annotations

import json
import numbers
import re
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import stats

from realitycheck.plots import new_figure, png_bytes
from realitycheck.analysis import Bootstrap
from realitycheck.errors import InvalidInputError
from realitycheck.metrics import UndefinedMetricWarning, auroc
from realitycheck.store import RunData, StudyFigure, StudyResult, StudyTable
from realitycheck.studies._base import Study, study
from realitycheck.studies._delong import PairedBootstrap, auroc_bootstrap, delong
from realitycheck.studies._tests import NOT_APPLICABLE, compare_groups, wilson_interval

__all__ = ["Significance", "group_of_models"]

GROUPINGS = ("model", "task", "decoding", "prompt_variant", "size_bin", "instruction_tuned")
SIZE = re.compile(r"(\d+(?:\.\d+)?)b(?![a-z])", re.IGNORECASE)
SIZE_BINS = ((3.0, "<3B"), (10.0, "3-10B"), (30.0, "10-30B"), (float("inf"), ">=30B"))
TUNED = re.compile(r"instruct|chat|-it(?![a-z0-9])", re.IGNORECASE)
RULES = {
    "size_bin": "size parsed from the model name (a number followed by 'b', e.g. 7b, 13B, "
    "1.5b) and binned as <3B, 3-10B, 10-30B, >=30B; models without one are left out",
    "instruction_tuned": "'tuned' when the model name contains 'instruct', 'chat' or '-it', "
    "else 'base'",
}


def group_of_models(models: pd.Series, grouping: str) -> pd.Series:
    """Derive ``size_bin`` or ``instruction_tuned`` from model names (None where unknown)."""
    if grouping == "instruction_tuned":
        return models.map(lambda m: "tuned" if TUNED.search(str(m)) else "base")

    def size_bin(name: Any) -> str | None:
        found = SIZE.search(str(name))
        if found is None:
            return None
        size = float(found.group(1))
        return next(label for edge, label in SIZE_BINS if size < edge)

    return models.map(size_bin)


def _meta_value(text: Any, key: str) -> str | None:
    try:
        meta = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return None
    value = meta.get(key) if isinstance(meta, dict) else None
    return None if value is None or value == "" else str(value)


def _groups(frame: pd.DataFrame, grouping: str) -> pd.Series:
    if grouping in ("size_bin", "instruction_tuned"):
        return group_of_models(frame["model"], grouping)
    if grouping.startswith("meta:"):
        key = grouping.split(":", 1)[1]
        return frame["meta"].map(lambda t: _meta_value(t, key))
    return frame[grouping].map(lambda v: None if v is None or v == "" else str(v))


def _pairs_of(compare: Any) -> tuple[str, ...] | None:
    if compare is None:
        return None
    items = [compare] if isinstance(compare, str) else list(compare)
    out = []
    for item in items:
        parts = item.split(" vs ") if isinstance(item, str) else list(item)
        if len(parts) != 2 or not all(isinstance(p, str) and p.strip() for p in parts):
            raise InvalidInputError(
                "The 'compare' parameter of significance must hold detector pairs written "
                f"'A vs B' (or 2-item sequences). Got {item!r} instead."
            )
        out.append(f"{parts[0].strip()} vs {parts[1].strip()}")
    return tuple(out)


def _fmt_p(p: float) -> str:
    return "p n/a" if np.isnan(p) else ("p < 0.001" if p < 0.001 else f"p = {p:.3f}")


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
    All p-values are two-sided, in [0, 1].

    Args:
        reference: Labels the detectors' AUROCs are measured against.
        value: ``hallucinated:<labeler>``, a detector key or a labeler key.
        group: ``model``, ``task``, ``decoding``, ``prompt_variant``,
            ``size_bin``, ``instruction_tuned`` or ``meta:<key>``.
        paired: ``auto``, ``yes`` or ``no``: whether groups are matched on example.
        alpha: Significance level of the normality checks and the tables.
        compare: Detector pairs ``"A vs B"``; None = best vs each other.
        n_resamples: Paired-bootstrap resamples.
        seed: Seed of the bootstrap.
    """

    value: str = "hallucinated:human"
    group: str = "model"
    paired: str = "auto"
    alpha: float = 0.05
    compare: tuple[str, ...] | None = None
    n_resamples: int = 1000
    seed: int = 0
    title: ClassVar[str] = "Significance tests across groups and between detectors"

    def __post_init__(self) -> None:
        def bad(name: str, wanted: str, got: Any) -> InvalidInputError:
            return InvalidInputError(
                f"The {name!r} parameter of significance must be {wanted}. Got {got!r} instead."
            )

        if not isinstance(self.value, str) or self.value in ("", "hallucinated:"):
            raise bad(
                "value", "a detector key, a labeler key or 'hallucinated:<labeler>'", self.value
            )
        valid_group = self.group in GROUPINGS or (
            isinstance(self.group, str) and self.group.startswith("meta:") and len(self.group) > 5
        )
        if not valid_group:
            raise bad("group", f"one of {list(GROUPINGS)} or 'meta:<key>'", self.group)
        if self.paired not in ("auto", "yes", "no"):
            raise bad("paired", "one of 'auto', 'yes', 'no'", self.paired)
        real = isinstance(self.alpha, numbers.Real) and not isinstance(self.alpha, bool)
        if not (real and 0 < self.alpha < 1):
            raise bad("alpha", "a float in (0, 1)", self.alpha)
        for name in ("n_resamples", "seed"):
            got = getattr(self, name)
            low = 1 if name == "n_resamples" else 0
            if isinstance(got, bool) or not isinstance(got, int) or got < low:
                raise bad(name, f"an int >= {low}", got)
        object.__setattr__(self, "compare", _pairs_of(self.compare))

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
                parts = self._across_groups(data, ds, values)
                for name, frame in parts.items():
                    tables[name].append(frame)
                test = parts["tests"].iloc[0]
                if test["test"] == NOT_APPLICABLE:
                    skipped.append(f"{ds}: group test {test['why']}")
                else:
                    figures.append(self._figure(ds, parts["groups"], test))
            rows, why = self._detectors(data, ds)
            if rows is None:
                skipped.append(f"{ds}: detector comparison: {why}")
            else:
                tables["detectors"].append(rows)
        frames = {
            k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in tables.items()
        }
        return self._result(
            self._finding(frames),
            tables=[StudyTable(k, frames[k], CAPTIONS[k].format(s=self)) for k in frames],
            figures=figures,
            skipped=skipped,
        )

    def _values(self, data: RunData, ds: str) -> tuple[pd.Series | None, str]:
        labelers, detectors = data.labelers_of(ds), data.detectors_of(ds)
        if self.value.startswith("hallucinated:"):
            key = self.value.split(":", 1)[1]
            if key in labelers:
                return data.verdicts(ds)[key], ""
            return None, f"no {key!r} labels"
        if self.value in detectors:
            return data.detector_scores(ds)[self.value], ""
        if self.value in labelers:
            scores = data.label_scores(ds)[self.value]
            if scores.notna().any():
                return scores, ""
            return None, f"{self.value!r} gives no score (use 'hallucinated:{self.value}')"
        return None, f"no detector or labeler {self.value!r}"

    def _across_groups(self, data: RunData, ds: str, values: pd.Series) -> dict[str, pd.DataFrame]:
        frame = data.frame(ds)
        groups = _groups(frame, self.group)
        result = compare_groups(
            values.to_numpy(dtype=float), groups.to_numpy(), frame["example_id"].to_numpy(),
            alpha=self.alpha, paired=self.paired,
        )  # fmt: skip
        key = {"dataset": ds, "value": self.value, "grouping": self.group}
        test = key | {
            "test": result.test, "statistic": result.statistic, "p_value": result.p_value,
            "significant": bool(result.p_value < self.alpha), "design": result.design,
            "n_groups": result.n_groups, "n_values": result.n_values,
            "n_blocks": result.n_blocks, "n_no_group": int(groups.isna().sum()),
            "n_no_value": int(values.isna().sum()),
            "why": result.why, "group_rule": RULES.get(self.group, ""),
        }  # fmt: skip
        described = self._describe(values, groups)
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

    def _describe(self, values: pd.Series, groups: pd.Series) -> pd.DataFrame:
        rows = []
        for name, part in values.groupby(groups.to_numpy()):
            x = part.dropna().to_numpy(dtype=float)
            if x.size and np.isin(x, (0.0, 1.0)).all():
                low, high = wilson_interval(int(x.sum()), x.size)
            elif x.size > 1 and np.ptp(x) > 0:
                half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
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

    def _detectors(self, data: RunData, ds: str) -> tuple[pd.DataFrame | None, str]:
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
        rows = [self._pair(ds, y, scores, a, b) for a, b in pairs]
        out = pd.DataFrame(rows)
        out["delong_p_bonferroni"] = (out["delong_p"] * len(out)).clip(upper=1.0)
        return out, ""

    def _pair(self, ds: str, y: pd.Series, scores: pd.DataFrame, a: str, b: str) -> dict[str, Any]:
        ok = y.notna() & scores[a].notna() & scores[b].notna()
        labels = y[ok].to_numpy(dtype=float)
        both = scores.loc[ok, [a, b]].to_numpy(dtype=float).T
        test = delong(labels, both)
        if test.note.startswith("fewer"):  # too few items in a class: no bootstrap either
            boot = PairedBootstrap(np.nan, np.nan, np.nan, np.nan, 0)
        else:
            boot = auroc_bootstrap(
                labels, both[0], both[1], n_resamples=self.n_resamples, seed=self.seed
            )
        return {
            "dataset": ds, "reference": self.reference, "detector_a": a, "detector_b": b,
            "n": int(ok.sum()), "n_positive": int(labels.sum()),
            "auroc_a": test.auroc[0], "auroc_b": test.auroc[1], "difference": boot.difference,
            "delong_z": test.z, "delong_p": test.p_value,
            "bootstrap_ci_low": boot.ci_low, "bootstrap_ci_high": boot.ci_high,
            "bootstrap_p": boot.p_value, "n_resamples": boot.n_resamples, "note": test.note,
        }  # fmt: skip

    def _figure(self, ds: str, groups: pd.DataFrame, test: pd.Series) -> StudyFigure:
        g = groups.sort_values("mean")
        low = g["mean"] - g["ci_low"].fillna(g["mean"])
        high = g["ci_high"].fillna(g["mean"]) - g["mean"]
        fig, ax = new_figure(6.5, 0.35 * len(g) + 1.5)
        ax.errorbar(g["mean"], range(len(g)), xerr=[low, high], fmt="o", capsize=3)
        ax.set_yticks(
            range(len(g)), [f"{n} (n={k})" for n, k in zip(g["group"], g["n"], strict=True)]
        )
        what = _describe_value(self.value)
        ax.set_xlabel(what[0].upper() + what[1:])
        ax.set_title(f"{ds}: by {self.group} (95% CI)")
        ax.grid(axis="x", alpha=0.3)
        caption = (
            f"{ds}: {what} per {self.group} group, with 95% CIs (Wilson for 0/1 values, t "
            f"otherwise); {test['test']}, {_fmt_p(test['p_value'])}."
        )
        stem = f"groups_{re.sub(r'[^A-Za-z0-9._=-]+', '_', ds)}"
        return StudyFigure(stem, png_bytes(fig), caption)

    def _finding(self, frames: dict[str, pd.DataFrame]) -> str:
        sentences = []
        tests, groups = frames["tests"], frames["groups"]
        ran = tests[tests["test"] != NOT_APPLICABLE] if len(tests) else tests
        for _, t in ran.head(3).iterrows():
            g = (
                groups[groups["dataset"] == t["dataset"]]
                .dropna(subset=["mean"])
                .sort_values("mean")
            )
            low, high = g.iloc[0], g.iloc[-1]
            verdict = "differs" if t["significant"] else "does not differ significantly"
            left = (
                f", {t['n_no_group']} responses without a group left out" if t["n_no_group"] else ""
            )
            blocks = (
                f" on the {t['n_blocks']} examples with a value for every group"
                if t["n_blocks"]
                else ""
            )
            test = f"{t['test']}{blocks}, {_fmt_p(t['p_value'])}{left}"
            sentences.append(
                f"On {t['dataset']}, {_describe_value(self.value)} {verdict} across "
                f"{t['n_groups']} {self.group} groups ({test}): "
                f"from {low['mean']:.2f} ({low['group']}) to {high['mean']:.2f} ({high['group']})."
            )
        if len(ran) > 3:
            sentences.append(f"{len(ran) - 3} more datasets are in the tests table.")
        if len(tests) and len(ran) < len(tests):
            na = tests[tests["test"] == NOT_APPLICABLE]
            sentences.append(
                f"No group test on {', '.join(na['dataset'])} (one group or no variation)."
            )
        det = frames["detectors"]
        if len(det):
            ds = det.groupby("dataset").size().idxmax()
            d = det[det["dataset"] == ds].sort_values("auroc_b", ascending=False)
            first = d.iloc[0]
            n_sig = int((d["delong_p_bonferroni"] < self.alpha).sum())
            sentences.append(
                f"On {ds}, {first['detector_a']} (AUROC {first['auroc_a']:.3f}) vs "
                f"{first['detector_b']} ({first['auroc_b']:.3f}): difference "
                f"{first['difference']:+.3f}, "
                f"DeLong {_fmt_p(first['delong_p'])}, paired-bootstrap 95% CI "
                f"[{first['bootstrap_ci_low']:+.3f}, {first['bootstrap_ci_high']:+.3f}]; "
                f"{n_sig} of {len(d)} comparisons are significant after Bonferroni."
            )
        return (
            " ".join(sentences) or "No dataset had the value, the groups or the detectors to test."
        )


def _describe_value(value: str) -> str:
    if value.startswith("hallucinated:"):
        return f"the hallucination rate under {value.split(':', 1)[1]} labels"
    return f"the mean of {value}"


CAPTIONS = {
    "tests": "One test per dataset: {s.value} across {s.group} groups; 'why' says which test "
    "was chosen and why (design, Shapiro-Wilk at alpha={s.alpha}, 0/1 values); p two-sided; "
    "group_rule says how derived groups were formed; n_no_group responses had no group.",
    "groups": "Per group: n, mean (a rate for 0/1 values) with a 95% CI (Wilson for 0/1 "
    "values, t otherwise), median and standard deviation, on every non-missing value.",
    "normality": "Shapiro-Wilk checks behind the choice (per group, or of the differences "
    "for two matched groups); normal = p >= alpha; n < 3 or constant values cannot be checked.",
    "posthoc": "Pairwise post-hoc comparisons; p_adjusted is Bonferroni-corrected or "
    "family-wise (Tukey HSD, Nemenyi); significant = p_adjusted < alpha.",
    "detectors": "AUROC of detector a vs b on the items both scored, against {s.reference}: "
    "DeLong's test (fast algorithm, Sun & Xu 2014) and a paired bootstrap of the difference "
    "a - b ({s.n_resamples} resamples; p = twice the smaller share of resamples on either "
    "side of 0, resolution 2/n_resamples); delong_p_bonferroni over the pairs of the dataset.",
}
